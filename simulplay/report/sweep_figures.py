"""Figures of a modelled sweep: one per rule family, modelled η and L against the parameter.

Top panel: modelled η (seconds) with its paired talk-bootstrap interval as a band, and
the conditions synthesized for real drawn on top as points with their measured
intervals. Bottom panel: modelled L of translators A and F (the mean end offset over
talks, seconds) with their bands, and the measured L likewise. A family with a second
varying key draws one line per value of it; a run with several panels (backend,
realization) one line per panel. Every label says "modelled"; the signature goes into
the PNG/SVG metadata (:func:`simulplay.report.figures.render`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib
import numpy as np
import pandas as pd

from simulplay.analysis.sweep import SWEEP_KEYS
from simulplay.core.keys import RUN_PANEL_KEYS, present
from simulplay.report.figures import RC, _figure, _legend_below, render
from simulplay.report.model import ReportFigure, signature_lines
from simulplay.report.read_run import RunData

COLORS = ("#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860")


def _lines(rows: pd.DataFrame, axis: str | None, other: list[str]) -> list[tuple[str, pd.DataFrame]]:
    """The family's rows cut into lines: per panel (and number of servers) and per value of
    the other varying keys."""
    keys = [*present(SWEEP_KEYS, rows), *other]
    if not keys:
        return [("", rows)]
    out = []
    for k, g in rows.groupby(keys, sort=False, dropna=False):
        k = k if isinstance(k, tuple) else (k,)
        label = ", ".join(f"{n}={v}" for n, v in zip(keys, k) if len(rows[n].unique()) > 1)
        out.append((label, g))
    return out


def _x(rows: pd.DataFrame, axis: str | None) -> np.ndarray:
    return rows[axis].to_numpy(float) if axis else np.arange(len(rows), dtype=float)


def sweep_figure(rows: pd.DataFrame, signatures: Sequence[dict[str, Any]], *, family: str, axis: str | None,
                 other: list[str], a: str, f: str, reference: str) -> tuple[bytes, bytes, list[str]]:
    """PNG and SVG bytes of one family's figure, and the signature lines in their metadata."""
    with matplotlib.rc_context(RC):
        fig, axes = _figure(2, row_height=2.4, sharex=True)
        ax_eta, ax_l = axes[0, 0], axes[1, 0]
        for i, (label, g) in enumerate(_lines(rows, axis, other)):
            g = g.sort_values(axis) if axis else g
            x, color = _x(g, axis), COLORS[i % len(COLORS)]
            suffix = f" ({label})" if label else ""
            ax_eta.plot(x, g["modelled_eta_s"], color=color, lw=1.2, label=f"modelled η{suffix}")
            ax_eta.fill_between(x, g["modelled_ci_low_s"], g["modelled_ci_high_s"], color=color, alpha=0.18, lw=0,
                                label=f"modelled η interval{suffix}")
            for tag, name, style in (("a", a, "-"), ("f", f, "--")):
                ax_l.plot(x, g[f"modelled_L_{tag}_s"], color=color, ls=style, lw=1.2,
                          label=f"modelled L({name}){suffix}")
                ax_l.fill_between(x, g[f"modelled_L_low_{tag}_s"], g[f"modelled_L_high_{tag}_s"], color=color,
                                  alpha=0.12, lw=0, label=f"modelled L interval{suffix}")
            _measured(ax_eta, ax_l, g, x, color, a, f)
        ax_eta.axhline(0, color="0.5", lw=0.8, zorder=1)
        ax_eta.set_ylabel(f"modelled η (s), reference {reference}")
        ax_l.set_ylabel("modelled L: end offset (s)")
        ax_l.set_xlabel(axis or "grid point")
        if not axis:
            ax_l.set_xticks(_x(rows, None), rows["rule"].tolist(), rotation=30, ha="right")
        ax_eta.set_title(f"modelled sweep {family}: η = δ(w) − δ({reference}), δ = L({a}) − L({f})", loc="left")
        for ax in (ax_eta, ax_l):
            ax.grid(color="0.9", lw=0.6)
        _legend_below(fig, axes, ncols=3)
        lines = signature_lines(list(signatures))
        png, svg = render(fig, lines)
    return png, svg, lines


def _measured(ax_eta, ax_l, g: pd.DataFrame, x: np.ndarray, color: str, a: str, f: str) -> None:
    """The points synthesized for real, with their measured intervals."""
    m = g["measured"].to_numpy(bool) & g["measured_eta_s"].notna().to_numpy()
    if m.any():
        y = g["measured_eta_s"].to_numpy(float)[m]
        err = [y - g["measured_ci_low_s"].to_numpy(float)[m], g["measured_ci_high_s"].to_numpy(float)[m] - y]
        ax_eta.errorbar(x[m], y, yerr=err, fmt="o", color="black", mfc=color, ms=4, capsize=3, lw=1,
                        label="measured η (synthesized)", zorder=4)
    m = g["measured"].to_numpy(bool) & g["measured_L_a_s"].notna().to_numpy()
    if m.any():
        for tag, name, marker in (("a", a, "o"), ("f", f, "s")):
            y = g[f"measured_L_{tag}_s"].to_numpy(float)[m]
            err = [y - g[f"measured_L_low_{tag}_s"].to_numpy(float)[m],
                   g[f"measured_L_high_{tag}_s"].to_numpy(float)[m] - y]
            ax_l.errorbar(x[m], y, yerr=err, fmt=marker, color="black", mfc=color, ms=4, capsize=3, lw=1,
                          label=f"measured L({name})", zorder=4)


