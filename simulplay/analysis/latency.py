"""SimulEval 1.1.4's speech-output latency metrics, computed the way SimulEval computes them.

One output is a list of audible parts, each with a *delay* (when it may start playing)
and a *duration*, plus the source length. Units are SimulEval's: every time is in
**milliseconds** on the source clock (ms from source start); ``rtf`` is a ratio and the
counts are counts.

SimulEval plays the parts serially (``SpeechOutputInstance.summarize``): the first part
starts at its delay; part ``j`` starts at ``max(delay_j, end_{j−1})``; a *silence* is a
gap between two parts (the wait before the first part is not one). Its scorers then give

* ``start_offset_ms`` = the first delay; ``end_offset_ms`` = end of the last part − source;
* ``num_chunks`` = the number of parts;
* ``discontinuity_sum_ms`` / ``_ave_ms`` / ``_num`` = sum, mean (0 without any) and count
  of the silences;
* ``rtf`` = end of the last part / source length (1 + L/S, not a compute real-time factor);
* ``atd_ms`` = Average Token Delay for speech input and speech output (``ATDScorer``): the
  source and every run of parts with equal delay are cut into 300 ms pseudo-tokens (plus
  the remainder), the target tokens play serially from their chunk's delay, and the t-th
  target token is paired with the t-th source token read by then.

The float operations are SimulEval's, in its order (a strict ``>`` for a silence, running
sums in ms, ``divmod`` for tokens, ``statistics.mean``), so the results are equal to its
scorers' bit for bit. A consequence: two parts that touch exactly in seconds can be
1e-13 ms apart in milliseconds, which SimulEval counts as a silence; so does this module.
Nothing here reads files.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from statistics import mean

#: SimulEval's pseudo-token length for speech (``ATDScorer``: 300 ms per word), ms.
TOKEN_MS = 300
#: The metric columns, in the order of the latency table (the ``_ca`` form repeats them).
METRIC_COLUMNS = ("start_offset_ms", "end_offset_ms", "atd_ms", "num_chunks", "discontinuity_sum_ms",
                  "discontinuity_ave_ms", "discontinuity_num", "rtf")
COUNT_COLUMNS = ("num_chunks", "discontinuity_num")
#: What the metrics follow (written into every signature).
DEFINITION = "simuleval-1.1.4/speech-output"


@dataclass(frozen=True)
class SpeechPlayback:
    """SimulEval's serial playback of one output: each part's ``(start_ms, duration_ms)``
    and the silences between parts (ms), in part order."""

    intervals: tuple[tuple[float, float], ...]
    silences: tuple[float, ...]

    @property
    def end_ms(self) -> float:
        """End of the last part, ms from source start."""
        start, duration = self.intervals[-1]
        return start + duration


def speech_playback(delays_ms: Sequence[float], durations_ms: Sequence[float]) -> SpeechPlayback:
    """Serial playback of parts with the given delays and durations (ms; at least one part)."""
    intervals, silences = [], []
    prev_end = delays_ms[0]
    for delay, duration in zip(delays_ms, durations_ms):
        start = max(prev_end, delay)
        if start > prev_end:  # strict, no tolerance: SimulEval's test
            silences.append(start - prev_end)
        prev_end = start + duration
        intervals.append((start, duration))
    return SpeechPlayback(tuple(intervals), tuple(silences))


def _pseudo_tokens(length_ms: float) -> list[float]:
    """A stretch cut into 300 ms tokens and its remainder (SimulEval's ``divmod``)."""
    whole, rest = divmod(length_ms, TOKEN_MS)
    return [TOKEN_MS] * int(whole) + ([rest] if rest != 0 else [])


def atd_speech(delays_ms: Sequence[float], durations_ms: Sequence[float]) -> float:
    """Average Token Delay (ms) of speech output for speech input, as SimulEval's ``ATDScorer``
    (not computation-aware). ``delays_ms`` must not decrease (SimulEval's chunking assumes
    it); parts with equal consecutive delays form one chunk."""
    chunk_delays: list[float] = []
    chunk_durations: list[float] = []
    for delay, duration in zip(delays_ms, durations_ms):
        if chunk_delays and delay == chunk_delays[-1]:
            chunk_durations[-1] += duration
        else:
            chunk_delays.append(delay)
            chunk_durations.append(duration)
    # source: the stretch read between consecutive chunk delays (from 0), in tokens
    src_end = [0.0]  # end time of source token k (k = 0: nothing read)
    src_upto = [0]  # source tokens in chunks 1..i
    previous: float = 0
    for delay in chunk_delays:
        for length in _pseudo_tokens(delay - previous):
            src_end.append(src_end[-1] + length)
        src_upto.append(len(src_end) - 1)
        previous = delay
    # target: tokens of each chunk play serially from the chunk's delay
    tgt_upto = [0]
    gaps: list[float] = []
    end: float = 0
    t = 0
    for c, (delay, duration) in enumerate(zip(chunk_delays, chunk_durations), start=1):
        tokens = _pseudo_tokens(duration)
        lead = max(0, tgt_upto[c - 1] - src_upto[c - 1])  # target tokens ahead of the source before chunk c
        for length in tokens:
            t += 1
            end = max(delay, end) + length
            s = min(t - lead, src_upto[c])
            gaps.append(end - src_end[s])
        tgt_upto.append(tgt_upto[-1] + len(tokens))
    return float(mean(gaps))


def speech_metrics(delays_ms: Sequence[float], durations_ms: Sequence[float], source_ms: float) -> dict[str, float]:
    """The eight metrics of one output (keys :data:`METRIC_COLUMNS`; times in ms, ``rtf`` a
    ratio) from its parts' delays and durations and the source length, all in ms; at least
    one part."""
    pb = speech_playback(delays_ms, durations_ms)
    end = pb.end_ms
    total = sum(pb.silences)
    return {
        "start_offset_ms": delays_ms[0],
        "end_offset_ms": end - source_ms,
        "atd_ms": atd_speech(delays_ms, durations_ms),
        "num_chunks": len(delays_ms),
        "discontinuity_sum_ms": float(total),
        "discontinuity_ave_ms": float(total / len(pb.silences)) if pb.silences else 0.0,
        "discontinuity_num": len(pb.silences),
        "rtf": end / source_ms,
    }
