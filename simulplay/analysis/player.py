"""Streaming player metrics on one output's part timeline (docs/metrics.md#player-metrics; after Veeksha).

Pure functions of arrays; nothing here reads or writes files. The definitions follow
Veeksha's audio-interactivity evaluator (``project-vajra/veeksha``) and agree with it
value for value on the timelines in ``tests/agreement/test_player_veeksha.py``.

Conventions
-----------
* Times and durations enter in seconds and are taken once to the nearest nanosecond
  (:func:`simulplay.core.timebase.to_ns`), so every sum and comparison below is exact: a
  part that arrives exactly when the player needs it is on time, and a part of exactly
  one frame completes that frame. Replay's part tables hold whole nanoseconds, so the
  player sees replay's timeline to the nanosecond.
* Parts play in their order (request ``seq``, then chunk). A part with no audio is
  skipped, as in replay (``--silent-parts skip``). A part can be played only once it and
  every earlier part are ready (in-order delivery), so its *arrival* is the running
  maximum of the readiness; on a replayed timeline readiness already increases. Parts
  whose arrivals coincide are one arrival (Veeksha coalesces PCM received at one
  timestamp). With ``hold`` (``--silent-parts hold``, Eq. 1 taken literally) a silent
  part's readiness joins the running maximum (later parts wait for it) and a silent
  part after the last audio holds the end of playback until its readiness
  (:attr:`Timeline.held`).
* Playback with a pre-buffer ``p ≥ 0`` starts at ``t_0 + p`` (``t_0`` is the first
  arrival) and plays serially. Arrival ``k ≥ 1`` waits ``t_k − C_{k−1}`` when positive
  (``C`` = end of the audio already played); that wait is a *stall* when it is strictly
  longer than ``min_stall``. A shorter wait still delays playback but is not counted.
* The deficit of arrival ``k ≥ 1`` is ``t_k − t_0 − Σ_{i<k} a_i`` (``a_i`` = audio of
  arrival ``i``); the required start-up delay is ``max(0, max_k deficit_k)``: the
  smallest pre-buffer with no wait at all.
* Frames: the audio is cut into whole frames of ``frame`` length from its start; frame
  ``f`` arrives with the arrival whose cumulative audio first reaches ``(f+1)·frame``.
  A final partial frame is never a frame.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from simulplay.core.timebase import from_ns, to_ns


@dataclass(frozen=True)
class Timeline:
    """One output's audio supply: distinct arrival instants and the audio arriving at each.

    ``time`` and ``audio`` are int64 nanoseconds; ``time`` strictly increases and every
    ``audio`` entry is positive. ``held`` (ns, ``hold`` reading only): the latest readiness
    of any part, silent ones included; playback cannot end before it.
    """

    time: np.ndarray
    audio: np.ndarray
    held: int | None = None

    def __len__(self) -> int:
        return len(self.time)

    @property
    def total(self) -> int:
        """Total audio, nanoseconds."""
        return int(self.audio.sum())


def timeline(ready_s, audio_s, *, hold: bool = False) -> Timeline:
    """The arrivals of parts given in play order: ``ready_s`` (seconds from source start)
    and ``audio_s`` (seconds of audio, ≥ 0). Silent parts are dropped, arrivals are the
    running maximum of readiness (with ``hold``, silent parts' readiness included), and
    parts arriving at one instant are merged."""
    ready, audio = to_ns(ready_s), to_ns(audio_s)
    if ready.shape != audio.shape or ready.ndim != 1:
        raise ValueError(f"ready_s and audio_s must be 1-D of equal length, got {ready.shape} and {audio.shape}")
    if (audio < 0).any():
        raise ValueError("audio_s must be ≥ 0")
    keep = audio > 0
    held = int(ready.max()) if hold and len(ready) else None
    arrival = (np.maximum.accumulate(ready) if hold and len(ready) else ready)[keep]
    audio = audio[keep]
    if len(arrival) == 0:
        return Timeline(np.zeros(0, np.int64), np.zeros(0, np.int64), held)
    arrival = np.maximum.accumulate(arrival)
    starts = np.flatnonzero(np.r_[True, arrival[1:] != arrival[:-1]])
    return Timeline(arrival[starts], np.add.reduceat(audio, starts), held)


def part_arrivals(ready_s, audio_s, *, hold: bool = False) -> np.ndarray:
    """Per part (in play order), the arrival in seconds: the running maximum of the
    readiness of the parts with audio up to it (with ``hold``, of every part up to it);
    NaN for a silent part."""
    ready, audio = to_ns(ready_s), to_ns(audio_s)
    keep = audio > 0
    out = np.full(len(ready), np.nan)
    if keep.any():
        out[keep] = from_ns(np.maximum.accumulate(ready)[keep] if hold else np.maximum.accumulate(ready[keep]))
    return out


def _deficits(tl: Timeline) -> np.ndarray:
    """``t_k − t_0 − Σ_{i<k} a_i`` for arrivals ``k ≥ 1`` (ns)."""
    return tl.time[1:] - tl.time[0] - np.cumsum(tl.audio)[:-1]


def required_startup_delay(tl: Timeline) -> int:
    """Smallest wait after the first arrival that removes every wait (ns):
    ``max(0, max_{k≥1}(t_k − t_0 − Σ_{i<k} a_i))``. 0 for fewer than two arrivals."""
    d = _deficits(tl)
    return int(max(0, d.max())) if len(d) else 0


def stall_free_prebuffer(tl: Timeline, min_stall: int = 0) -> int:
    """Smallest pre-buffer ``p ≥ 0`` (ns) with no stall longer than ``min_stall`` (ns).

    With a pre-buffer ``p`` the wait before arrival ``k`` is ``deficit_k − max(p, M_{k−1})``
    (``M_{k−1}``: the largest earlier deficit), so only arrivals whose deficit exceeds every
    earlier one by more than ``min_stall`` constrain ``p``. With ``min_stall = 0`` this is
    :func:`required_startup_delay`.
    """
    d = _deficits(tl)
    if len(d) == 0:
        return 0
    binding = np.r_[True, d[1:] > np.maximum.accumulate(d)[:-1] + min_stall]
    return int(max(0, (d[binding] - min_stall).max()))


@dataclass(frozen=True)
class Stalls:
    """Serial playback from ``start`` to ``end``; stalls are waits longer than the threshold
    (``count`` of them, their ``total`` and the ``longest``). Times and durations in ns."""

    start: int
    end: int
    count: int
    total: int
    longest: int


def stalls(tl: Timeline, prebuffer: int = 0, min_stall: int = 0) -> Stalls:
    """Playback starting ``prebuffer`` ns after the first arrival (all arguments in ns).

    The wait before arrival ``k ≥ 1`` is ``deficit_k − max(p, M_{k−1})``; waits strictly
    longer than ``min_stall`` are stalls (count, total, longest). The end of playback is
    ``t_0 + Σ a + max(p, max_k deficit_k)``, and with ``hold`` at least :attr:`Timeline.held`.
    """
    if len(tl) == 0:
        raise ValueError("no audio to play")
    if prebuffer < 0 or min_stall < 0:
        raise ValueError("prebuffer and min_stall must be ≥ 0")
    d = _deficits(tl)
    start = int(tl.time[0]) + prebuffer
    held = tl.held if tl.held is not None else np.iinfo(np.int64).min
    if len(d) == 0:
        return Stalls(start, max(start + tl.total, held), 0, 0, 0)
    earlier = np.maximum.accumulate(np.r_[np.iinfo(np.int64).min, d[:-1]])
    wait = d - np.maximum(prebuffer, earlier)
    hit = wait[wait > min_stall]
    end = int(tl.time[0]) + tl.total + max(prebuffer, int(d.max()))
    return Stalls(start, max(end, held), len(hit), int(hit.sum()), int(hit.max(initial=0)))


def frame_arrivals(tl: Timeline, frame: int) -> tuple[np.ndarray, np.ndarray]:
    """Arrivals that complete at least one whole frame (ns) and how many each completes."""
    if frame <= 0:
        raise ValueError("frame must be > 0")
    done = np.cumsum(tl.audio) // frame
    counts = np.diff(done, prepend=0)
    keep = counts > 0
    return tl.time[keep], counts[keep]


def first_playable(tl: Timeline, frame: int) -> int | None:
    """The first arrival (ns) by which cumulative audio reaches one whole frame, or None."""
    times, _ = frame_arrivals(tl, frame)
    return int(times[0]) if len(times) else None


@dataclass(frozen=True)
class Fluidity:
    """Frame-deadline acceptance: raw counts and the index ``(deadlines − missed) / deadlines``."""

    frames: int
    deadlines: int
    missed: int

    @property
    def index(self) -> float:
        """The share of deadlines met, ``(deadlines − missed) / deadlines``, in [0, 1]."""
        return (self.deadlines - self.missed) / self.deadlines


def fluidity(tl: Timeline, frame: int, startup_delay: int = 0) -> Fluidity | None:
    """Veeksha's fluidity index (after Etalon) over whole frames (all arguments in ns).

    Frame ``f`` has inter-arrival time ``g_f`` (0 for the first) and deadline ``D`` (the
    start-up delay, counted from the first playable frame) for ``f = 0``, ``frame``
    afterwards. With slack ``s`` (initially 0): when ``g_f ≤ deadline + s`` the deadline
    is met and ``s += deadline − g_f``; otherwise ``⌊(g_f − s − deadline) / frame⌋ + 1``
    deadlines are missed (every deadline that elapsed while waiting) and ``s = 0``.

    The slack is a Lindley recursion ``s_f = max(0, s_{f−1} + x_f)`` with
    ``x_f = deadline_f − g_f``, so with ``X`` the running sum of ``x``, ``s_f = X_f −
    min(0, min_{j≤f} X_j)`` and frame ``f`` is late by ``min(0, min_{j<f} X_j) − X_f`` when
    that is positive. Frames completed by one arrival after its first have ``g = 0`` and
    only add slack, so only each arrival's first frame can be late. None without a frame.
    """
    if startup_delay < 0:
        raise ValueError("startup_delay must be ≥ 0")
    times, counts = frame_arrivals(tl, frame)
    if len(times) == 0:
        return None
    first_x = np.r_[startup_delay, frame - np.diff(times)]
    extra = (counts - 1) * frame  # slack added by the later frames of each arrival
    level = np.cumsum(first_x + extra) - extra  # X at each arrival's first frame
    floor = np.minimum.accumulate(np.r_[0, level[:-1]])
    late = floor - level
    late = late[late > 0]
    missed = int((late // frame + 1).sum())
    frames = int(counts.sum())
    return Fluidity(frames=frames, deadlines=frames - len(late) + missed, missed=missed)


def _unit_scale(samples: np.ndarray) -> np.ndarray:
    """Samples as float64 with full scale 1.0 (signed PCM ÷ 2^(bits−1); unsigned centred)."""
    kind = samples.dtype.kind
    if kind == "f":
        return samples.astype(np.float64, copy=False)
    if kind == "i":
        return samples.astype(np.float64) / float(2 ** (8 * samples.dtype.itemsize - 1))
    if kind == "u":
        half = float(2 ** (8 * samples.dtype.itemsize - 1))
        return (samples.astype(np.float64) - half) / half
    raise ValueError(f"samples of dtype {samples.dtype} are not audio")


def first_audible_part(
    waveforms: Sequence[np.ndarray],
    sample_rate: int,
    *,
    window_s: float = 0.010,
    threshold_dbfs: float = -40.0,
) -> int:
    """Index of the part holding the end of the first audible window, or −1 if none.

    ``waveforms`` are the parts' mono samples in play order (silent parts as empty
    arrays), at ``sample_rate`` Hz. The output's audio is cut into consecutive windows of
    ``round(window_s · sample_rate)`` samples from its start (a final partial window keeps
    its real length); a window is audible when its RMS level, relative to full scale 1.0,
    is at or above ``threshold_dbfs`` (within a relative 1e-9 of its power). A window is
    heard once the part holding its last sample has arrived, so that part is returned.
    """
    if sample_rate <= 0:
        raise ValueError("sample_rate must be > 0")
    arrays = [np.asarray(w) for w in waveforms]
    for i, w in enumerate(arrays):
        if w.ndim != 1:
            raise ValueError(f"part {i}: expected mono samples (1-D), got shape {w.shape}")
    if not arrays or sum(len(w) for w in arrays) == 0:
        return -1
    x = np.concatenate([_unit_scale(w) for w in arrays])
    n = max(1, round(window_s * sample_rate))
    starts = np.arange(0, len(x), n)
    power = np.add.reduceat(x * x, starts) / np.minimum(n, len(x) - starts)
    # a level of exactly the threshold counts despite rounding in the mean of squares
    loud = np.flatnonzero(power >= 10.0 ** (threshold_dbfs / 10.0) * (1 - 1e-9))
    if len(loud) == 0:
        return -1
    last_sample = min(len(x), int(starts[loud[0]]) + n) - 1
    ends = np.cumsum([len(w) for w in arrays])
    return int(np.searchsorted(ends, last_sample, side="right"))