def servers_figure(table: pd.DataFrame, signatures: Sequence[dict[str, Any]], *, a: str, f: str,
                   reference: str) -> tuple[bytes, bytes, list[str]]:
    """PNG and SVG bytes of the servers axis: modelled η (top, with its interval as a band)
    and the modelled mean L, ``(L(A) + L(F)) / 2`` (bottom; the end offsets averaged over
    talks, seconds), against the number of shared servers, one colour per rule (per panel
    too when the run has several), and the signature lines."""
    keys = present(RUN_PANEL_KEYS, table)
    rows = table.drop_duplicates([*keys, "rule", "servers"])
    groups = list(rows.groupby([*keys, "rule"], sort=False))
    cmap = matplotlib.colormaps["viridis"]
    with matplotlib.rc_context(RC):
        fig, axes = _figure(2, row_height=2.4, sharex=True)
        ax_eta, ax_l = axes[0, 0], axes[1, 0]
        for i, (key, g) in enumerate(groups):
            g = g.sort_values("servers")
            label = ", ".join([str(key[-1]), *(f"{k}={v}" for k, v in zip(keys, key) if rows[k].nunique() > 1)])
            color = COLORS[i] if len(groups) <= len(COLORS) else cmap(i / max(1, len(groups) - 1))
            x = g["servers"].to_numpy(float)
            ax_eta.plot(x, g["modelled_eta_s"], color=color, lw=1.2, marker="o", ms=3, label=label)
            ax_eta.fill_between(x, g["modelled_ci_low_s"], g["modelled_ci_high_s"], color=color, alpha=0.12, lw=0)
            mean_l = (g["modelled_L_a_s"] + g["modelled_L_f_s"]) / 2
            ax_l.plot(x, mean_l, color=color, lw=1.2, marker="o", ms=3)
        ax_eta.axhline(0, color="0.5", lw=0.8, zorder=1)
        ax_eta.set_ylabel(f"modelled η (s), reference {reference}")
        ax_l.set_ylabel(f"modelled mean L of {a} and {f} (s)")
        ax_l.set_xlabel("servers shared by the outputs (K)")
        ax_l.set_xticks(sorted(rows["servers"].unique().tolist()))
        ax_eta.set_title(f"modelled η and L against the number of servers: η = δ(w) − δ({reference}), "
                         f"δ = L({a}) − L({f})", loc="left")
        for ax in (ax_eta, ax_l):
            ax.grid(color="0.9", lw=0.6)
        _legend_below(fig, axes, ncols=4)
        lines = signature_lines(list(signatures))
        png, svg = render(fig, lines)
    return png, svg, lines


def sweep_report_figures(run: RunData) -> list[ReportFigure]:
    """One figure per family of the sweep saved in the run folder (``sweep/sweep.parquet``,
    written by ``simulplay sweep`` or the demo), none when there is no sweep."""
    from simulplay.core.tables import stored_signatures
    from simulplay.grouping.grid import parse_family

    path = run.folder / "sweep" / "sweep.parquet"
    if run.stepwise or not path.is_file():
        return []
    table, meta = run.read_table(path)
    sigs = stored_signatures(meta, len(table)) or [{}] * len(table)
    figures = []
    for i, family in enumerate(dict.fromkeys(table["family"]), start=1):
        grid = parse_family(family, source=f"{path}: family")
        at = (table["family"] == family).to_numpy()
        other = [k for k, v in grid.values.items() if len(v) > 1 and k != grid.axis]
        png, svg, lines = sweep_figure(table[at], [s for s, keep in zip(sigs, at) if keep], family=family,
                                       axis=grid.axis, other=other, a=run.a, f=run.f, reference=run.reference)
        figures.append(ReportFigure(
            f"figure05_sweep_{i}", f"Modelled sweep {family}",
            f"Modelled η and end offset L over {family} (lines and bands: a model of the run's requests, not a "
            "measurement; points with bars: conditions synthesized for real). Written by `simulplay sweep`; "
            "modelled vs measured in sweep/sweep_check.md.", png, svg, lines, number=f"Figure 5.{i}"))
    if "servers" in table:
        png, svg, lines = servers_figure(table, sigs, a=run.a, f=run.f, reference=run.reference)
        n = len(figures) + 1
        figures.append(ReportFigure(
            f"figure05_sweep_{n}_servers", "Modelled η and L against the number of servers",
            "Modelled η (band: its paired talk-bootstrap interval) and modelled mean L of A and F against the "
            "number of TTS servers the outputs of each rule share (the shared-server replay over the fitted clock; "
            "a model, not a measurement). Written by `simulplay sweep --servers`.", png, svg, lines,
            number=f"Figure 5.{n}"))
    return figures
