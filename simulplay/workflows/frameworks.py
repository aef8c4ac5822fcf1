"""``simulplay demo --frameworks``: the demo's traces under the voice frameworks' grouping
(docs/frameworks.md), next to ``immediate`` and the paper's rules.

The demo's design (its traces, Piper voice, translators and reference) with the rules of
:data:`FRAMEWORK_RULES` and nothing else: no sensitivity replays, edge sweep or quality
scores. It writes into ``OUT_DIR/frameworks`` and shares the demo's store, so the texts the
demo already synthesized are reused. Then :func:`knob_sweep` models each framework's main
knob (:data:`KNOB_GRIDS`: LiveKit's ``min_sentence_len``, its pacer's ``min_audio_buffer``)
on the run's duration model with zero service time, into ``OUT_DIR/frameworks/knobs``: the
points the run synthesized are its confirmation, replayed with zero service as well, so that
the comparison is of the grouping and the audio alone, whatever the machine's load was.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd

from simulplay.grouping import parse_rule
from simulplay.grouping.grid import parse_grids
from simulplay.workflows.experiment import Experiment, demo_experiment

#: Each framework's default, points of its main knob, against immediate and the paper's rules.
FRAMEWORK_RULES = ("immediate", "timer:w=2", "timer:w=4", "punct", "words", "livekit:min_sentence_len=5",
                   "livekit:min_sentence_len=10", "livekit", "livekit:min_sentence_len=40",
                   "livekit-pacer:min_audio_buffer=1", "livekit-pacer", "livekit-pacer:min_audio_buffer=8", "pipecat",
                   "realtimetts")
#: The knobs swept on the run's models; the points above are measured, the others modelled.
KNOB_GRIDS = ("livekit:min_sentence_len=5..40:5", "livekit-pacer:min_audio_buffer=1..8:1")
KNOB_COLUMNS = ("rule", "modelled_eta_s", "modelled_ci_low_s", "modelled_ci_high_s", "modelled_mean_L_s",
                "measured_eta_s", "measured_mean_L_s")
FRAMEWORK_COLUMNS = ("condition", "eta_s", "ci_low_s", "ci_high_s", "mean_L_s", "first_play_s", "idle_s",
                     "joins_per_min")


def frameworks_experiment(out_dir: str | Path, *, piper: str = "") -> Experiment:
    """The demo's design under :data:`FRAMEWORK_RULES`, outputs in ``out_dir/frameworks``,
    the demo's store in ``out_dir/store``."""
    exp = demo_experiment(out_dir, piper=piper)
    return dataclasses.replace(exp, rules=tuple(parse_rule(r) for r in FRAMEWORK_RULES), out=exp.out / "frameworks",
                               contrasts=(), variants=(), edges=(), sweep=(), sweep_confirm=0, content=None,
                               quality=None)


def knob_sweep(exp: Experiment, progress=None):
    """The modelled sweep of :data:`KNOB_GRIDS` on the run in ``exp.out``, zero service time on
    both sides (``simulplay sweep --service zero``), written to ``exp.out / "knobs"``."""
    from simulplay.core.progress import NO_PROGRESS
    from simulplay.workflows.sweep import sweep_run

    return sweep_run(exp.out, list(parse_grids(list(KNOB_GRIDS))), out=exp.out / "knobs", service="zero",
                     progress=progress or NO_PROGRESS)


def frameworks_table(eta: pd.DataFrame, summary: pd.DataFrame) -> pd.DataFrame:
    """One row per condition of ``eta`` (the run's η table): η and its interval, and over the
    condition's outputs (both translators; ``summary``, the replay's) the mean final offset L
    (playback end − source end), the mean first playback and idle time, and joins (parts − 1)
    per minute of source (all seconds)."""
    rows = []
    for _, e in eta.iterrows():
        out = summary[summary["condition"] == e["condition"]]
        minutes = float(out["source_s"].sum()) / 60.0
        rows.append({"condition": e["condition"], "eta_s": e["eta_s"], "ci_low_s": e["ci_low_s"],
                     "ci_high_s": e["ci_high_s"], "mean_L_s": float(np.nanmean(out["offset_s"])),
                     "first_play_s": float(np.nanmean(out["first_play_s"])), "idle_s": float(out["idle_s"].mean()),
                     "joins_per_min": float((out["n_parts"] - 1).clip(lower=0).sum()) / minutes if minutes else np.nan})
    return pd.DataFrame(rows, columns=list(FRAMEWORK_COLUMNS))


def knob_table(sweep: pd.DataFrame, check: pd.DataFrame) -> pd.DataFrame:
    """One row per point of the knob sweeps (``sweep``, the sweep's table): modelled η with its
    interval and the modelled mean L (of the two translators' equal-talk means), beside the
    measured η and mean L (``check``, the sweep's check) where the run synthesized the point
    (seconds)."""
    measured = check.set_index("condition")
    rows = []
    for _, r in sweep.iterrows():
        m = measured.loc[r["rule"]] if r["rule"] in measured.index else None
        rows.append({"rule": r["rule"], "modelled_eta_s": r["modelled_eta_s"],
                     "modelled_ci_low_s": r["modelled_ci_low_s"], "modelled_ci_high_s": r["modelled_ci_high_s"],
                     "modelled_mean_L_s": (r["modelled_L_a_s"] + r["modelled_L_f_s"]) / 2,
                     "measured_eta_s": np.nan if m is None else m["measured_eta_s"],
                     "measured_mean_L_s": np.nan if m is None else (m["measured_L_a_s"] + m["measured_L_f_s"]) / 2})
    return pd.DataFrame(rows, columns=list(KNOB_COLUMNS))
