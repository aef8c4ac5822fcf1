"""The figure of a load curve (``simulplay load``): TTFA p50/p95 and RTF p50/p95 against
concurrency, with the knees marked: the first level whose p95 TTFA exceeds the TTFA target
(a dashed red line; the target is a dotted grey line) and the first level with a request
that underran (a dash-dotted purple line). Written as PNG and SVG beside the table, the
signature in their metadata (:func:`simulplay.report.figures.render`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import matplotlib
import pandas as pd

from simulplay.core.atomic import write_bytes_atomic
from simulplay.report.figures import RC, _figure, _legend_below, render
from simulplay.report.model import signature_lines


def load_figure(table: pd.DataFrame, signature: Mapping[str, Any], *, ttfa_target_s: float,
                knees: Mapping[str, int | None]) -> tuple[bytes, bytes]:
    """PNG and SVG bytes of the load curve's figure (times in seconds, RTF a ratio)."""
    t = table.sort_values("concurrency")
    x = t["concurrency"].to_numpy(float)
    with matplotlib.rc_context(RC):
        fig, axes = _figure(2, row_height=2.2, sharex=True)
        ax_t, ax_r = axes[0, 0], axes[1, 0]
        ax_t.plot(x, t["ttfa_p50_s"], "o-", color="#4C72B0", lw=1.2, label="TTFA p50")
        ax_t.plot(x, t["ttfa_p95_s"], "s--", color="#4C72B0", lw=1.0, label="TTFA p95")
        ax_t.axhline(ttfa_target_s, color="0.5", ls=":", lw=0.9, label=f"TTFA target {ttfa_target_s:g} s")
        ax_r.plot(x, t["rtf_p50"], "o-", color="#DD8452", lw=1.2, label="RTF p50")
        ax_r.plot(x, t["rtf_p95"], "s--", color="#DD8452", lw=1.0, label="RTF p95")
        ax_r.axhline(1.0, color="0.5", ls=":", lw=0.9, label="RTF 1 (real time)")
        for key, color, style, what in (("ttfa", "#C44E52", "--", "p95 TTFA over target"),
                                        ("underrun", "#8172B3", "-.", "first underrun")):
            if knees.get(key) is not None:
                for ax in (ax_t, ax_r):
                    ax.axvline(knees[key], color=color, ls=style, lw=1.0, label=f"knee: {what} (c = {knees[key]})")
        ax_t.set_ylabel("TTFA (s, first audible − sent)")
        ax_r.set_ylabel("RTF (service / audio)")
        ax_r.set_xlabel("concurrency (requests in flight)")
        ax_r.set_xscale("log", base=2)
        ax_r.set_xticks(x, [str(int(c)) for c in x])
        ax_t.set_title("load curve: time to first audio and real-time factor against concurrency", loc="left")
        for ax in (ax_t, ax_r):
            ax.grid(color="0.9", lw=0.6)
        _legend_below(fig, axes, ncols=3)
        return render(fig, signature_lines([dict(signature)]))


def write_load_figure(table: pd.DataFrame, signature: Mapping[str, Any], stem: Path, *,
                      ttfa_target_s: float, knees: Mapping[str, int | None]) -> list[Path]:
    """Write ``stem.png`` and ``stem.svg``; returns their paths."""
    png, svg = load_figure(table, signature, ttfa_target_s=ttfa_target_s, knees=knees)
    paths = [stem.with_name(stem.name + ".png"), stem.with_name(stem.name + ".svg")]
    write_bytes_atomic(paths[0], png)
    write_bytes_atomic(paths[1], svg)
    return paths
