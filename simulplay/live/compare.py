"""Comparison (a): the replay of the live manifest against the live virtual player.

Replay (:func:`simulplay.sim.replay`) rebuilds each output from the live service times
alone: ``ready_j = max(dispatch_j, ready_{j−1}) + service_j``. The virtual player used the
last bytes as they arrived. They differ only by what the serial model leaves out: the
client's lateness (a request sent after it was due) and the time between one request's
end and the next one's send. Per output |ΔL| and |Δ first playback|; per request
|Δ ready| (replay's readiness against the live last byte), for request and chunk release.
Complete outputs only (an incomplete one has no replay).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from simulplay.core.keys import OUTPUT_ID
from simulplay.manifest import validate_manifest
from simulplay.manifest.chunks import validate_chunks
from simulplay.sim import replay

#: The agreement the issue asks for, per output.
GOAL_S = 0.020


def agreement(manifest: pd.DataFrame, chunks: pd.DataFrame, live: pd.DataFrame,
              requests: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per output (both releases) and per request (request release) differences, seconds."""
    m = validate_manifest(manifest, "live manifest")
    keys = list(OUTPUT_ID)
    frames = []
    complete = live[live["complete"]].astype({k: str for k in keys})  # replay's keys are text
    requests = requests.astype({k: str for k in keys})
    if complete.empty:
        return pd.DataFrame(), pd.DataFrame()
    per_request = pd.DataFrame()
    chunks = validate_chunks(chunks, "live chunks") if len(chunks) else None
    for release in ("request", "chunk") if chunks is not None else ("request",):
        rep = replay(m, release=release, chunks=chunks if release == "chunk" else None, allow_incomplete=True,
                     source="live manifest")
        got = rep.summary[keys + ["first_play_s", "offset_s"]]
        here = complete[complete["release"] == release][keys + ["first_play_s", "offset_s"]]
        both = here.merge(got, on=keys, suffixes=("_live", "_replay"))
        both.insert(len(keys), "release", release)
        both["abs_d_offset_s"] = (both["offset_s_replay"] - both["offset_s_live"]).abs()
        both["abs_d_first_play_s"] = (both["first_play_s_replay"] - both["first_play_s_live"]).abs()
        frames.append(both)
        if release == "request":
            parts = rep.parts[keys + ["seq", "ready_s"]]
            req = requests[keys + ["seq", "last_byte_s"]].merge(parts, on=keys + ["seq"])
            req["abs_d_ready_s"] = (req["ready_s"] - req["last_byte_s"]).abs()
            per_request = req
    outputs = pd.concat(frames, ignore_index=True)
    outputs["within_goal"] = outputs["abs_d_offset_s"] <= GOAL_S
    return outputs, per_request


def agreement_summary(outputs: pd.DataFrame, per_request: pd.DataFrame) -> dict[str, Any]:
    """The largest differences (ms) per release, and how many outputs met the goal."""
    if outputs.empty:
        return {"outputs": 0}
    out: dict[str, Any] = {"goal_ms": GOAL_S * 1e3}
    for release, g in outputs.groupby("release", sort=False):
        out[release] = {"outputs": len(g), "within_goal": int(g["within_goal"].sum()),
                        "max_abs_d_offset_ms": float(g["abs_d_offset_s"].max() * 1e3),
                        "max_abs_d_first_play_ms": float(np.nanmax(g["abs_d_first_play_s"]) * 1e3)}
    if not per_request.empty:
        out["request"]["max_abs_d_ready_ms"] = float(per_request["abs_d_ready_s"].max() * 1e3)
    return out
