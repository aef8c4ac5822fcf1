"""Repeated realizations, talk by talk (Truong & Le (2026), Appendix C.4): each talk's η in every
realization, its sample standard deviation across them, and per condition the median
and maximum of those standard deviations and the talk with the largest range.

Each realization is its own η panel (never pooled); these tables put the panels side
by side. :func:`talk_spread` has one row per (backend, threshold, condition, talk):
``eta_s[r=R]`` for each realization R, then over the realizations the talk has
``n_realizations``, ``eta_mean_s``, ``eta_min_s``, ``eta_max_s``, ``eta_range_s``
(max − min) and ``eta_sd_s`` (sample standard deviation, ddof 1; empty with one
realization). :func:`talk_sd_summary` has one row per (backend, threshold, condition):
``n_talks``, ``n_realizations`` (most any talk has), ``median_talk_sd_s``,
``max_talk_sd_s`` and its talk ``max_sd_talk``, and the talk with the largest range,
``widest_talk``, with its ``widest_low_s`` … ``widest_high_s`` and ``widest_range_s``
(ties: the first talk in sorted order). All values are seconds of η.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from simulplay.analysis.eta import EtaResult
from simulplay.core.signature import merge

#: Panel keys kept apart (the realization is what the tables spread over).
KEEP_APART = ("backend", "threshold")
SPREAD_STATS = ("n_realizations", "eta_mean_s", "eta_min_s", "eta_max_s", "eta_range_s", "eta_sd_s")
SUMMARY_COLUMNS = ("n_talks", "n_realizations", "median_talk_sd_s", "max_talk_sd_s", "max_sd_talk",
                   "widest_talk", "widest_low_s", "widest_high_s", "widest_range_s")


def realization_column(r: Any) -> str:
    """The column of realization ``r``'s η in :func:`talk_spread`: ``eta_s[r=0]``."""
    return f"eta_s[r={r}]"


def has_realizations(per_talk: pd.DataFrame) -> bool:
    """Whether a per-talk η table holds two realizations or more."""
    return "realization" in per_talk and per_talk["realization"].nunique() >= 2


def talk_spread(per_talk: pd.DataFrame, signatures: Sequence[dict[str, Any]] | None = None
                ) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """Each talk's η across realizations (module docstring) from a per-talk η table
    (``EtaResult.per_talk``: panel keys, ``talk_id``, ``condition``, ``eta_s``); empty
    when it has fewer than two realizations. ``signatures`` (one per per-talk row) give the
    rows' signatures: the first of each group's, without ``realization``, with
    ``table: eta-talk-spread`` and the number of realizations."""
    keys = [k for k in KEEP_APART if k in per_talk]
    if not has_realizations(per_talk):
        return pd.DataFrame(columns=[*keys, "condition", "talk_id", *SPREAD_STATS]), []
    pt = per_talk.assign(_i=range(len(per_talk)), realization=per_talk["realization"].astype(str))
    reals = sorted(pt["realization"].unique(), key=_realization_order)
    wide = pt.pivot_table(index=[*keys, "condition", "talk_id"], columns="realization", values="eta_s",
                          aggfunc="first", sort=False)
    wide = wide.reindex(columns=reals)
    stats = {"n_realizations": wide.count(axis=1), "eta_mean_s": wide.mean(axis=1), "eta_min_s": wide.min(axis=1),
             "eta_max_s": wide.max(axis=1), "eta_sd_s": wide.std(axis=1, ddof=1)}  # NaN below 2 values
    stats["eta_range_s"] = stats["eta_max_s"] - stats["eta_min_s"]
    out = wide.rename(columns={r: realization_column(r) for r in reals}).reset_index()
    out.columns.name = None
    for col in SPREAD_STATS:
        out[col] = stats[col].to_numpy()
    first = pt.groupby([*keys, "condition", "talk_id"], sort=False)["_i"].first()
    sigs = [_signature(signatures, int(first.loc[tuple(row)]), "eta-talk-spread", len(reals))
            for row in out[[*keys, "condition", "talk_id"]].itertuples(index=False)]
    return out, sigs


def talk_sd_summary(spread: pd.DataFrame, signatures: Sequence[dict[str, Any]] | None = None
                    ) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """Per (backend, threshold, condition) of a :func:`talk_spread` table: the median and
    maximum of the per-talk standard deviations and the talk with the largest range."""
    keys = [k for k in KEEP_APART if k in spread]
    if spread.empty:
        return pd.DataFrame(columns=[*keys, "condition", *SUMMARY_COLUMNS]), []
    rows, sigs = [], []
    for _, g in spread.assign(_i=range(len(spread))).groupby([*keys, "condition"], sort=False):
        g = g.sort_values("talk_id", kind="stable")
        sd = g["eta_sd_s"].to_numpy(float)
        has_sd = ~np.isnan(sd)
        top = g.iloc[int(np.nanargmax(sd))] if has_sd.any() else None
        wide = g.iloc[int(np.argmax(g["eta_range_s"].to_numpy(float)))]
        rows.append({**{k: g[k].iloc[0] for k in keys}, "condition": g["condition"].iloc[0],
                     "n_talks": len(g), "n_realizations": int(g["n_realizations"].max()),
                     "median_talk_sd_s": float(np.median(sd[has_sd])) if has_sd.any() else np.nan,
                     "max_talk_sd_s": float(sd[has_sd].max()) if has_sd.any() else np.nan,
                     "max_sd_talk": None if top is None else top["talk_id"],
                     "widest_talk": wide["talk_id"], "widest_low_s": float(wide["eta_min_s"]),
                     "widest_high_s": float(wide["eta_max_s"]), "widest_range_s": float(wide["eta_range_s"])})
        base = signatures[int(g["_i"].iloc[0])] if signatures else {}
        sigs.append(merge(base, {"table": "eta-talk-sd"}))
    return pd.DataFrame(rows, columns=[*keys, "condition", *SUMMARY_COLUMNS]), sigs


def _signature(signatures: Sequence[dict[str, Any]] | None, i: int, table: str, n: int) -> dict[str, Any]:
    base = {k: v for k, v in (signatures[i] if signatures else {}).items() if k != "realization"}
    return merge(base, {"table": table, "realizations": n})


def _realization_order(r: str) -> tuple:
    """Realizations in numeric order when they are numbers (``10`` after ``9``)."""
    return (0, int(r), "") if r.lstrip("-").isdigit() else (1, 0, r)



@dataclass
class RealizationTables:
    """The per-talk spread (:func:`talk_spread`) and its summary (:func:`talk_sd_summary`),
    each with one signature per row."""

    spread: pd.DataFrame
    spread_signatures: list[dict[str, Any]]
    summary: pd.DataFrame
    summary_signatures: list[dict[str, Any]]


def realization_tables(eta: EtaResult) -> RealizationTables | None:
    """Both tables of an η result whose per-talk table holds two realizations or more
    (``None`` otherwise)."""
    if not has_realizations(eta.per_talk):
        return None
    spread, sigs = talk_spread(eta.per_talk, eta.per_talk_signatures)
    summary, summary_sigs = talk_sd_summary(spread, sigs)
    return RealizationTables(spread, sigs, summary, summary_sigs)
