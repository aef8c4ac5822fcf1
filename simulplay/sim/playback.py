"""The serial synthesizer clock and serial playback (docs/concepts.md#serial-playback) as functions of arrays.

All outputs are computed at once: parts of every output sit in flat arrays sorted by
output (``codes``) and order. Nothing here reads or writes files.

Every time and duration here is an int64 count of nanoseconds (see
:mod:`simulplay.core.timebase`: callers convert seconds once with ``to_ns`` or derive
durations from sample counts with ``part_dur_ns``, and convert results back with
``from_ns``). Sums, maxima and comparisons are therefore exact: a part ready exactly when
the previous one ends is a tie (no idle, the later part is the limiting event), with no
tolerance. Float arrays are refused, so a caller still passing seconds fails loudly.

Synthesizer: ``start_j = max(dispatch_j, ready_{j-1})``, ``ready_j = start_j + service_j``.
With ``S_j = Σ_{i≤j} service_i`` this is ``ready_j = S_j + max_{k≤j}(dispatch_k − S_{k−1})``.

Playback: ``p_j = max(r_j, C_{j−1})``, ``C_j = p_j + d_j``, ``C_0 = 0``. With
``E_j = Σ_{i≤j} d_i`` this is ``C_j = E_j + max(0, max_{k≤j}(r_k − E_{k−1}))``.
Silent parts (``d = 0``, e.g. a punctuation-only request) have two readings; both cost
their service time on the synthesizer clock:

* ``skip`` (the default, as SimulEval, which keeps no segment for empty audio): the part
  is not played — callers drop it before :func:`serial_playback`, so it neither starts
  playback nor adds idle, and it is never the limiting event.
* ``hold`` (Eq. 1 taken literally): the part enters playback like any other, so
  ``p_j = max(r_j, C_{j−1})`` and ``C_j = p_j``: it holds the clock at its readiness.
  A silent first part makes the first playback ``p_1 = r_1`` (nothing is heard yet), a
  silent part ready after the previous audio ends adds that wait to idle, and a silent
  last part ready after the audio ends moves ``C_m`` to its readiness and is then the
  limiting event. ``C_m = D + I`` holds under both readings.

An output without any audio has no end under either reading (nothing is heard).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulplay.sim.segments import seg_argmax_last, seg_cummax, seg_cumsum, seg_first, seg_last, seg_shift, seg_sum


def _ns(name: str, values) -> np.ndarray:
    a = np.asarray(values)
    if a.dtype.kind not in "iu":
        raise TypeError(f"{name} must be integer nanoseconds (simulplay.core.timebase.to_ns), got {a.dtype}")
    return a.astype(np.int64, copy=False)


@dataclass(frozen=True)
class Clock:
    """Synthesizer start and readiness per request, int64 ns from source start."""

    start: np.ndarray
    ready: np.ndarray


def serial_clock(codes: np.ndarray, dispatch: np.ndarray, service: np.ndarray) -> Clock:
    """One serial synthesizer per output, requests in order (closed form, vectorized).

    ``dispatch`` (ns from source start) and ``service`` (ns, ≥ 0) per request.
    """
    dispatch, service = _ns("dispatch", dispatch), _ns("service", service)
    s = seg_cumsum(service, codes)
    s_prev = s - service
    m = seg_cummax(dispatch - s_prev, codes)
    return Clock(start=m + s_prev, ready=m + s)


@dataclass(frozen=True)
class Playback:
    """Per-part playback of the played (positive-duration) parts, int64 ns."""

    codes: np.ndarray
    ready: np.ndarray
    dur: np.ndarray
    play: np.ndarray
    end: np.ndarray
    idle: np.ndarray
    slack: np.ndarray  # r_k − E_{k−1}: the closed form's candidate values


def serial_playback(codes: np.ndarray, ready: np.ndarray, dur: np.ndarray) -> Playback:
    """Serial playback of parts with ``dur > 0`` (callers drop silent parts first).

    ``ready`` in ns from source start, ``dur`` in ns. Idle before a part is
    ``max(0, r_j − C_{j−1})`` exactly (the initial wait counts, ``C_0 = 0``).
    """
    ready, dur = _ns("ready", ready), _ns("dur", dur)
    e = seg_cumsum(dur, codes)
    e_prev = e - dur
    slack = ready - e_prev
    end = e + np.maximum(0, seg_cummax(slack, codes))
    play = end - dur
    idle = np.maximum(0, ready - seg_shift(end, codes, 0))
    return Playback(codes, ready, dur, play, end, idle, slack)


@dataclass(frozen=True)
class OutputSummary:
    """Per-output results (arrays of length n_outputs), int64 ns.

    ``played`` says which outputs have audio; the times of the others are 0 and mean
    nothing (callers write them as missing).
    """

    played: np.ndarray
    first_play: np.ndarray
    audio: np.ndarray
    idle: np.ndarray
    end: np.ndarray
    limiting: np.ndarray  # position into the played-part arrays, -1 if nothing played


def summarize_playback(pb: Playback, n_outputs: int) -> OutputSummary:
    """D, I, first playback, ``C_m`` and the limiting event of each output (int64 ns).

    The limiting event is the last ``k`` maximizing ``r_k + Σ_{j≥k} d_j`` (exact ties:
    the later part). When that maximum is below ``Σ d`` (every part was ready before
    playback starting at time zero could reach it), playback starting at zero limits and
    the first part is reported.
    """
    codes = pb.codes
    played = np.bincount(codes, minlength=n_outputs) > 0 if len(codes) else np.zeros(n_outputs, bool)
    audio = seg_sum(pb.dur, codes, n_outputs)
    idle = seg_sum(pb.idle, codes, n_outputs)
    end = seg_last(pb.end, codes, n_outputs, fill=0)
    first_play = seg_first(pb.play, codes, n_outputs, fill=0)
    limiting = seg_argmax_last(pb.slack, codes, n_outputs)
    first_pos = seg_first(np.arange(len(codes)), codes, n_outputs, fill=-1)
    before_zero = np.zeros(n_outputs, bool)
    before_zero[limiting >= 0] = pb.slack[limiting[limiting >= 0]] < 0
    limiting = np.where(before_zero, first_pos, limiting)
    return OutputSummary(played, first_play, audio, idle, end, limiting.astype(np.int64))


def ready_queue(ready: np.ndarray, play: np.ndarray, end: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Ready-but-unplayed audio ``Q(t) = Σ_{r_j ≤ t} max(0, C_j − max(p_j, t))`` (ns) of one
    output's played parts, at each time in ``t``; all arguments in ns."""
    ready, play, end = _ns("ready", ready), _ns("play", play), _ns("end", end)
    t = _ns("t", t)[:, None]
    remaining = np.maximum(0, end[None, :] - np.maximum(play[None, :], t))
    return np.where(ready[None, :] <= t, remaining, 0).sum(axis=1, dtype=np.int64)
