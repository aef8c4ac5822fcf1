"""Per-part playback for the report, and the ready-audio queue change ΔQ(u) (docs/concepts.md#serial-playback).

``Q(t) = Σ_{j: r_j ≤ t} max(0, C_j − max(p_j, t))`` over an output's played parts, and
``ΔQ_s(u) = Q_{s,w}(u·S_s) − Q_{s,0}(u·S_s)`` for talk s on a grid of source progress
u ∈ [0, 1] (101 points by default): grouped condition w against the reference. Across
talks: the equal-talk mean and the 25th–75th percentile band (NumPy ``linear``), which
describe the spread of talks, not a confidence interval. Times in seconds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from simulplay.core.errors import InputError
from simulplay.core.timebase import MAX_S, from_ns, to_ns
from simulplay.manifest import output_keys
from simulplay.sim import replay
from simulplay.sim.playback import ready_queue

GRID_POINTS = 101
BAND = (25.0, 75.0)


def silent_reading(signatures: Sequence[Any]) -> str:
    """The reading of silent parts that a summary's structured signatures record (``skip``
    when they record none, or are display strings)."""
    readings = {s.get("silent", "skip") for s in signatures if isinstance(s, dict)}
    return readings.pop() if len(readings) == 1 else "skip"


def replay_parts(manifest: pd.DataFrame, summary: pd.DataFrame, *, allow_incomplete: bool,
                 source: str, summary_name: str = "summary.parquet", silent_parts: str = "skip") -> pd.DataFrame:
    """Per-part ready/play/end times of the primary replay (request release, measured
    service, the run's reading of silent parts), checked against the run's summary: both
    must give every output's offset."""
    res = replay(manifest, allow_incomplete=allow_incomplete, source=source, silent_parts=silent_parts)
    miss = summary_mismatch(res.summary, summary, ("offset_s",))
    if miss:
        raise InputError.at(source, f"replaying it does not reproduce {summary_name} for {miss}",
                            accepted=f"the manifest and the playback summary of its replay ({summary_name})")
    return res.parts


def summary_mismatch(replayed: pd.DataFrame, summary: pd.DataFrame,
                     columns: Sequence[str] = ("offset_s", "audio_s", "idle_s")) -> str | None:
    """The first output where ``summary`` differs from a replay's summary by more than
    a whole nanosecond in one of ``columns`` (or is missing, or extra), described; ``None`` when none."""
    keys = output_keys(replayed)
    if set(keys) - set(summary.columns) or set(output_keys(summary)) - set(keys):
        return (f"its outputs: the replay's are keyed by {', '.join(keys)}, the summary's by "
                f"{', '.join(output_keys(summary))}")
    both = replayed[keys + list(columns)].merge(summary[keys + list(columns)], on=keys, how="outer",
                                                suffixes=("_replay", "_run"), indicator=True)
    bad = both["_merge"] != "both"
    for col in columns:
        r, s = both[f"{col}_replay"].to_numpy(float), both[f"{col}_run"].to_numpy(float)
        bad |= ~((np.isnan(r) & np.isnan(s)) | _same_ns(r, s))
    if not bad.any():
        return None
    row = both[bad.to_numpy()].iloc[0]
    label = ", ".join(f"{k}={row[k]}" for k in keys)
    if row["_merge"] != "both":
        return f"output ({label}): {'only in the replay' if row['_merge'] == 'left_only' else 'not in the replay'}"
    col = next(c for c in columns
               if not _same_ns(np.array([float(row[f"{c}_replay"])]), np.array([float(row[f"{c}_run"])]))[0])
    name = {"offset_s": "offset", "audio_s": "audio", "idle_s": "idle"}.get(col, col)
    return f"output ({label}): {name} {row[f'{col}_replay']} s vs {row[f'{col}_run']} s"


def _same_ns(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Seconds that name the same whole nanosecond (replay writes whole nanoseconds, so a
    summary of the same run matches exactly)."""
    ok = (np.abs(a) < MAX_S) & (np.abs(b) < MAX_S)  # False for NaN
    return ok & (to_ns(np.where(ok, a, 0.0)) == to_ns(np.where(ok, b, 0.0)))


def queue_at(parts: pd.DataFrame, t: np.ndarray) -> np.ndarray:
    """Q(t) in seconds of one output's parts at times ``t`` (seconds), computed in whole
    nanoseconds (silent parts, which never play, are left out)."""
    played = parts[parts["play_s"].notna()]
    return from_ns(ready_queue(to_ns(played["ready_s"].to_numpy(float)), to_ns(played["play_s"].to_numpy(float)),
                               to_ns(played["end_s"].to_numpy(float)), to_ns(t)))


def queue_delta(parts: pd.DataFrame, source_s: pd.Series, *, condition: str, reference: str,
                systems: Sequence[str], points: int = GRID_POINTS) -> tuple[pd.DataFrame, pd.DataFrame]:
    """ΔQ per talk and its summary across talks.

    ``parts``: per-part replay with output keys (seconds); ``source_s``: S per talk_id
    (seconds). ΔQ (seconds of ready-but-unplayed audio) is taken at ``points`` evenly
    spaced fractions ``u`` of S, 0 and 1 included.
    Returns (per-talk rows ``[panel…], system, talk_id, u, delta_q_s`` and summary rows
    ``[panel…], system, u, n_talks, mean_s, p25_s, p75_s``). Talks lacking either
    output are left out (the summary's ``n_talks`` says how many were used).
    """
    u = np.linspace(0.0, 1.0, points)
    panel = [k for k in ("backend", "realization") if k in parts]
    sub = parts[parts["condition"].isin([condition, reference]) & parts["system"].isin(systems)]
    rows = []
    for key, g in sub.groupby(panel + ["system", "talk_id"], sort=False):
        key = key if isinstance(key, tuple) else (key,)
        by_cond = dict(tuple(g.groupby("condition")))
        if condition not in by_cond or reference not in by_cond:
            continue
        t = u * float(source_s[key[-1]])
        dq = queue_at(by_cond[condition], t) - queue_at(by_cond[reference], t)
        rows.append(pd.DataFrame({**dict(zip(panel + ["system", "talk_id"], key)), "u": u, "delta_q_s": dq}))
    cols = panel + ["system", "talk_id", "u", "delta_q_s"]
    per_talk = pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=cols)
    stats = per_talk.groupby(panel + ["system", "u"], sort=False)["delta_q_s"]
    summary = stats.agg(n_talks="count", mean_s="mean").reset_index()
    summary["p25_s"] = stats.quantile(BAND[0] / 100, interpolation="linear").to_numpy()
    summary["p75_s"] = stats.quantile(BAND[1] / 100, interpolation="linear").to_numpy()
    return per_talk, summary
