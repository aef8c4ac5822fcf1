"""``simulplay demo --frameworks``: the demo's traces under the voice frameworks' grouping
(docs/frameworks.md), next to ``immediate`` and the paper's rules.

The demo's design (its traces, Piper voice, translators and reference) with the rules of
:data:`FRAMEWORK_RULES` and nothing else: no sensitivity replays, edge sweep, modelled
sweep or quality scores. It writes into ``OUT_DIR/frameworks`` and shares the demo's
store, so the texts the demo already synthesized are reused.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd

from simulplay.grouping import parse_rule
from simulplay.workflows.experiment import Experiment, demo_experiment

#: Each framework's default, LiveKit's main knob swept, against immediate and the paper's rules.
FRAMEWORK_RULES = ("immediate", "timer:w=2", "timer:w=4", "punct", "words", "livekit:min_sentence_len=5",
                   "livekit:min_sentence_len=10", "livekit", "livekit:min_sentence_len=40", "pipecat", "realtimetts")
FRAMEWORK_COLUMNS = ("condition", "eta_s", "ci_low_s", "ci_high_s", "mean_L_s", "first_play_s", "idle_s",
                     "joins_per_min")


def frameworks_experiment(out_dir: str | Path, *, piper: str = "") -> Experiment:
    """The demo's design under :data:`FRAMEWORK_RULES`, outputs in ``out_dir/frameworks``,
    the demo's store in ``out_dir/store``."""
    exp = demo_experiment(out_dir, piper=piper)
    return dataclasses.replace(exp, rules=tuple(parse_rule(r) for r in FRAMEWORK_RULES), out=exp.out / "frameworks",
                               contrasts=(), variants=(), edges=(), sweep=(), sweep_confirm=0, content=None,
                               quality=None)


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
