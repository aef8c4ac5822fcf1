"""The fitted clock: each request's service time predicted from the run's own requests.

A *modelled clock* (``--service fit``) replaces every measured service time by

    ŝ_j = max(0, b₀ + b₁ · audio_s_j + b₂ · chars_j)

where ``audio_s`` is the request's audio duration (seconds), ``chars`` the length of its
text in characters (Python ``len``, spaces and punctuation included), and b₀ (seconds),
b₁ (seconds per second of audio) and b₂ (seconds per character) are fitted by least
absolute deviations (median regression: minimize Σ |s_j − b₀ − b₁ a_j − b₂ c_j|), solved
exactly as a linear program (its dual) with SciPy's HiGHS. One fit per panel (backend and
realization, when the manifest has those columns), over every replayed request with a
measured ``service_s``; a term whose regressor is constant in the panel is left out (its
coefficient is 0), and a manifest without ``text`` is fitted on audio alone. Least absolute
deviations ignores how far an outlier lies (a request timed while the machine was busy
moves the fit no more than one slightly slow request), so per-request noise is removed
while the backend's cost structure (a cost per request, per second of audio, per
character) stays. Predictions below zero are clipped to zero.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from simulplay.core.errors import InputError, SimulplayError

#: The coefficients, in the order of the design matrix's columns.
TERMS = ("intercept_s", "per_audio_s", "per_char_s")
PANEL_COLUMNS = ("backend", "realization")


@dataclass(frozen=True)
class ServiceFit:
    """One panel's fit: coefficients by term (0 for a term left out), the terms fitted, the
    number of requests and the summed absolute residual (seconds)."""

    panel: tuple[tuple[str, str], ...]  # (column, value) pairs: backend, realization
    coef: tuple[float, float, float]  # intercept (s), s per audio second, s per character
    fitted: tuple[str, ...]  # the terms with a free coefficient
    n: int
    abs_residual_s: float

    def predict(self, audio_s: np.ndarray, chars: np.ndarray) -> np.ndarray:
        """Predicted service seconds, clipped at zero."""
        b0, b1, b2 = self.coef
        return np.maximum(0.0, b0 + b1 * np.asarray(audio_s, float) + b2 * np.asarray(chars, float))

    def describe(self) -> str:
        """What signatures record: ``modelled clock: LAD on N requests, service_s = …``."""
        b0, b1, b2 = self.coef
        text = f"{b0:.6g} s + {b1:.6g}·audio_s"
        text += f" + {b2:.6g} s·chars" if "per_char_s" in self.fitted else " (chars not fitted)"
        return f"modelled clock: LAD on {self.n} requests, service_s = {text}"


def lad(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    """Least absolute deviations: ``b`` minimizing Σ |y − x b| and that sum. Solved (HiGHS)
    as the dual linear program max yᵀd subject to xᵀd = 0, −1 ≤ d ≤ 1, whose equality
    constraints' dual values are ``b``: p constraints instead of the primal's n, so a run
    of tens of thousands of requests fits in seconds."""
    from scipy.optimize import linprog  # here: importing SciPy's optimizer would cost every replay's start-up

    n, p = x.shape
    res = linprog(-np.asarray(y, float), A_eq=x.T, b_eq=np.zeros(p), bounds=(-1, 1), method="highs")
    if res.status != 0:
        raise SimulplayError(f"the least-absolute-deviations fit did not solve: {res.message}")
    beta = -np.asarray(res.eqlin.marginals, float)
    return beta, float(np.abs(y - x @ beta).sum())


def text_chars(manifest: pd.DataFrame) -> np.ndarray:
    """Characters of each request's text (zeros when the manifest has no ``text``)."""
    if "text" not in manifest:
        return np.zeros(len(manifest))
    return manifest["text"].fillna("").astype(str).str.len().to_numpy(float)


def fit_panel(audio_s: np.ndarray, chars: np.ndarray, service_s: np.ndarray,
              panel: tuple[tuple[str, str], ...] = ()) -> ServiceFit:
    """The LAD fit of ``service_s`` (seconds) on an intercept, ``audio_s`` (seconds) and
    ``chars`` (characters; module docstring); a regressor constant over the rows is left out."""
    columns, fitted = [np.ones(len(service_s))], ["intercept_s"]
    for term, values in (("per_audio_s", audio_s), ("per_char_s", chars)):
        if len(values) and np.ptp(values) > 0:
            columns.append(values)
            fitted.append(term)
    beta, objective = lad(np.column_stack(columns), np.asarray(service_s, float))
    coef = dict(zip(fitted, beta.tolist()))
    return ServiceFit(panel, tuple(float(coef.get(t, 0.0)) for t in TERMS), tuple(fitted), len(service_s), objective)


def fit_service(manifest: pd.DataFrame, source: str) -> tuple[list[ServiceFit], np.ndarray, np.ndarray]:
    """One fit per panel of a validated manifest; returns the fits, each row's panel number
    (an index into the fits) and each row's predicted service seconds."""
    keys = [k for k in PANEL_COLUMNS if k in manifest]
    chars = text_chars(manifest)
    audio = manifest["audio_s"].to_numpy(float)
    service = manifest["service_s"].to_numpy(float)
    codes = manifest.groupby(keys, sort=False).ngroup().to_numpy() if keys else np.zeros(len(manifest), int)
    fits, predicted = [], np.zeros(len(manifest))
    for code in range(int(codes.max()) + 1 if len(codes) else 0):
        rows = codes == code
        first = manifest.loc[rows].iloc[0]
        panel = tuple((k, str(first[k])) for k in keys)
        usable = rows & np.isfinite(service) & np.isfinite(audio)
        if usable.sum() < len(TERMS):
            where = " in panel " + ", ".join(f"{k}={v}" for k, v in panel) if panel else ""
            raise InputError.at(source, f"service model 'fit' has {int(usable.sum())} request(s) with a measured "
                                f"service time{where}", field="service_s",
                                accepted="at least 3 requests with service_s per backend and realization")
        fit = fit_panel(audio[usable], chars[usable], service[usable], panel)
        fits.append(fit)
        predicted[rows] = fit.predict(audio[rows], chars[rows])
    return fits, codes, predicted
