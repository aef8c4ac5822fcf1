"""The report's figures (matplotlib, Agg, rendered in memory as PNG and SVG bytes).

Figure 1: per-talk η per condition (dots) with the mean and its interval. Figure 2:
ready-audio queue change ΔQ(u) on the source-progress grid, mean and 25th–75th
percentile band across talks, one panel per backend and realization, one line per
system. Figure 3: one talk's playback timeline under the reference and a grouped
condition (readiness, playing, idle). Figure 4: distribution (ECDF) of request audio
durations per condition, the panels on one x-range. Legends sit outside the axes (below
them), never over data. PNGs are drawn at 220 dpi, twice the 110 dpi a page shows them at
(:data:`PIXEL_RATIO`), so they stay sharp on high-density screens. Each figure's signature
is in its PNG/SVG metadata and printed under it in the report, not drawn into the image.
Times in seconds.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from simulplay.analysis.small_panels import tie_count
from simulplay.core.signature import merge
from simulplay.report.model import ReportFigure, ReportTable, extend, signature_lines
from simulplay.report.order import condition_order, panels, system_order
from simulplay.report.queue import BAND, GRID_POINTS, queue_delta
from simulplay.report.read_run import RunData

PIXEL_RATIO = 2  # PNG pixels per CSS pixel: the page shows each figure at half its pixel size
DPI = 110 * PIXEL_RATIO
WIDTH = 8.0  # inches
PAD = 0.08  # inches of margin around what is drawn
RC = {"svg.hashsalt": "simulplay", "svg.fonttype": "none", "font.size": 8, "axes.titlesize": 8,
      "axes.labelsize": 8, "legend.fontsize": 7, "xtick.labelsize": 7, "ytick.labelsize": 7}


def render(fig: Figure, lines: Sequence[str]) -> tuple[bytes, bytes]:
    """PNG and SVG bytes of ``fig``, its signature lines in their metadata (``Description``).

    The layout is solved and the tight bounding box measured once, then both formats are
    drawn within it (``bbox_inches="tight"`` would lay the figure out and draw it twice per
    format)."""
    meta = "\n".join(lines)
    with matplotlib.rc_context(RC):
        fig.draw_without_rendering()  # the constrained layout places the axes
        box = fig.get_tightbbox().padded(PAD)
        fig.set_layout_engine("none")  # keep those places for both formats
        png, svg = io.BytesIO(), io.BytesIO()
        fig.savefig(png, format="png", dpi=DPI, bbox_inches=box, metadata={"Description": meta, "Software": None})
        fig.savefig(svg, format="svg", bbox_inches=box, metadata={"Description": meta, "Date": None})
    return png.getvalue(), svg.getvalue()


def _figure(rows: int, cols: int = 1, row_height: float = 2.6, **share) -> tuple[Figure, np.ndarray]:
    with matplotlib.rc_context(RC):
        fig = Figure(figsize=(WIDTH, 0.9 + row_height * rows), layout="constrained")
        axes = fig.subplots(rows, cols, squeeze=False, **share)
    return fig, axes


def _legend_below(fig: Figure, axes: np.ndarray, ncols: int = 4) -> None:
    """One legend for the whole figure, outside the axes, under them (entries of every
    panel, each label once)."""
    seen: dict[str, object] = {}
    for ax in axes.flat:
        for handle, text in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(text, handle)
    if seen:
        fig.legend(list(seen.values()), list(seen), loc="outside lower center", ncols=min(ncols, len(seen)),
                   frameon=False)


def _panel_groups(df: pd.DataFrame) -> list[tuple[dict, pd.DataFrame]]:
    keys = panels(df)
    if not keys:
        return [({}, df)]
    return [(dict(zip(keys, k if isinstance(k, tuple) else (k,))), g) for k, g in df.groupby(keys, sort=False)]


def _panel_title(pk: dict) -> str:
    parts = [pk["backend"]] if "backend" in pk else []
    if "realization" in pk:
        parts.append(f"realization {pk['realization']}")
    return " · ".join(parts)


def eta_figure(run: RunData) -> ReportFigure:
    """Figure 1: per-talk η (seconds) per condition with the mean and interval."""
    eta, pt = run.eta.frame, run.per_talk.frame
    groups = _panel_groups(eta)
    with matplotlib.rc_context(RC):
        fig, axes = _figure(len(groups))
        for ax, (pk, g) in zip(axes[:, 0], groups):
            talks = pt
            for k, v in pk.items():
                talks = talks[talks[k] == v]
            conds = [c for c in condition_order(run) if c in set(g["condition"])]
            for x, cond in enumerate(conds):
                row = g[g["condition"] == cond].iloc[0]
                vals = talks[talks["condition"] == cond].sort_values("talk_id")["eta_s"].to_numpy(float)
                off = np.linspace(-0.18, 0.18, len(vals)) if len(vals) > 1 else np.zeros(len(vals))
                ax.scatter(x + off - 0.12, vals, s=14, color="#4C72B0", alpha=0.75, linewidths=0,
                           label="talk" if x == 0 else None, zorder=3)
                ax.errorbar([x + 0.18], [row["eta_s"]], yerr=[[row["eta_s"] - row["ci_low_s"]],
                                                               [row["ci_high_s"] - row["eta_s"]]],
                            fmt="D", color="black", ms=4, capsize=3, lw=1,
                            label="mean and interval" if x == 0 else None, zorder=4)
            ax.axhline(0, color="0.5", lw=0.8, zorder=1)
            labels = [f"{c}\nη<0: {int(r.n_negative)} · " + (f"η=0: {tie_count(r)} · " if tie_count(r) else "")
                      + f"η>0: {int(r.n_positive)}\nof {int(r.n_talks)} talks"
                      for c, r in ((c, g[g["condition"] == c].iloc[0]) for c in conds)]
            ax.set_xticks(range(len(conds)), labels)
            ax.set_xlim(-0.6, len(conds) - 0.4)
            ax.set_ylabel("η (s)")
            ax.set_title(f"{_panel_title(pk)} · reference {run.reference}".strip(" ·"), loc="left")
            ax.grid(axis="y", color="0.9", lw=0.6)
        _legend_below(fig, axes)
        lines = signature_lines(run.eta.signatures)
        png, svg = render(fig, lines)
    return ReportFigure("figure01_eta_per_talk", "Grouping effects on individual talks",
                        f"Per-talk η = δ(w) − δ(0) (dots; δ = L({run.a}) − L({run.f})), mean and paired-bootstrap "
                        f"interval (diamond and bar). Negative η shifts the gap toward {run.a}. Under each condition: "
                        "the number of talks with η < 0 and with η > 0, of all talks.", png, svg, lines,
                        number="Figure 1")


def default_condition(run: RunData) -> str:
    """The grouped condition shown by Figures 2–3 when none is given: the timer with the
    longest wait, else the first non-reference rule."""
    from simulplay.grouping import canonical_condition

    ref = canonical_condition(run.reference)
    conds = [c for c in condition_order(run) if c != ref]
    timers = [(float(c.split("=", 1)[1]), c) for c in conds if re.fullmatch(r"timer:w=[0-9.]+", c)]
    return max(timers)[1] if timers else conds[0]


def queue_figure(run: RunData, parts: pd.DataFrame, condition: str) -> ReportFigure:
    """Figure 2: ΔQ(u) = Q_w(u·S) − Q_0(u·S) in seconds of queued audio, mean and
    interquartile band across talks."""
    from simulplay.grouping import canonical_condition

    ref = canonical_condition(run.reference)
    systems = system_order(run, parts["system"].unique())
    src = run.summary.frame.groupby("talk_id")["source_s"].first()
    _, summary = queue_delta(parts, src, condition=condition, reference=ref, systems=systems)
    s = run.summary.frame
    sig_rows = [run.summary.signatures[i] for i in np.flatnonzero(s["condition"].isin([condition, ref]).to_numpy())]
    extra = {"table": "queue-delta", "rule": f"{condition} vs {ref}", "grid": GRID_POINTS,
             "band": f"p{BAND[0]:g}-p{BAND[1]:g} linear"}
    sigs = [merge(x, extra) if isinstance(x, dict) else x for x in sig_rows]
    groups = _panel_groups(summary)
    colors = dict(zip(systems, ["#C44E52", "#4C72B0", "#55A868", "#8172B2"] * 4))
    with matplotlib.rc_context(RC):
        fig, axes = _figure(len(groups))
        for ax, (pk, g) in zip(axes[:, 0], groups):
            for system in [x for x in systems if x in set(g["system"])]:
                gs = g[g["system"] == system]
                x = gs["u"].to_numpy() * 100
                ax.fill_between(x, gs["p25_s"], gs["p75_s"], color=colors[system], alpha=0.2, lw=0)
                ax.plot(x, gs["mean_s"], color=colors[system], lw=1.3,
                        label=f"{system} ({int(gs['n_talks'].iloc[0])} talks)")
            ax.axhline(0, color="0.5", lw=0.8)
            ax.set_xlim(0, 100)
            ax.set_xlabel("source progress u (%)")
            ax.set_ylabel(f"ΔQ: {condition} − {ref} (s)")
            ax.set_title(f"{_panel_title(pk)} · mean, band: 25th–75th percentile across talks".strip(" ·"),
                         loc="left")
            ax.grid(color="0.92", lw=0.6)
        _legend_below(fig, axes)
        lines = signature_lines(sigs)
        png, svg = render(fig, lines)
    data = ReportTable("figure02_queue_delta", "ΔQ(u) per panel and system", "Seconds.", summary,
                       [" ; ".join(lines)] * len(summary), lines, digits={"u": 2})
    return ReportFigure("figure02_queue_delta", "Change in ready-audio queue during source arrival",
                        f"ΔQ(u) = Q_w(u·S) − Q_0(u·S) for w = {condition} against {ref}, at {GRID_POINTS} points of "
                        "source progress; Q(t) is audio already generated and not yet played at source time t. "
                        "Curves: equal-talk means; bands: 25th–75th percentile across talks (linear), not "
                        "confidence intervals. Negative: less generated audio waiting to play, not earlier word "
                        "delivery. The figure stops at source end; panels may use different vertical scales.",
                        png, svg, lines, number="Figure 2", data=data)


def default_talk(run: RunData, condition: str) -> str:
    """The talk with the largest |η| under ``condition`` in the first panel."""
    pt = run.per_talk.frame
    first = _panel_groups(pt)[0][1]
    g = first[first["condition"] == condition]
    if g.empty:
        return str(sorted(run.summary.frame["talk_id"].unique())[0])
    return str(g.loc[g["eta_s"].abs().idxmax(), "talk_id"])


def timeline_figure(run: RunData, parts: pd.DataFrame, condition: str, talk: str) -> ReportFigure:
    """Figure 3: one talk's playback under the reference and ``condition``, both systems
    (x axis in seconds from source start; ``parts`` is the replay's part table)."""
    from simulplay.grouping import canonical_condition

    ref = canonical_condition(run.reference)
    pk, first = _panel_groups(parts)[0]
    one = first[first["talk_id"] == talk]
    systems = system_order(run, one["system"].unique())
    rows = [(s, c) for s in systems for c in (ref, condition)]
    src = float(run.summary.frame.loc[run.summary.frame["talk_id"] == talk, "source_s"].iloc[0])
    s = run.summary.frame
    mask = (s["talk_id"] == talk) & s["condition"].isin([ref, condition])
    for k, v in pk.items():
        mask &= s[k] == v
    sigs = [extend(run.summary.signatures[i], {"table": "timeline"}) for i in np.flatnonzero(mask.to_numpy())]
    with matplotlib.rc_context(RC):
        fig, axes = _figure(1, row_height=0.55 * len(rows) + 0.6)
        ax = axes[0, 0]
        for y, (system, cond) in enumerate(reversed(rows)):
            p = one[(one["system"] == system) & (one["condition"] == cond) & one["play_s"].notna()]
            play, end, ready = (p[c].to_numpy(float) for c in ("play_s", "end_s", "ready_s"))
            shades = np.where(np.arange(len(play)) % 2 == 0, "#4C72B0", "#7EA6E0")
            ax.broken_barh(list(zip(play, end - play)), (y - 0.3, 0.6), facecolors=list(shades), lw=0,
                           label="playing" if y == 0 else None)
            prev = np.concatenate([[0.0], end[:-1]])
            gaps = [(a, b - a) for a, b in zip(prev, play) if b > a]
            ax.broken_barh(gaps, (y - 0.3, 0.6), facecolors="#F2B880", lw=0, label="idle" if y == 0 else None)
            ax.plot(ready, np.full(len(ready), y + 0.38), "|", color="0.15", ms=4, mew=0.6,
                    label="part ready" if y == 0 else None)
        ax.axvline(src, color="#C44E52", ls="--", lw=1, label=f"source end S = {src:.1f} s")
        ax.set_yticks(range(len(rows)), [f"{s}\n{c}" for s, c in reversed(rows)])
        ax.set_ylim(-0.7, len(rows) - 0.3)
        ax.set_xlabel("seconds from source start")
        ax.set_title(f"talk {talk} · {_panel_title(pk)}".strip(" ·"), loc="left")
        ax.grid(axis="x", color="0.92", lw=0.6)
        _legend_below(fig, axes)
        lines = signature_lines(sigs)
        png, svg = render(fig, lines)
    return ReportFigure("figure03_timeline", f"Playback timeline of talk {talk}",
                        f"Each row is one output: parts play serially (alternating shades), idle is time the player "
                        f"waits for audio (including the initial wait), ticks mark each part's readiness. Reference "
                        f"{ref} against {condition}. Parts without audio are not played.", png, svg, lines,
                        number="Figure 3")


def durations_figure(run: RunData) -> ReportFigure:
    """Figure 4: ECDF of request audio durations in seconds per condition (successful requests)."""
    man = run.manifest.frame
    ok = man[man["error"] == ""]
    n_failed = int((man["error"] != "").sum())
    groups = _panel_groups(ok)
    systems = system_order(run, ok["system"].unique())
    conds = [c for c in condition_order(run) if c in set(ok["condition"])]
    colors = dict(zip(conds, [matplotlib.colormaps["tab10"](i % 10) for i in range(len(conds))]))
    with matplotlib.rc_context(RC):
        fig, axes = _figure(len(groups), len(systems), row_height=2.4, sharex=True, sharey=True)
        for r, (pk, g) in enumerate(groups):
            for c, system in enumerate(systems):
                ax = axes[r, c]
                for cond in conds:
                    d = np.sort(g.loc[(g["system"] == system) & (g["condition"] == cond), "audio_s"].to_numpy(float))
                    if len(d):
                        ax.step(np.concatenate([[0.0], d]), np.arange(len(d) + 1) / len(d), where="post",
                                color=colors[cond], lw=1.1, label=cond)
                ax.set_xlabel("request audio (s)")
                ax.set_ylabel("fraction of requests")
                ax.set_title(f"{system} · {_panel_title(pk)}".strip(" ·"), loc="left")
                ax.grid(color="0.92", lw=0.6)
        _legend_below(fig, axes, ncols=3)
        sigs = [merge(s, {"table": "request-durations"}) if isinstance(s, dict) else s
                for s in run.manifest.signatures]
        lines = signature_lines(sigs)
        png, svg = render(fig, lines)
    note = f" {n_failed} failed request(s) are left out." if n_failed else " No request failed."
    return ReportFigure("figure04_request_durations", "Request audio durations per condition",
                        "Empirical distribution of each request's audio duration (seconds, from sample counts), "
                        "every panel on the same axes; Table 12 gives the number of requests. Punctuation-only "
                        "requests have no audio (0 s)."
                        + note, png, svg, lines, number="Figure 4")


def all_figures(run: RunData, parts: pd.DataFrame, condition: str, talk: str) -> list[ReportFigure]:
    """Figures 1–4 of a run in order: η, ΔQ under ``condition``, ``talk``'s timeline, durations."""
    return [eta_figure(run), queue_figure(run, parts, condition), timeline_figure(run, parts, condition, talk),
            durations_figure(run)]
