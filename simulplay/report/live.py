"""The live validation section: the simulator against a live run (docs/live.md).

A run folder that holds a live run in ``live/`` (``simulplay demo --live`` writes it
there; ``simulplay live --predict --out RUN/live`` too) gets Table 18, per output: L
lived by the virtual player, L predicted from the isolated synthesis (one server per
output) and from one server shared by all outputs, and ΔL = predicted − live; Table 18b,
η from each; and Figure 5, predicted against live L per output. Seconds.
"""

from __future__ import annotations

import matplotlib
import numpy as np

from simulplay.core.signature import merge
from simulplay.report.figures import RC, _figure, _legend_below, render
from simulplay.report.model import ReportFigure, ReportTable, signature_lines
from simulplay.report.read_run import RunData

#: The columns of the per-output table, in order (the shared model's only when it ran).
COLUMNS = ("talk_id", "system", "condition", "L_live_s", "L_isolated_s", "dL_isolated_s", "L_shared_s", "dL_shared_s")
MODELS = {"isolated": "isolated synthesis (one server per output)", "shared": "one server shared by all outputs"}


def live_tables(run: RunData) -> list[ReportTable]:
    """Tables 18 and 18b, when the run folder holds a live run with its predictions."""
    t = run.optional.get("live_prediction")
    if t is None:
        return []
    frame = t.frame[[c for c in COLUMNS if c in t.frame]]
    out = [ReportTable.signed("table18_live", "Live validation: predicted against live completion offset L",
                              "Seconds, per output, request release. L live: the live run's virtual player; L "
                              "isolated: replay of an isolated synthesis of the same requests (same backend "
                              "settings); L shared: the same replay with one server shared by every output of "
                              "the run (when all played at once). ΔL = predicted − live.", frame, t.signatures,
                              number="Table 18")]
    e = run.optional.get("live_eta")
    if e is not None:
        out.append(ReportTable.signed("table18b_live_eta", "Live validation: η from the live run and predicted",
                                      "Seconds; η of A against F from each; Δη = predicted − live.", e.frame,
                                      e.signatures, number="Table 18b"))
    return out


def live_figures(run: RunData) -> list[ReportFigure]:
    """Figure 5: predicted against live L per output (one marker per model, the diagonal)."""
    t = run.optional.get("live_prediction")
    if t is None:
        return []
    df = t.frame
    with matplotlib.rc_context(RC):
        fig, axes = _figure(1, row_height=3.4)
        ax = axes[0, 0]
        values = [df["L_live_s"].to_numpy(float)]
        for (name, text), marker in zip(MODELS.items(), "os"):
            if f"L_{name}_s" in df:
                ax.scatter(df["L_live_s"], df[f"L_{name}_s"], s=14, marker=marker, label=text)
                values.append(df[f"L_{name}_s"].to_numpy(float))
        both = np.concatenate(values)
        lo, hi = float(np.nanmin(both)), float(np.nanmax(both))
        ax.plot([lo, hi], [lo, hi], color="0.5", lw=0.8, label="predicted = live")
        ax.set_xlabel("live L (s)")
        ax.set_ylabel("predicted L (s)")
        ax.grid(color="0.92", lw=0.6)
        _legend_below(fig, axes, ncols=3)
        lines = signature_lines([merge(s, {"table": "live-prediction-figure"}) if isinstance(s, dict) else s
                                 for s in t.signatures])
        png, svg = render(fig, lines)
    return [ReportFigure("figure05_live", "Predicted against live completion offset L",
                         "Each output of the live run: L its virtual player lived (x) against L the simulator "
                         "predicted (y) from an isolated synthesis, alone and with one shared server; on the "
                         "diagonal they agree. Table 18 gives the values.", png, svg, lines, number="Figure 5")]
