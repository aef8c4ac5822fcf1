"""The sweep's tables and figures: measured columns, the points to confirm, and the files.

Every table is written with :func:`simulplay.core.tables.write_table` (one signature per row,
Parquet/CSV/Markdown by suffix); each family's figure comes from
:mod:`simulplay.report.sweep_figures`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pandas as pd

from simulplay.analysis.sweep import SWEEP_KEYS, Modelled, SweepResult
from simulplay.analysis.sweep_check import SweepCheck
from simulplay.core.atomic import atomic_path
from simulplay.core.keys import present
from simulplay.core.signature import merge
from simulplay.core.tables import write_table

MEASURED = ("measured_eta_s", "measured_ci_low_s", "measured_ci_high_s", "measured_L_a_s", "measured_L_low_a_s",
            "measured_L_high_a_s", "measured_L_f_s", "measured_L_low_f_s", "measured_L_high_f_s")


def measured_columns(table: pd.DataFrame, measured: Modelled, confirmed: set[str], *, a: str,
                     f: str) -> pd.DataFrame:
    """The sweep table with the measured η (interval) and L (intervals) of the points the
    run or a ``--confirm`` synthesized (NaN elsewhere); ``confirmed`` marks the latter."""
    keys = present(SWEEP_KEYS, table)
    eta = measured.eta[[*keys, "condition", "eta_s", "ci_low_s", "ci_high_s"]].rename(
        columns={"condition": "rule", "eta_s": "measured_eta_s", "ci_low_s": "measured_ci_low_s",
                 "ci_high_s": "measured_ci_high_s"})
    ends = measured.ends
    out = table.drop(columns=[c for c in MEASURED if c in table], errors="ignore").copy()
    out["measured"] = out["rule"].isin(set(measured.ends["condition"]))
    out["confirmed"] = out["rule"].isin(confirmed)
    out = out.merge(eta, on=[*keys, "rule"], how="left")
    for tag, system in (("a", a), ("f", f)):
        e = ends[ends["system"] == system][[*keys, "condition", "L_s", "L_low_s", "L_high_s"]].rename(
            columns={"condition": "rule", "L_s": f"measured_L_{tag}_s", "L_low_s": f"measured_L_low_{tag}_s",
                     "L_high_s": f"measured_L_high_{tag}_s"})
        out = out.merge(e, on=[*keys, "rule"], how="left")
    return out


def pick_points(table: pd.DataFrame, k: int, by: str) -> list[str]:
    """The ``k`` grid points the run did not synthesize with the lowest modelled mean L
    (the mean of L(A) and L(F)) or the most negative modelled η, averaged over panels; ties
    in grid order. Points an earlier ``--confirm`` synthesized count too (they come back
    from the store), so confirming again confirms the same points."""
    free = table[~table["measured"]]
    if free.empty:
        return []
    score = ((free["modelled_L_a_s"] + free["modelled_L_f_s"]) / 2) if by == "L" else free["modelled_eta_s"]
    ranked = score.groupby(free["rule"], sort=False).mean().sort_values(kind="stable")
    return list(ranked.index[:k])


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-")[:40] or "rule"


def write_sweep(out: Path, table: pd.DataFrame, signatures: list[dict[str, Any]], result: SweepResult,
                check: SweepCheck, *, a: str, f: str, reference: str) -> list[Path]:
    """Every table and figure of the sweep (``table``: with its measured columns) into
    ``out``; the paths written."""
    from simulplay.report.sweep_figures import servers_figure, sweep_figure

    notes = [check.summary, *(f"warning: {w}" for w in check.warnings)]
    paths = [write_table(table, out / f"sweep{ext}", signatures, kind="sweep", signature_column=True,
                         notes=notes) for ext in (".parquet", ".csv", ".md")]
    paths += [write_table(check.table, out / f"sweep_check{ext}", check.signatures, kind="sweep-check",
                          signature_column=True, notes=notes) for ext in (".parquet", ".csv", ".md")]
    paths.append(write_table(check.per_talk, out / "sweep_check_per_talk.csv", check.per_talk_signatures,
                             kind="sweep-check-per-talk"))
    models, model_sigs = model_table(result, signatures)
    paths.append(write_table(models, out / "sweep_models.csv", model_sigs, kind="sweep-models"))
    for i, grid in enumerate(result.grids, start=1):
        rows = table[table["family"] == grid.text]
        sigs = [s for s, fam in zip(signatures, table["family"]) if fam == grid.text]
        other = [k for k, v in grid.values.items() if len(v) > 1 and k != grid.axis]
        png, svg, _ = sweep_figure(rows, sigs, family=grid.text, axis=grid.axis, other=other, a=a, f=f,
                                   reference=reference)
        for data, ext in ((png, ".png"), (svg, ".svg")):
            path = out / f"sweep_{i}_{_slug(grid.text)}{ext}"
            with atomic_path(path) as tmp:
                tmp.write_bytes(data)
            paths.append(path)
    if "servers" in table:
        paths += _write_figure(out / "sweep_servers", *servers_figure(table, signatures, a=a, f=f,
                                                                      reference=reference)[:2])
    return paths


def _write_figure(stem: Path, png: bytes, svg: bytes) -> list[Path]:
    """``stem.png`` and ``stem.svg``, each written whole."""
    paths = []
    for data, ext in ((png, ".png"), (svg, ".svg")):
        path = stem.with_suffix(ext)
        with atomic_path(path) as tmp:
            tmp.write_bytes(data)
        paths.append(path)
    return paths


def model_table(result: SweepResult, signatures: list[dict[str, Any]]) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """One row per panel: the duration model's coefficients (seconds per unit), requests
    fitted and left out, its cross-validated errors, and the service clock's coefficients."""
    rows, sigs = [], []
    base = signatures[0] if signatures else {}
    for m in result.models:
        d, s = m.durations, m.service
        rows.append({**dict(m.panel), "n_requests": d.n, "trimmed": d.trimmed,
                     **{f"b_{t}": c for t, c in d.coefficients().items()},
                     "rate_min": min(d.rates, default=1.0), "rate_max": max(d.rates, default=1.0),
                     **{f"{h.over}_{k}": v for h in d.held_out
                        for k, v in (("folds", h.folds), ("abs_error_s", h.abs_error_s), ("sum_error", h.sum_error))},
                     "service_intercept_s": s.coef[0], "service_per_audio_s": s.coef[1],
                     "service_per_char_s": s.coef[2], "sample_rate": m.sample_rate})
        sigs.append(merge({k: v for k, v in base.items() if k not in ("rule",)}, {"table": "sweep-models"},
                          dict(m.panel)))
    return pd.DataFrame(rows), sigs
