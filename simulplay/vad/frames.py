"""The detector's frame grid: 16 kHz samples in frames of 512 (32 ms), and how many
frames (probabilities) a waveform of ``n_samples`` at ``rate`` Hz has once soxr has
resampled it to 16 kHz. Pure integer arithmetic, shared by the VAD (its cache checks
lengths) and the edge trimming of :mod:`simulplay.analysis.edges`.
"""

from __future__ import annotations

VAD_RATE = 16_000  # Hz: the detector's sample rate
FRAME = 512  # samples at VAD_RATE per probability (32 ms)


def resampled_length(n_samples: int, rate: int) -> int:
    """Samples at 16 kHz of a waveform of ``n_samples`` at ``rate`` Hz, as soxr makes it
    (``n · 16000 / rate`` rounded half up, in exact integers)."""
    return (2 * n_samples * VAD_RATE + rate) // (2 * rate)


def frame_count(n_samples: int, rate: int) -> int:
    """Probabilities (frames) of a waveform: ``ceil(resampled length / 512)``."""
    return -(-resampled_length(n_samples, rate) // FRAME)
