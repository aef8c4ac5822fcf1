"""The tables of a live run, built from the client's records.

* the **live manifest** (:data:`~simulplay.manifest.columns.MANIFEST_ORDER`, as ``synth``
  writes it) with ``service_s = last byte − sent`` as the client measured it, and its
  **chunk table** (``ready_offset_s = piece arrival − sent``): ``replay``, ``eta`` and
  ``player`` read them as they read a synthesized manifest. A failed request has its
  ``error`` and no service or audio, so its output is incomplete and refused by ``eta``;
* the **requests** table: every recorded time of every request, and its lateness;
* the **timeline** of the virtual player (both releases) and the **outputs** table.

Times are seconds since each output's time 0 in the run's time base: the trace's times
divided by ``--speed`` (``dispatch_s``, ``source_s``), so the manifest describes the
scaled trace that the live run played (docs/live.md, "The time base").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from simulplay.core.keys import OUTPUT_ID
from simulplay.formats.live import REQUEST_COLUMNS
from simulplay.live.client import Record
from simulplay.live.player import RELEASES, play
from simulplay.manifest.columns import CHUNK_ORDER, MANIFEST_ORDER
from simulplay.synthesis.loop import LOOP_COLUMNS

#: A run whose client sent requests later than due by more than this at p99 lagged.
LAG_P99_S = 0.020


def request_rows(plan: pd.DataFrame, records: Sequence[Record]) -> pd.DataFrame:
    """One row per planned request (``plan``: the requests with :data:`OUTPUT_ID` columns,
    in the records' order) with its live times."""
    rows = []
    for rec in records:
        service = rec.last_byte_s - rec.sent_s if rec.ok else np.nan
        rows.append({"dispatch_s": rec.dispatch_s, "due_s": rec.due_s, "released_s": rec.released_s,
                     "sent_s": rec.sent_s, "first_byte_s": rec.first_byte_s, "first_audible_s": rec.first_audible_s,
                     "last_byte_s": rec.last_byte_s, "ended_s": rec.ended_s,
                     "release_late_s": rec.released_s - rec.due_s, "send_late_s": rec.sent_s - rec.due_s,
                     "service_s": service, "n_chunks": len(rec.chunk_n), "n_samples": rec.n_samples,
                     "sample_rate": rec.sample_rate, "status": -1 if rec.status is None else rec.status,
                     "error": rec.error})
    return pd.concat([plan[[*OUTPUT_ID, "seq", "text"]].reset_index(drop=True),
                      pd.DataFrame(rows, columns=list(REQUEST_COLUMNS))], axis=1)


def live_manifest(plan: pd.DataFrame, records: Sequence[Record], audio_key: Callable[[Record], str],
                  host: str) -> pd.DataFrame:
    """The live manifest in ``synth``'s columns; ``audio_key`` stores a request's audio."""
    rows = []
    loop = [c for c in LOOP_COLUMNS if c in plan]  # closed-loop outputs: what each policy saw when it sent
    for i, (row, rec) in enumerate(zip(plan.to_dict("records"), records)):
        ok = rec.ok
        rows.append({**{k: row[k] for k in (*OUTPUT_ID, "seq", "dispatch_s", "source_s", "text", "glue", "trigger",
                                            "n_updates", "group", *loop)},
                     "service_s": rec.last_byte_s - rec.sent_s if ok else np.nan,
                     "audio_s": rec.n_samples / rec.sample_rate if ok and rec.sample_rate else (0.0 if ok else np.nan),
                     "audio_key": audio_key(rec) if ok else "", "sample_rate": rec.sample_rate if ok else 0,
                     "n_samples": rec.n_samples if ok else 0, "reused": False, "error": rec.error if not ok else "",
                     "worker": "live", "host": host, "device": "", "attempts": 1, "request_attempts": 1,
                     "cpu_s": np.nan, "wait_s": np.nan, "load1": np.nan, "contended": False, "synth_order": i,
                     "order_id": 0, "condition_pos": 0, "system_pos": 0})
    out = pd.DataFrame(rows, columns=[*MANIFEST_ORDER, *loop])
    if loop:
        out["in_flight"] = out["in_flight"].astype("Int64")
    return out


def chunk_rows(plan: pd.DataFrame, records: Sequence[Record]) -> pd.DataFrame:
    """The live chunk table: each received piece's arrival since its request was sent."""
    rows = []
    for row, rec in zip(plan.to_dict("records"), records):
        if not rec.ok:
            continue
        for k, (t, n) in enumerate(zip(rec.chunk_s, rec.chunk_n)):
            rows.append({**{c: row[c] for c in (*OUTPUT_ID, "seq")}, "chunk": k, "ready_offset_s": t - rec.sent_s,
                         "audio_s": n / rec.sample_rate, "n_samples": n})
    return pd.DataFrame(rows, columns=list(CHUNK_ORDER))


def player_tables(outputs: pd.DataFrame, sessions: Sequence[Sequence[Record]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The virtual player's per-output summary and timeline, under both releases
    (``outputs``: one row per output with :data:`OUTPUT_ID` and ``source_s``)."""
    summaries, timeline = [], []
    for release in RELEASES:
        for row, records in zip(outputs.to_dict("records"), sessions):
            key = {k: row[k] for k in OUTPUT_ID} | {"release": release}
            summary, parts = play(records, row["source_s"], release)
            summaries.append({**key, **summary, "complete": summary["n_failed"] == 0})
            timeline.extend({**key, **p} for p in parts)
    return pd.DataFrame(summaries), pd.DataFrame(timeline)


def lateness(requests: pd.DataFrame) -> dict[str, Any]:
    """Client lateness over the requests that were sent (ms): p50, p99 and max of the send
    and of the release lateness, and the verdict (``lagged`` when send p99 > 20 ms)."""
    out: dict[str, Any] = {"n": int(requests["sent_s"].notna().sum())}
    for what in ("release", "send"):
        v = requests[f"{what}_late_s"].dropna().to_numpy(float) * 1e3
        out[what] = {q: (float(np.percentile(v, p)) if len(v) else None) for q, p in (("p50_ms", 50), ("p99_ms", 99))}
        out[what]["max_ms"] = float(v.max()) if len(v) else None
    p99 = out["send"]["p99_ms"]
    out["threshold_p99_ms"] = LAG_P99_S * 1e3
    out["verdict"] = "lagged" if p99 is not None and p99 > LAG_P99_S * 1e3 else "on time"
    return out
