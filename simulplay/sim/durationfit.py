"""The duration model: each request's audio seconds predicted from its text (a modelled
duration, never a measurement).

    â_j = b₀ + b_chars·chars_j + b_words·words_j + b_punct·punct_j + b_final·final_j
          + b_phonemes·phonemes_j                      (clipped at 0 s)

``chars`` is the request text's length (Python ``len``, spaces and punctuation
included), ``words`` its whitespace words, ``punct`` its punctuation marks (Unicode
categories P*), ``final`` 1 when it ends a sentence
(:func:`~simulplay.traces.model.ends_terminal`), and ``phonemes`` the phonemes the
backend's own phonemizer gives its update texts (Piper; summed over the request's
updates; left out for a backend without one). Every feature but ``phonemes`` is exactly
the value of the joined request text (:mod:`simulplay.grouping.vectorized`), computed
from running sums over the updates, so a request of any grouping costs no text work.

The coefficients are fitted by least squares (the mean, not the median: a talk's end
depends on the *sum* of its durations), made robust by trimming: after each fit the
requests whose residual exceeds :data:`TRIM` robust standard deviations (1.4826 × the
median absolute residual) are left out and the fit is repeated, until nothing more is
left out (at most :data:`MAX_ROUNDS` rounds). A term whose feature is constant over the
requests is left out (coefficient 0). One fit per panel (backend and realization).

A sweep regroups streams the run synthesized, so each stream's own speaking rate is
known: every prediction of a stream (``talk_id|system``) is multiplied by its *rate*,
Σ a / Σ â over the stream's training requests (a talk read faster or slower than the
panel's average, whatever the grouping).

Its own error is measured by holding out: k folds of talks (a held-out talk's streams
have no rate: the error on a talk never synthesized) and, with two training conditions or
more, each condition in turn (the error on a new grouping of known streams, what a sweep
predicts). Each gives the median absolute error per request (s) and the median relative
error of each output's summed audio; both go into the signature with the coefficients.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from simulplay.errors import SimulplayError
from simulplay.grouping.vectorized import Groups, UpdateTable

#: The model's terms, in the order of the design matrix.
FEATURES = ("intercept", "chars", "words", "punct", "final", "phonemes")
TRIM = 4.0  # robust standard deviations beyond which a request is left out of the fit
MAX_ROUNDS = 5


@dataclass(frozen=True)
class UpdateCounts:
    """Running sums over a table's updates for the request features: text length, glued
    updates, punctuation marks and (optional) phonemes."""

    length: np.ndarray
    glued: np.ndarray
    punct: np.ndarray
    phonemes: np.ndarray | None


def _running(values) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(np.asarray(values, dtype=np.int64))])


def update_counts(table: UpdateTable, phonemes: Sequence[int] | None = None) -> UpdateCounts:
    """The running sums of ``table`` (``phonemes``: one count per update, or None)."""
    texts = [t for s in table.streams for t in s.texts]
    glue = np.concatenate([s.glue for s in table.streams]) if table.streams else np.zeros(0, bool)
    punct = [sum(unicodedata.category(c)[0] == "P" for c in t) for t in texts]
    return UpdateCounts(_running([len(t) for t in texts]), _running(glue), _running(punct),
                        None if phonemes is None else _running(phonemes))


def request_features(table: UpdateTable, counts: UpdateCounts, groups: Groups) -> dict[str, np.ndarray]:
    """The features of each group's request (one array per term of :data:`FEATURES`;
    ``phonemes`` only when the counts have them)."""
    a, b = groups.first, groups.last
    n = b - a + 1
    joins = (n - 1) - (counts.glued[b + 1] - counts.glued[a + 1])  # spaces the join adds
    lo = table.last_opaque[b]
    out = {
        "intercept": np.ones(len(a)),
        "chars": (counts.length[b + 1] - counts.length[a] + joins).astype(float),
        "words": (table.words[b] - table.words[a] + table.word_u[a]).astype(float),
        "punct": (counts.punct[b + 1] - counts.punct[a]).astype(float),
        "final": ((lo >= a) & table.terminal[np.maximum(lo, 0)]).astype(float),
    }
    if counts.phonemes is not None:
        out["phonemes"] = (counts.phonemes[b + 1] - counts.phonemes[a]).astype(float)
    return out


def trimmed_least_squares(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Least squares with trimming (module docstring): the coefficients and which rows the
    last fit kept."""
    keep = np.ones(len(y), bool)
    beta = np.zeros(x.shape[1])
    for _ in range(MAX_ROUNDS):
        beta = np.linalg.lstsq(x[keep], y[keep], rcond=None)[0]
        resid = y - x @ beta
        scale = 1.4826 * float(np.median(np.abs(resid[keep])))
        if scale <= 0:
            break
        new = np.abs(resid) <= TRIM * scale
        if np.array_equal(new, keep) or new.sum() <= x.shape[1]:
            break
        keep = new
    return beta, keep


@dataclass(frozen=True)
class HeldOut:
    """A cross-validation of the model: what was held out (``talks``: k folds of talks;
    ``conditions``: one training condition at a time), how many folds, the median absolute
    error per held-out request (seconds) and the median relative error of each held-out
    output's summed audio."""

    over: str
    folds: int
    abs_error_s: float
    sum_error: float

    def describe(self) -> str:
        """``k-fold over talks: median |error| … s per request, … % per output's audio``."""
        return (f"{self.folds}-fold over {self.over}: median |error| {self.abs_error_s:.3f} s per request, "
                f"{100 * self.sum_error:.2f} % per output's audio")


