"""Small objects for tests: streams, traces and manifests."""

from __future__ import annotations

import numpy as np
import pandas as pd

from simulplay.traces.model import Stream


def stream(times, texts=None, glue=None, source_s=100.0, talk_id="t1", system="A") -> Stream:
    times = np.asarray(times, dtype=float)
    texts = tuple(texts) if texts is not None else tuple(f"w{i}" for i in range(len(times)))
    glue = np.asarray(glue, dtype=bool) if glue is not None else np.zeros(len(times), bool)
    return Stream(talk_id, system, source_s, times, texts, glue)


def trace_frame(n_streams=2, n_updates=5, source_s=30.0) -> pd.DataFrame:
    rows = []
    for k in range(n_streams):
        for i in range(n_updates):
            rows.append({"talk_id": f"talk{k // 2}", "system": "AF"[k % 2], "seq": i,
                         "time_s": float(i), "text": f"word{i} more", "source_s": source_s})
    return pd.DataFrame(rows)


def manifest(outputs: dict, source_s=20.0) -> pd.DataFrame:
    """``outputs``: {(talk, system, condition): [(dispatch, service, audio), ...]}."""
    rows = []
    for (talk, system, cond), reqs in outputs.items():
        for i, (d, s, a) in enumerate(reqs):
            rows.append({"talk_id": talk, "system": system, "condition": cond, "seq": i,
                         "dispatch_s": d, "service_s": s, "audio_s": a, "source_s": source_s})
    return pd.DataFrame(rows)


def reference_playback(ready, dur):
    """The SPEC §4 recurrence, one part at a time, skipping silent parts."""
    c_prev, first, idle, d_sum, ends = 0.0, None, 0.0, 0.0, []
    for r, d in zip(ready, dur):
        if d <= 0:
            ends.append(None)
            continue
        p = max(r, c_prev)
        idle += max(0.0, r - c_prev)
        first = p if first is None else first
        c_prev = p + d
        d_sum += d
        ends.append(c_prev)
    return {"first": first, "idle": idle, "audio": d_sum, "end": c_prev if first is not None else None,
            "ends": ends}


def reference_clock(dispatch, service):
    ready, prev = [], -np.inf
    for d, s in zip(dispatch, service):
        start = max(d, prev)
        prev = start + s
        ready.append(prev)
    return np.array(ready)
