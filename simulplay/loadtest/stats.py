"""The numbers of a load curve, from the recorded requests (docs/many-listeners.md, "The load
client").

Every time of a request is relative to its own send (seconds): TTFA = first audible − sent
(the arrival of the piece that ends the first 10 ms window at or above −40 dBFS), first
byte − sent, service = last byte − sent, RTF = service / audio seconds. A request
*underran* when some piece k arrived after ``TTFA + Σ_{i<k} d_i`` (``d_i``: the seconds of
audio piece i holds): a player that started at its first audible audio would have run dry
before piece k. Percentiles are numpy's linear ones over the level's successful requests.
Lateness of a request = its send − when it was due (closed loop: the end of its client's
previous request; open loop: its arrival time).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from simulplay.live.client import Record

_KINDS = (("connection failed", "connection"), ("stalled", "stalled"), ("stream broken", "broken"),
          ("interrupted", "interrupted"), ("not sent", "not sent"))


def failure_kind(rec: Record) -> str:
    """What a failed request is counted under: ``HTTP <status>`` when the server answered
    with a status other than 200, else the kind of failure (connection, stalled, broken…)."""
    if rec.status is not None and rec.status != 200:
        return f"HTTP {rec.status}"
    for needle, kind in _KINDS:
        if needle in rec.error:
            return kind
    return re.sub(r"\s*\(.*", "", rec.error)[:40] or "error"


def underran(rec: Record) -> bool:
    """Whether a piece of ``rec``'s audio arrived after TTFA plus the seconds of audio of the
    pieces before it (all relative to the send); False without audible audio."""
    if not rec.ok or math.isnan(rec.first_audible_s) or not rec.sample_rate:
        return False
    ttfa = rec.first_audible_s - rec.sent_s
    before = np.concatenate([[0], np.cumsum(rec.chunk_n)[:-1]]) / rec.sample_rate
    arrived = np.asarray(rec.chunk_s, float) - rec.sent_s
    return bool(np.any(arrived > ttfa + before))


def request_frame(records: Sequence[Record], levels: Sequence[int], warm: Sequence[bool]) -> pd.DataFrame:
    """One row per request (``levels[i]``, ``warm[i]``: the level and whether it was a warm-up
    request): its times since the level's start (s), the derived TTFA, first byte, service,
    audio (s), RTF, underrun, lateness (s), status and error."""
    rows = []
    for rec, level, w in zip(records, levels, warm):
        ok = rec.ok
        audio = rec.n_samples / rec.sample_rate if ok and rec.sample_rate else math.nan
        service = rec.last_byte_s - rec.sent_s if ok else math.nan
        rows.append({
            "concurrency": int(level), "warm": bool(w), "client": rec.output, "seq": rec.seq, "text": rec.text,
            "due_s": rec.due_s, "sent_s": rec.sent_s, "first_byte_s": rec.first_byte_s,
            "first_audible_s": rec.first_audible_s, "last_byte_s": rec.last_byte_s, "ended_s": rec.ended_s,
            "ttfa_s": rec.first_audible_s - rec.sent_s, "first_byte_rel_s": rec.first_byte_s - rec.sent_s,
            "service_s": service, "audio_s": audio, "rtf": service / audio if audio and audio > 0 else math.nan,
            "chunks": len(rec.chunk_s), "underran": underran(rec), "late_s": rec.sent_s - rec.due_s,
            "status": -1 if rec.status is None else int(rec.status), "ok": ok,
            "failure": "" if ok else failure_kind(rec), "error": rec.error,
        })
    return pd.DataFrame(rows)


def _pct(v: pd.Series, q: float) -> float:
    v = v.dropna().to_numpy(float)
    return float(np.percentile(v, q)) if len(v) else math.nan


def level_row(requests: pd.DataFrame, concurrency: int, wall_s: float) -> dict[str, Any]:
    """One level's row of the load table from its rows of :func:`request_frame`;
    ``wall_s``: the seconds from the level's first timed send to its last end."""
    warm = requests[requests["warm"]]
    timed = requests[~requests["warm"]]
    sent = timed[timed["sent_s"].notna()]
    ok = sent[sent["ok"]]
    failures = sent.loc[~sent["ok"], "failure"].value_counts().sort_index()
    audio = float(ok["audio_s"].sum())
    late = sent["late_s"] * 1e3
    row: dict[str, Any] = {
        "concurrency": int(concurrency), "requests": len(sent), "ok": len(ok), "failed": len(sent) - len(ok),
        "failures": "; ".join(f"{k}: {n}" for k, n in failures.items()),
        "warm_failed": int((~warm["ok"]).sum()),
    }
    for name, col in (("ttfa", "ttfa_s"), ("first_byte", "first_byte_rel_s")):
        for q in (50, 95, 99):
            row[f"{name}_p{q}_s"] = _pct(ok[col], q)
    for q in (50, 95):
        row[f"service_p{q}_s"] = _pct(ok["service_s"], q)
    for q in (50, 95):
        row[f"rtf_p{q}"] = _pct(ok["rtf"], q)
    row.update({"underran": int(ok["underran"].sum()), "audio_s": audio, "wall_s": float(wall_s),
                "audio_per_s": audio / wall_s if wall_s > 0 else math.nan,
                "lateness_p50_ms": _pct(late, 50), "lateness_p99_ms": _pct(late, 99),
                "lateness_max_ms": float(late.max()) if len(late.dropna()) else math.nan})
    return row


def knees(table: pd.DataFrame, ttfa_target_s: float) -> dict[str, int | None]:
    """The first level (concurrency) whose p95 TTFA exceeds ``ttfa_target_s`` seconds, and the
    first level with a request that underran (None: no such level)."""
    t = table.sort_values("concurrency")
    over = t[t["ttfa_p95_s"] > ttfa_target_s]
    under = t[t["underran"] > 0]
    return {"ttfa": int(over["concurrency"].iloc[0]) if len(over) else None,
            "underrun": int(under["concurrency"].iloc[0]) if len(under) else None}
