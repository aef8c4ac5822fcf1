"""The duration model: each request's audio seconds predicted from its text (a modelled
duration, never a measurement).

With a backend that has its own phonemizer (Piper), a request's audio is modelled from
what the voice model reads: the request's joined text phonemized exactly as the backend
will phonemize it, one term per phoneme symbol and one per sentence::

    â_j = b₀ + b_sentences·sentences_j + Σ_p b_p·n_p,j          (clipped at 0 s)

``n_p,j`` is how often symbol ``p`` (a phoneme, stress mark, space or punctuation mark of
the phonemizer's output) occurs in request j's phonemes and ``sentences_j`` how many
sentences the backend splits it into (each is synthesized separately, with its own
start and end). Each distinct request text is phonemized once (a sweep's grid points
share most of their requests). Without a phonemizer, the text itself::

    â_j = b₀ + b_chars·chars_j + b_words·words_j + b_punct·punct_j + b_final·final_j

``chars`` is the request text's length (Python ``len``, spaces and punctuation
included), ``words`` its whitespace words, ``punct`` its punctuation marks (Unicode
categories P*) and ``final`` 1 when it ends a sentence
(:func:`~simulplay.traces.model.ends_terminal`): each exactly the value of the joined
request text (:mod:`simulplay.grouping.vectorized`), computed from running sums over the
updates, so a request of any grouping costs no text work.

Why the phonemes, measured on the demo (Piper, ``durations=fixed``, trained on
``immediate`` and ``timer:w=2``): on the held-out requests longer than 3 s the text
features miss by 0.20 s in the median, the phoneme terms by 0.08 s; a talk's end offset
is the sum of its last requests, so that is what the modelled η per talk depends on.

The coefficients are fitted by least squares (the mean, not the median: a talk's end
depends on the *sum* of its durations), made robust by trimming: after each fit the
requests whose residual exceeds :data:`TRIM` robust standard deviations (1.4826 × the
median absolute residual) are left out and the fit is repeated, until nothing more is
left out (at most :data:`MAX_ROUNDS` rounds). A term whose feature is constant over the
requests is left out (coefficient 0). One fit per panel (backend and realization).

A sweep regroups streams the run synthesized, so each stream's own speaking rate is
known: every prediction of a stream (``talk_id|system``) is multiplied by its *rate*,
Σ a / Σ â over the stream's training requests (a talk read faster or slower than the
panel's average, whatever the grouping), before the anchoring below.

What the terms cannot say about a stretch of text (Piper reads some words longer than
their phonemes' average), the run's own requests can: every training request's residual
(measured minus modelled, after the stream rate) is spread over the updates it holds in
proportion to their characters (+1 each), averaged over the training conditions that
hold each update, and a request of any grouping adds the residual of the updates it
holds (one running sum: no text work). A request over updates no training request held
(a talk never synthesized) gets no correction. On the demo this halves the held-out
conditions' η error (``docs/sweeps.md``).

Its own error is measured by holding out: k folds of talks (a held-out talk's streams
have no rate: the error on a talk never synthesized) and, with two training conditions or
more, each condition in turn (the error on a new grouping of known streams, what a sweep
predicts). Each gives the median absolute error per request (s) and the median relative
error of each output's summed audio; both go into the signature with the coefficients.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import numpy as np

from simulplay.core.errors import SimulplayError
from simulplay.durationmodel.features import (  # noqa: F401  (the features are part of this module's interface)
    FEATURES,
    PHONEME_PREFIX,
    Features,
    Phonemizer,
    Spans,
    UpdateCounts,
    request_features,
    take,
    update_counts,
)

#: The phoneme terms are fitted only with at least this many training requests per term
#: (otherwise the text terms are, and the model says why).
PER_TERM = 8
TRIM = 4.0  # robust standard deviations beyond which a request is left out of the fit
MAX_ROUNDS = 5


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
    """One panel's duration model: the terms offered (``terms``) and their coefficients
    (seconds per unit; 0 for a term left out), the terms fitted, requests used and left
    out, each stream's rate (its measured over its modelled audio on the training
    requests; streams named ``talk_id|system``) and the cross-validations."""

    panel: tuple[tuple[str, str], ...]
    terms: tuple[str, ...]
    coef: tuple[float, ...]  # one per term
    fitted: tuple[str, ...]
    n: int
    trimmed: int
    streams: tuple[str, ...] = ()
    rates: tuple[float, ...] = ()
    held_out: tuple[HeldOut, ...] = ()
    #: The anchoring's running sum over the updates (seconds; None: not anchored) and
    #: how many training conditions it averages.
    anchor: np.ndarray | None = field(default=None, compare=False, repr=False)
    anchored_conditions: int = 0
    note: str = ""  # why the text terms were fitted where phonemes were offered

    @property
    def phonemes(self) -> bool:
        """Whether the model's terms are phonemes (else the text's counts)."""
        return "sentences" in self.terms

    def predict(self, features: Mapping[str, np.ndarray], streams: np.ndarray | None = None,
                spans: Spans | None = None) -> np.ndarray:
        """Predicted audio seconds, clipped at 0: the linear model times each row's stream
        rate (``streams``: one ``talk_id|system`` per row; 1 for a stream not fitted), plus
        the anchored residual of each row's updates (``spans``; none without). A phoneme
        term the requests do not hold counts 0 for them."""
        total = np.zeros(len(features["intercept"]))
        for term, c in zip(self.terms, self.coef):
            if c and term in features:
                total += c * features[term]
        if streams is not None and self.streams:
            rate = dict(zip(self.streams, self.rates))
            total = total * np.array([rate.get(k, 1.0) for k in streams], float)
        if spans is not None and self.anchor is not None:
            first, last = spans
            total = total + self.anchor[last + 1] - self.anchor[first]
        return np.maximum(total, 0.0)

    def describe(self) -> str:
        """``modelled durations: trimmed least squares on N requests …, audio_s = …``; the
        phoneme terms summarised by their count, range and the digest of every
        coefficient (each is in ``sweep_models.csv``)."""
        shown = [(t, c) for t, c in zip(self.terms, self.coef) if t in self.fitted and not t.startswith(PHONEME_PREFIX)]
        terms = " + ".join(f"{c:.5g}" + ("" if t == "intercept" else f"·{t}") for t, c in shown)
        phon = [c for t, c in zip(self.terms, self.coef) if t in self.fitted and t.startswith(PHONEME_PREFIX)]
        if phon:
            terms += (f" + Σ b_p·n_p over {len(phon)} phoneme symbols (b_p {min(phon):.4g}…{max(phon):.4g} s; "
                      f"coefficients sha256:{self.digest()})")
        rates = (f" × stream rate ({min(self.rates):.3f}–{max(self.rates):.3f} over {len(self.rates)} streams)"
                 if self.rates else "")
        anchor = (f" + the residual of its updates (anchored on {self.anchored_conditions} training condition(s))"
                  if self.anchor is not None else "")
        cv = "".join(f"; {h.describe()}" for h in self.held_out)
        note = f" ({self.note})" if self.note else ""
        return (f"modelled durations: trimmed least squares on {self.n} requests ({self.trimmed} left out), "
                f"audio_s = ({terms}){rates}{anchor}{note}{cv}")

    def digest(self) -> str:
        """The first 12 hex digits of the SHA-256 of every term and coefficient (``repr``)."""
        text = ";".join(f"{t}={c!r}" for t, c in zip(self.terms, self.coef))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]

    def coefficients(self) -> dict[str, float]:
        """``{term: coefficient}`` for every term offered (0 when left out)."""
        return dict(zip(self.terms, self.coef))


def fit_durations(features: Mapping[str, np.ndarray], audio_s: np.ndarray,
                  panel: tuple[tuple[str, str], ...] = (), streams: np.ndarray | None = None, *,
                  spans: Spans | None = None, weights: np.ndarray | None = None,
                  conditions: np.ndarray | None = None) -> DurationFit:
    """The trimmed least-squares fit of ``audio_s`` (seconds) on the features (every term
    of ``features``; one constant over the requests is left out, the intercept kept), with
    ``streams`` (one ``talk_id|system`` per row) each stream's rate Σ a / Σ â, and with
    ``spans`` (each row's first and last update), ``weights`` (one per update of the
    table) and ``conditions`` (one per row) the anchoring (module docstring)."""
    offered = tuple(features)
    terms = [t for t in offered if t == "intercept" or np.ptp(features[t]) > 0]
    y = np.asarray(audio_s, float)
    if len(y) < len(terms) + 1:
        where = " in panel " + ", ".join(f"{k}={v}" for k, v in panel) if panel else ""
        raise SimulplayError(f"the duration model needs more than {len(terms)} requests with audio{where}, "
                             f"got {len(y)}")
    x = np.column_stack([features[t] for t in terms])
    beta, keep = trimmed_least_squares(x, y)
    coef = dict(zip(terms, beta.tolist()))
    fit = DurationFit(panel, offered, tuple(float(coef.get(t, 0.0)) for t in offered), tuple(terms), len(y),
                      int((~keep).sum()))
    if streams is not None:
        names, codes = np.unique(np.asarray(streams), return_inverse=True)
        measured, modelled = np.bincount(codes, y), np.bincount(codes, fit.predict(features))
        rates = np.divide(measured, modelled, out=np.ones(len(names)), where=modelled > 0)
        fit = replace(fit, streams=tuple(str(n) for n in names), rates=tuple(float(r) for r in rates))
    if spans is None or weights is None:
        return fit
    residual = y - fit.predict(features, streams)
    conds = np.zeros(len(y), np.int64) if conditions is None else np.unique(conditions, return_inverse=True)[1]
    return replace(fit, anchor=anchor_residuals(spans, residual, weights, conds),
                   anchored_conditions=int(conds.max(initial=-1)) + 1)


def phoneme_terms_fit(features: Mapping[str, np.ndarray], n: int) -> str:
    """'' when ``n`` requests can fit the phoneme terms of ``features`` (at least
    :data:`PER_TERM` per term that varies), else why not (one phrase)."""
    terms = sum(1 for t in features if t == "intercept" or np.ptp(features[t]) > 0)
    if n >= PER_TERM * terms:
        return ""
    return (f"text terms: {n} training requests are fewer than {PER_TERM} per phoneme term "
            f"({terms} terms)")


def anchor_residuals(spans: Spans, residual: np.ndarray, weights: np.ndarray, conditions: np.ndarray) -> np.ndarray:
    """The running sum over the updates of the residual density: each request's residual
    (seconds) spread over its updates in proportion to ``weights``, summed per update
    and divided by how many conditions hold the update (module docstring)."""
    first, last = (np.asarray(x, np.int64) for x in spans)
    n = last - first + 1
    starts = np.cumsum(n) - n
    upd = np.repeat(first, n) + (np.arange(int(n.sum())) - np.repeat(starts, n))
    w = weights[upd]
    total = np.add.reduceat(w, starts) if len(n) else np.zeros(0)
    density = np.zeros(len(weights))
    np.add.at(density, upd, np.repeat(residual, n) * w / np.repeat(total, n))
    held = np.zeros(len(weights))
    np.add.at(held, upd, 1.0)  # each condition holds an update once
    density = np.divide(density, held, out=np.zeros_like(density), where=held > 0)
    return np.r_[0.0, np.cumsum(density)]


def _held_out(over: str, folds: list[np.ndarray], features: Mapping[str, np.ndarray], y: np.ndarray,
              streams: np.ndarray, outputs: np.ndarray, panel, spans: Spans | None, weights: np.ndarray | None,
              conditions: np.ndarray) -> HeldOut:
    pred = np.full(len(y), np.nan)
    for held in folds:
        train = ~held
        part = fit_durations(take(features, train), y[train], panel, streams[train],
                             spans=None if spans is None else (spans[0][train], spans[1][train]), weights=weights,
                             conditions=conditions[train])
        pred[held] = part.predict(take(features, held), streams[held],
                                  None if spans is None else (spans[0][held], spans[1][held]))
    codes = np.unique(outputs, return_inverse=True)[1]
    sums, sums_hat = np.bincount(codes, y), np.bincount(codes, pred)
    rel = np.abs(sums_hat - sums) / np.where(sums > 0, sums, np.nan)
    return HeldOut(over, len(folds), float(np.median(np.abs(pred - y))), float(np.nanmedian(rel)))


def cross_validate(fit: DurationFit, features: Mapping[str, np.ndarray], audio_s: np.ndarray, *, talks: np.ndarray,
                   streams: np.ndarray, conditions: np.ndarray, outputs: np.ndarray, folds: int = 5,
                   spans: Spans | None = None, weights: np.ndarray | None = None) -> DurationFit:
    """``fit`` with its held-out errors (``audio_s`` in seconds, one per request): k-fold
    over talks (``min(folds, talks)`` folds, talks in sorted order dealt round-robin; a
    held-out talk's streams have no rate, so this is the error on a talk never
    synthesized) and, with two training conditions or more, over conditions (each held
    out in turn: the error on a new grouping of the streams, which is what a sweep
    predicts). With ``spans`` and ``weights`` each fold's model is anchored on its own
    training requests, as the full model is."""
    y = np.asarray(audio_s, float)
    names = np.unique(talks)
    k = min(folds, len(names))
    found = []
    if k >= 2:
        found.append(_held_out("talks", [np.isin(talks, names[f::k]) for f in range(k)], features, y, streams,
                               outputs, fit.panel, spans, weights, conditions))
    conds = np.unique(conditions)
    if len(conds) >= 2:
        found.append(_held_out("conditions", [conditions == c for c in conds], features, y, streams, outputs,
                               fit.panel, spans, weights, conditions))
    return replace(fit, held_out=tuple(found))
