"""The serial synthesizer clock and serial playback (SPEC §3–4) as functions of arrays.

All outputs are computed at once: parts of every output sit in flat arrays sorted by
output (``codes``) and order. Nothing here reads or writes files.

Synthesizer: ``start_j = max(dispatch_j, ready_{j-1})``, ``ready_j = start_j + service_j``.
With ``S_j = Σ_{i≤j} service_i`` this is ``ready_j = S_j + max_{k≤j}(dispatch_k − S_{k−1})``.

Playback: ``p_j = max(r_j, C_{j−1})``, ``C_j = p_j + d_j``, ``C_0 = 0``. With
``E_j = Σ_{i≤j} d_i`` this is ``C_j = E_j + max(0, max_{k≤j}(r_k − E_{k−1}))``.
A part with no audio (``d = 0``) is not played: it occupied the synthesizer, but the
player skips it, so it neither starts playback nor adds idle (as SimulEval, which keeps
no segment for empty audio).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulplay.sim.segments import seg_argmax_last, seg_cummax, seg_cumsum, seg_first, seg_last, seg_shift, seg_sum

#: Times closer than this (seconds) are equal: floating-point sums of the same instants
#: differ in the last bits, and a tie must not turn into a sliver of idle or a different
#: limiting event.
TIME_EPS = 1e-9



@dataclass(frozen=True)
class Clock:
    """Synthesizer start and readiness per request, seconds from source start."""

    start: np.ndarray
    ready: np.ndarray


def serial_clock(codes: np.ndarray, dispatch: np.ndarray, service: np.ndarray) -> Clock:
    """One serial synthesizer per output, requests in order (closed form, vectorized)."""
    s = seg_cumsum(service.astype(np.float64), codes)
    s_prev = s - service
    m = seg_cummax(dispatch - s_prev, codes)
    return Clock(start=m + s_prev, ready=m + s)


@dataclass(frozen=True)
class Playback:
    """Per-part playback of the played (positive-duration) parts."""

    codes: np.ndarray
    ready: np.ndarray
    dur: np.ndarray
    play: np.ndarray
    end: np.ndarray
    idle: np.ndarray
    slack: np.ndarray  # r_k − E_{k−1}: the closed form's candidate values


def serial_playback(codes: np.ndarray, ready: np.ndarray, dur: np.ndarray) -> Playback:
    """Serial playback of parts with ``dur > 0`` (callers drop silent parts first)."""
    e = seg_cumsum(dur.astype(np.float64), codes)
    e_prev = e - dur
    slack = ready - e_prev
    end = e + np.maximum(0.0, seg_cummax(slack, codes))
    play = end - dur
    idle = ready - seg_shift(end, codes, 0.0)
    idle = np.where(idle > TIME_EPS, idle, 0.0)
    return Playback(codes, ready, dur, play, end, idle, slack)


@dataclass(frozen=True)
class OutputSummary:
    """Per-output results (arrays of length n_outputs). Times in seconds."""

    first_play: np.ndarray
    audio: np.ndarray
    idle: np.ndarray
    end: np.ndarray
    limiting: np.ndarray  # position into the played-part arrays, -1 if nothing played


def summarize_playback(pb: Playback, n_outputs: int) -> OutputSummary:
    """D, I, first playback, ``C_m`` and the limiting event of each output.

    The limiting event is the last ``k`` maximizing ``r_k + Σ_{j≥k} d_j`` (ties within
    1 ns); idle below 1 ns is floating-point noise and counts as zero. When every
    part was ready before time zero, playback starting at zero limits and the first
    part is reported. Outputs with nothing to play have NaN times.
    """
    audio = seg_sum(pb.dur, pb.codes, n_outputs)
    idle = seg_sum(pb.idle, pb.codes, n_outputs)
    end = seg_last(pb.end, pb.codes, n_outputs)
    first_play = seg_first(pb.play, pb.codes, n_outputs)
    limiting = seg_argmax_last(pb.slack, pb.codes, n_outputs, tol=TIME_EPS)
    first_pos = seg_first(np.arange(len(pb.codes)), pb.codes, n_outputs, fill=-1)
    slack_at = pb.slack[limiting[limiting >= 0]]
    before_zero = np.zeros(n_outputs, bool)
    before_zero[limiting >= 0] = slack_at < -TIME_EPS
    limiting = np.where(before_zero, first_pos, limiting)
    return OutputSummary(first_play, audio, idle, end, limiting.astype(np.int64))


def ready_queue(ready: np.ndarray, play: np.ndarray, end: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Ready-but-unplayed audio ``Q(t) = Σ_{r_j ≤ t} max(0, C_j − max(p_j, t))`` (seconds)
    of one output's played parts, at each time in ``t``."""
    t = np.asarray(t, dtype=np.float64)[:, None]
    remaining = np.maximum(0.0, end[None, :] - np.maximum(play[None, :], t))
    return np.where(ready[None, :] <= t, remaining, 0.0).sum(axis=1)
