"""Edge-silence trimming (docs/diagnostics.md#edge-silence-replay) as pure functions of a probability array.

The detector's frames lie on a 16 kHz grid: frame ``k`` covers 16 kHz samples
``[512·k, 512·(k+1))``, the last frame only up to the end of the waveform (its real
length is kept; the model saw it zero-padded). Each waveform keeps its own sample rate
here: a 16 kHz position ``q`` is sample ``round(q · rate / 16000)`` of the original
(half up), and the end of the last frame is the waveform's last sample.

A frame is speech when its probability is ≥ the threshold. A waveform keeps the samples
from the first speech frame's start minus the guard to the last speech frame's end plus
the guard, clipped to the waveform; interior pauses are kept; there is no padding and no
merging of gaps; a waveform without a speech frame keeps nothing. Nothing here reads
files or runs a model.
"""

from __future__ import annotations

import numpy as np

from simulplay.vad.frames import FRAME, VAD_RATE, frame_count, resampled_length  # noqa: F401  (re-exported)


def frame_bounds(n_frames: int, n_samples: int, rate: int) -> np.ndarray:
    """``n_frames + 1`` frame boundaries in original samples; the last is ``n_samples``."""
    q = np.arange(n_frames + 1, dtype=np.int64) * FRAME
    bounds = (2 * q * rate + VAD_RATE) // (2 * VAD_RATE)
    bounds = np.minimum(bounds, n_samples)
    bounds[-1] = n_samples
    return bounds


def guard_samples(guard_ms: float, rate: int) -> int:
    """The guard in original samples: 16 kHz samples of ``guard_ms`` mapped to ``rate``."""
    q = int(round(guard_ms * VAD_RATE / 1000))
    return (2 * q * rate + VAD_RATE) // (2 * VAD_RATE)


def keep_bounds(probs: np.ndarray, n_samples: int, rate: int, threshold: float,
                guard_ms: float = 100.0) -> tuple[int, int]:
    """``(keep_start, keep_end)`` in original samples (end exclusive); ``(0, 0)`` when no
    frame reaches ``threshold``."""
    probs = np.asarray(probs)
    _check(probs, n_samples, rate)
    speech = np.flatnonzero(probs >= threshold)
    if len(speech) == 0:
        return 0, 0
    bounds = frame_bounds(len(probs), n_samples, rate)
    guard = guard_samples(guard_ms, rate)
    start = max(0, int(bounds[speech[0]]) - guard)
    end = min(n_samples, int(bounds[speech[-1] + 1]) + guard)
    return start, end


def speech_samples(probs: np.ndarray, n_samples: int, rate: int, threshold: float) -> int:
    """Original samples inside frames with probability ≥ ``threshold`` (no guard)."""
    probs = np.asarray(probs)
    _check(probs, n_samples, rate)
    widths = np.diff(frame_bounds(len(probs), n_samples, rate))
    return int(widths[probs >= threshold].sum())


def _check(probs: np.ndarray, n_samples: int, rate: int) -> None:
    want = frame_count(n_samples, rate) if n_samples > 0 else 0
    if probs.ndim != 1 or len(probs) != want:
        raise ValueError(f"{len(probs)} probabilities for {n_samples} samples at {rate} Hz; expected {want}")