@dataclass(frozen=True)
class DurationFit:
    """One panel's duration model: coefficients by term (0 for a term left out, seconds
    per unit), the terms fitted, requests used and left out, each stream's rate (its
    measured over its modelled audio on the training requests; streams named
    ``talk_id|system``) and the cross-validations."""

    panel: tuple[tuple[str, str], ...]
    coef: tuple[float, ...]  # one per FEATURES term
    fitted: tuple[str, ...]
    n: int
    trimmed: int
    streams: tuple[str, ...] = ()
    rates: tuple[float, ...] = ()
    held_out: tuple[HeldOut, ...] = ()

    def predict(self, features: dict[str, np.ndarray], streams: np.ndarray | None = None) -> np.ndarray:
        """Predicted audio seconds, clipped at 0: the linear model times each row's stream
        rate (``streams``: one ``talk_id|system`` per row; 1 for a stream not fitted)."""
        total = np.zeros(len(features["intercept"]))
        for term, c in zip(FEATURES, self.coef):
            if c:
                total += c * features[term]
        if streams is not None and self.streams:
            rate = dict(zip(self.streams, self.rates))
            total = total * np.array([rate.get(k, 1.0) for k in streams], float)
        return np.maximum(total, 0.0)

    def describe(self) -> str:
        """``modelled durations: trimmed least squares on N requests …, audio_s = …``."""
        terms = " + ".join(f"{c:.5g}" + ("" if t == "intercept" else f"·{t}")
                           for t, c in zip(FEATURES, self.coef) if t in self.fitted)
        rates = (f" × stream rate ({min(self.rates):.3f}–{max(self.rates):.3f} over {len(self.rates)} streams)"
                 if self.rates else "")
        cv = "".join(f"; {h.describe()}" for h in self.held_out)
        return (f"modelled durations: trimmed least squares on {self.n} requests ({self.trimmed} left out), "
                f"audio_s = ({terms}){rates}{cv}")

    def coefficients(self) -> dict[str, float]:
        """``{term: coefficient}`` for every term (0 when left out)."""
        return dict(zip(FEATURES, self.coef))


def fit_durations(features: dict[str, np.ndarray], audio_s: np.ndarray,
                  panel: tuple[tuple[str, str], ...] = (), streams: np.ndarray | None = None) -> DurationFit:
    """The trimmed least-squares fit of ``audio_s`` (seconds) on the features, and with
    ``streams`` (one ``talk_id|system`` per row) each stream's rate Σ a / Σ â."""
    terms = [t for t in FEATURES if t in features and (t == "intercept" or np.ptp(features[t]) > 0)]
    y = np.asarray(audio_s, float)
    if len(y) < len(terms) + 1:
        where = " in panel " + ", ".join(f"{k}={v}" for k, v in panel) if panel else ""
        raise SimulplayError(f"the duration model needs more than {len(terms)} requests with audio{where}, "
                             f"got {len(y)}")
    x = np.column_stack([features[t] for t in terms])
    beta, keep = trimmed_least_squares(x, y)
    coef = dict(zip(terms, beta.tolist()))
    fit = DurationFit(panel, tuple(float(coef.get(t, 0.0)) for t in FEATURES), tuple(terms), len(y),
                      int((~keep).sum()))
    if streams is None:
        return fit
    names, codes = np.unique(np.asarray(streams), return_inverse=True)
    measured, modelled = np.bincount(codes, y), np.bincount(codes, fit.predict(features))
    rates = np.divide(measured, modelled, out=np.ones(len(names)), where=modelled > 0)
    return replace(fit, streams=tuple(str(n) for n in names), rates=tuple(float(r) for r in rates))


def _held_out(over: str, folds: list[np.ndarray], features: dict[str, np.ndarray], y: np.ndarray,
              streams: np.ndarray, outputs: np.ndarray, panel) -> HeldOut:
    pred = np.full(len(y), np.nan)
    for held in folds:
        part = fit_durations({t: v[~held] for t, v in features.items()}, y[~held], panel, streams[~held])
        pred[held] = part.predict({t: v[held] for t, v in features.items()}, streams[held])
    codes = np.unique(outputs, return_inverse=True)[1]
    sums, sums_hat = np.bincount(codes, y), np.bincount(codes, pred)
    rel = np.abs(sums_hat - sums) / np.where(sums > 0, sums, np.nan)
    return HeldOut(over, len(folds), float(np.median(np.abs(pred - y))), float(np.nanmedian(rel)))


def cross_validate(fit: DurationFit, features: dict[str, np.ndarray], audio_s: np.ndarray, *, talks: np.ndarray,
                   streams: np.ndarray, conditions: np.ndarray, outputs: np.ndarray, folds: int = 5) -> DurationFit:
    """``fit`` with its held-out errors (``audio_s`` in seconds, one per request): k-fold
    over talks (``min(folds, talks)`` folds, talks in sorted order dealt round-robin; a
    held-out talk's streams have no rate, so this is the error on a talk never
    synthesized) and, with two training conditions or more, over conditions (each held
    out in turn: the error on a new grouping of the streams, which is what a sweep
    predicts)."""
    y = np.asarray(audio_s, float)
    names = np.unique(talks)
    k = min(folds, len(names))
    found = []
    if k >= 2:
        found.append(_held_out("talks", [np.isin(talks, names[f::k]) for f in range(k)], features, y, streams,
                               outputs, fit.panel))
    conds = np.unique(conditions)
    if len(conds) >= 2:
        found.append(_held_out("conditions", [conditions == c for c in conds], features, y, streams, outputs,
                               fit.panel))
    return replace(fit, held_out=tuple(found))
