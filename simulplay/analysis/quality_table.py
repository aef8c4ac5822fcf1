"""The quality summary: per condition, what grouping changes in how the outputs sound.

Reads the interval table of ``simulplay quality`` (one row per panel, score and condition: each
condition's equal-talk mean, and each condition's Δ against the reference, labelled
``A − reference``) and keeps, for the scores of :data:`SUMMARY_METRICS`, one row per panel
(system, backend, realization), score and condition other than the reference: the reference's
mean, the condition's mean, Δ = condition − reference with its paired talk-bootstrap interval
and direction counts (talks with Δ < 0, Δ = 0 within the tie tolerance, and Δ > 0), as the η
table gives them. Nothing is recomputed: every number is the interval table's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

#: The scores the summary shows, in order, with what each is.
SUMMARY_METRICS = {
    "dnsmos_ovrl": "DNSMOS P.835 overall (MOS, 1–5)",
    "similarity_output": "speaker similarity, each request against its output's whole speech (cosine)",
    "joins_per_min": "request joins per minute of speech",
}
PANEL = ("system", "backend", "realization")
COLUMNS = ("metric", "condition", "n_talks", "reference_mean", "condition_mean", "delta", "n_negative", "n_zero",
           "n_positive", "ci_low", "ci_high", "n_talks_left_out")
PAIR = " − "


def quality_summary(intervals: pd.DataFrame, reference: str,
                    signatures: Sequence[Any] | None = None) -> tuple[pd.DataFrame, list[Any]]:
    """The summary rows (module docstring) of an interval table whose reference condition is
    ``reference``, and each row's signature (its Δ row's, from ``signatures``, one per row of
    ``intervals``; ``[]`` when not given). Panels with no Δ row of a score give no row."""
    sigs = list(signatures) if signatures is not None else [None] * len(intervals)
    df = intervals.reset_index(drop=True)
    panel = [c for c in PANEL if c in df]
    rows, out_sigs = [], []
    groups = df.groupby(panel, sort=False) if panel else [((), df)]
    for key, frame in groups:
        key = key if isinstance(key, tuple) else (key,)
        for metric in SUMMARY_METRICS:
            m = frame[frame["metric"] == metric]
            means = dict(zip(m["condition"], m["mean"]))
            for i, r in m.iterrows():
                cond, sep, ref = str(r["condition"]).partition(PAIR)
                if not sep or ref != reference:
                    continue
                rows.append({**dict(zip(panel, key)), "metric": metric, "condition": cond,
                             "n_talks": int(r["n_talks"]), "reference_mean": means.get(reference, float("nan")),
                             "condition_mean": means.get(cond, float("nan")), "delta": float(r["mean"]),
                             "n_negative": int(r["n_negative"]), "n_zero": _ties(r),
                             "n_positive": int(r["n_positive"]),
                             "ci_low": float(r["ci_low"]), "ci_high": float(r["ci_high"]),
                             "n_talks_left_out": int(r["n_talks_left_out"])})
                out_sigs.append(sigs[i])
    return pd.DataFrame(rows, columns=[*panel, *COLUMNS]), out_sigs if signatures is not None else []


def _ties(row: Any) -> int:
    """The row's ``n_zero``; for a table written before ties were counted, the talks neither
    below nor above zero."""
    if "n_zero" in row and pd.notna(row["n_zero"]):
        return int(row["n_zero"])
    return int(row["n_talks"]) - int(row["n_negative"]) - int(row["n_positive"])
