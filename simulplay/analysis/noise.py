"""How much of η is synthesis noise: η's spread across realizations, and how far the
durations of one request differ from realization to realization.

Each realization is its own η panel (never pooled). :func:`eta_spread` puts the panels of a
condition side by side: the mean, lowest and highest η, their range (for two realizations,
how much they disagree) and the sample standard deviation (ddof 1), in seconds.
:func:`duration_noise` compares each realization's audio with the first realization's, text
by text: with Piper's default settings the same text gets another sample count almost every
time; with ``durations=fixed`` never. Under ``reuse=always`` later realizations reuse the first
one's audio and service times, so their spread is zero by construction (``n_fresh`` counts
the texts a realization synthesized itself). ``talks`` goes one level down, talk by talk
(Truong & Le (2026), Appendix C.4, :mod:`simulplay.analysis.realizations`): each talk's η per realization,
its sample SD, and per condition the median and maximum SD and the widest talk.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from simulplay.analysis.eta import EtaResult
from simulplay.analysis.realizations import RealizationTables, realization_tables
from simulplay.core.signature import merge

SPREAD_COLUMNS = ("condition", "n_realizations", "eta_mean_s", "eta_min_s", "eta_max_s", "eta_range_s",
                  "eta_sd_s")
DURATION_COLUMNS = ("realization", "vs_realization", "n_texts", "n_fresh", "n_same_samples",
                    "median_abs_diff_s", "max_abs_diff_s")
#: Panel keys an η spread keeps apart (the realization is what it spreads over).
SPREAD_PANELS = ("backend", "threshold")


@dataclass
class NoiseCheck:
    """η spread per replay (``""``: the primary replay; else a variant such as ``service=zero``)
    and the duration comparison of the manifest's realizations; every ``_s`` column is in
    seconds (``durations``: |Δ duration| median and maximum per realization, seconds)."""

    spread: pd.DataFrame
    spread_signatures: list[dict[str, Any]]
    durations: pd.DataFrame
    duration_signatures: list[dict[str, Any]]
    reuse: str | None = None
    notes: list[str] = field(default_factory=list)
    talks: RealizationTables | None = None  # the primary replay's η talk by talk across realizations


def eta_spread(eta: EtaResult) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """One row per (backend, threshold, condition) over its realizations; empty when the
    table has fewer than two realizations. Signatures: the η rows' without ``realization``,
    with ``table: eta-spread`` and the realizations' count."""
    return spread_table(eta.table, eta.table_signatures)


def spread_table(t: pd.DataFrame, table_signatures: list[dict[str, Any]]) -> tuple[pd.DataFrame,
                                                                                 list[dict[str, Any]]]:
    """:func:`eta_spread` of an η table (seconds) and its row signatures (``t`` indexed
    0…n−1, as the signatures are)."""
    keys = [k for k in SPREAD_PANELS if k in t]
    cols = [*keys, *SPREAD_COLUMNS]
    if "realization" not in t or t["realization"].nunique() < 2:
        return pd.DataFrame(columns=cols), []
    rows, sigs = [], []
    for _, g in t.groupby([*keys, "condition"], sort=False):
        eta_s = g["eta_s"].to_numpy(float)
        rows.append({**{k: g[k].iloc[0] for k in keys}, "condition": g["condition"].iloc[0],
                     "n_realizations": len(eta_s), "eta_mean_s": eta_s.mean(), "eta_min_s": eta_s.min(),
                     "eta_max_s": eta_s.max(), "eta_range_s": eta_s.max() - eta_s.min(),
                     "eta_sd_s": eta_s.std(ddof=1) if len(eta_s) > 1 else np.nan})
        first = {k: v for k, v in table_signatures[int(g.index[0])].items() if k != "realization"}
        sigs.append(merge(first, {"table": "eta-spread", "realizations": len(eta_s)}))
    return pd.DataFrame(rows, columns=cols), sigs


def duration_noise(manifest: pd.DataFrame) -> pd.DataFrame:
    """Each later realization against the first, over the texts both synthesized without
    error: how many have the same sample count, and |Δ duration| median and maximum (s).

    ``n_fresh``: texts the realization synthesized itself (not all of its rows ``reused``).
    Empty when the manifest has one realization. A manifest of several backends gets one
    comparison per backend (a ``backend`` column first): the same text under another
    backend is another voice, not another realization."""
    if "backend" in manifest and manifest["backend"].nunique() > 1:
        frames = [_duration_noise(g).assign(backend=b) for b, g in manifest.groupby("backend", sort=False)]
        return pd.concat(frames, ignore_index=True)[["backend", *DURATION_COLUMNS]]
    return _duration_noise(manifest)


def _duration_noise(manifest: pd.DataFrame) -> pd.DataFrame:
    ok = manifest[(manifest["error"] == "") & (manifest["sample_rate"] > 0)]
    reals = sorted(ok["realization"].unique(), key=lambda r: int(r))
    if len(reals) < 2:
        return pd.DataFrame(columns=list(DURATION_COLUMNS))
    per_text = ok.groupby(["realization", "text"], sort=False).agg(
        n_samples=("n_samples", "first"), rate=("sample_rate", "first"), reused=("reused", "all"))
    first = per_text.loc[reals[0]]
    rows = []
    for r in reals[1:]:
        other = per_text.loc[r]
        common = first.index.intersection(other.index)
        a, b = first.loc[common], other.loc[common]
        diff_s = np.abs(a["n_samples"].to_numpy(np.int64) - b["n_samples"].to_numpy(np.int64)) / a["rate"].to_numpy()
        rows.append({"realization": r, "vs_realization": reals[0], "n_texts": len(common),
                     "n_fresh": int((~b["reused"]).sum()), "n_same_samples": int((diff_s == 0).sum()),
                     "median_abs_diff_s": float(np.median(diff_s)) if len(common) else np.nan,
                     "max_abs_diff_s": float(diff_s.max()) if len(common) else np.nan})
    return pd.DataFrame(rows, columns=list(DURATION_COLUMNS))


def noise_check(manifest: pd.DataFrame, signature: Mapping[str, Any], etas: Mapping[str, EtaResult]) -> NoiseCheck:
    """η spread of every replay in ``etas`` (keyed by variant, ``""`` for the primary one),
    stacked with a ``replay`` column, the primary replay's η talk by talk, and the duration
    comparison of ``manifest``."""
    frames, sigs = [], []
    for name, eta in etas.items():
        table, s = eta_spread(eta)
        frames.append(table.assign(replay=name or "primary"))
        sigs += s
    spread = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["replay", *SPREAD_COLUMNS])
    spread = spread[["replay", *[c for c in spread.columns if c != "replay"]]]
    durations = duration_noise(manifest)
    dsigs = [merge(signature, {"table": "duration-noise"})] * len(durations)
    reuse = signature.get("reuse")
    notes = []
    if len(durations) and (durations["n_fresh"] == 0).all():
        notes.append(f"later realizations reuse the first one's audio and service times (reuse={reuse}): "
                     "their spread is 0 by construction; reuse = \"same-realization\" synthesizes each afresh")
    talks = realization_tables(etas[""]) if "" in etas else None
    return NoiseCheck(spread, sigs, durations, dsigs, reuse, notes, talks)
