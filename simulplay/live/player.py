"""The virtual player of a live run: what each listener heard, from the client's records.

No sound device: a part *plays* once it has arrived and the previous part has finished,
``p_j = max(arrival_j, C_{j−1})``, ``C_j = p_j + d_j`` (docs/concepts.md#serial-playback),
on the client's own clock. With request release a part is a request, arriving at its last
byte; with chunk release a part is a received piece of audio, arriving when it arrived.
Parts without audio are skipped (replay's ``--silent-parts skip``). Times are int64
nanoseconds inside (exact sums) and float seconds since the output's time 0 outside;
durations come from sample counts. The same recording gives both releases.

Per output: first playback ``p_1``, audio ``D``, idle ``I = Σ max(0, arrival_j − C_{j−1})``
(the wait before the first part is idle), end ``C_m`` and ``L = C_m − S``, and the stalls
of :func:`simulplay.analysis.player.stalls` (a wait after the first part strictly longer than
10 ms). An output with a failed request plays what arrived and is marked incomplete.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from simulplay.analysis.player import stalls, timeline
from simulplay.core.timebase import dur_ns, from_ns, to_ns
from simulplay.live.client import Record

RELEASES = ("request", "chunk")
MIN_STALL_S = 0.010


def parts(records: Sequence[Record], release: str) -> list[tuple[int, int, int, int]]:
    """The played parts of one output in play order: (seq, chunk, arrival ns, duration ns);
    chunk is −1 under request release. Failed requests contribute nothing."""
    out = []
    for rec in records:
        if not rec.ok or rec.n_samples == 0:
            continue
        if release == "request":
            out.append((rec.seq, -1, int(to_ns(rec.last_byte_s)), _dur_ns(rec.n_samples, rec.sample_rate)))
        else:
            done = 0
            for k, (t, n) in enumerate(zip(rec.chunk_s, rec.chunk_n)):  # durations from running sample totals
                before = _dur_ns(done, rec.sample_rate)
                done += n
                out.append((rec.seq, k, int(to_ns(t)), _dur_ns(done, rec.sample_rate) - before))
    return out


def _dur_ns(n: int, rate: int) -> int:
    return int(dur_ns(n, rate)) if n else 0


def play(records: Sequence[Record], source_s: float, release: str) -> tuple[dict, list[dict]]:
    """One output's summary and timeline rows (seconds since its time 0)."""
    rows, end, idle, first = [], 0, 0, None
    for seq, chunk, arrival, dur in parts(records, release):
        start = max(arrival, end)
        wait = max(0, arrival - end)
        idle += wait
        first = start if first is None else first
        rows.append({"seq": seq, "chunk": chunk, "arrival_s": from_ns(arrival), "play_s": from_ns(start),
                     "end_s": from_ns(start + dur), "audio_s": from_ns(dur), "wait_s": from_ns(wait)})
        end = start + dur
    heard = first is not None
    arrivals = [r["arrival_s"] for r in rows]
    st = stalls(timeline(arrivals, [r["audio_s"] for r in rows]), 0, int(to_ns(MIN_STALL_S))) if heard else None
    audible = [r.first_audible_s for r in records if r.ok and not np.isnan(r.first_audible_s)]
    summary = {
        "n_requests": len(records), "n_failed": sum(1 for r in records if not r.ok),
        "n_parts": len(rows),
        "first_play_s": from_ns(first) if heard else np.nan,
        "first_audible_s": audible[0] if audible else np.nan,
        "audio_s": from_ns(sum(int(to_ns(r["audio_s"])) for r in rows)) if rows else 0.0,
        "idle_s": from_ns(idle) if heard else 0.0,
        "end_s": from_ns(end) if heard else np.nan,
        "offset_s": from_ns(end - int(to_ns(source_s))) if heard else np.nan,
        "source_s": source_s,
        "stall_count": st.count if st else 0,
        "stall_total_s": from_ns(st.total) if st else 0.0,
        "stall_longest_s": from_ns(st.longest) if st else 0.0,
    }
    return summary, rows
