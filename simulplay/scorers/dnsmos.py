"""DNSMOS P.835 (SIG, BAK, OVRL) and P.808 from speechmos' bundled ONNX models.

Audio is scored at 16 kHz: int16 samples (÷ 32768) or float samples at full scale ±1 are
resampled with soxr (quality HQ) and clipped to ±1 (the package refuses values beyond).

Windowing: the models score windows of 9.01 s (:data:`WINDOW_S`). Audio of at most one
window goes to speechmos' own function unchanged (``speechmos.dnsmos.run``, which repeats
shorter audio end to end until it fills a window). Longer audio is cut into windows of
9.01 s from its first sample, the last one aligned to the audio's end (so it overlaps the one
before unless the length is a whole number of windows); each window is scored by the same
function and the scores are averaged, each window weighing the same. speechmos itself hops
by 1 s over long audio, which scores every second of audio nine times: ≈ 20 s per minute of
audio on one core, against ≈ 2 s for whole windows, for an average over the same speech.
"""

from __future__ import annotations

import numpy as np

SR = 16_000
WINDOW_S = 9.01
WINDOW = int(WINDOW_S * SR)  # 144,160 samples, as speechmos cuts them
#: Score names, in table order: P.835 signal, background, overall; P.808 overall.
SCORES = ("dnsmos_sig", "dnsmos_bak", "dnsmos_ovrl", "dnsmos_p808")
_PACKAGE_KEYS = ("sig_mos", "bak_mos", "ovrl_mos", "p808_mos")


def to_16k(samples: np.ndarray, rate: int) -> np.ndarray:
    """Mono samples (int16, or float at full scale ±1) at ``rate`` Hz as float32 at 16 kHz
    in −1..1 (soxr HQ when the rate differs)."""
    x = np.asarray(samples)
    x = x / 32768.0 if x.dtype.kind in "iu" else x.astype(np.float64)
    if int(rate) != SR and len(x):
        import soxr

        x = soxr.resample(x, int(rate), SR, quality="HQ")
    return np.clip(x, -1.0, 1.0).astype(np.float32)


def windows(n: int) -> list[tuple[int, int]]:
    """The ``(start, stop)`` sample ranges at 16 kHz that :func:`score` averages for audio of
    ``n`` samples (module docstring): one range for ``n ≤`` :data:`WINDOW`."""
    if n <= WINDOW:
        return [(0, n)]
    starts = list(range(0, n - WINDOW + 1, WINDOW))
    if starts[-1] + WINDOW < n:
        starts.append(n - WINDOW)
    return [(s, s + WINDOW) for s in starts]


def score(samples: np.ndarray, rate: int, max_windows: int | None = None) -> dict[str, float]:
    """DNSMOS of mono audio at ``rate`` Hz: :data:`SCORES` (MOS, 1–5) and ``dnsmos_windows``
    (windows averaged). ``max_windows``: only the first that many windows of
    :func:`windows` (from the first sample), for an excerpt; ``None``: all. Empty audio is a
    ValueError (the caller counts it instead)."""
    x = to_16k(samples, rate)
    if len(x) == 0:
        raise ValueError("DNSMOS needs at least one sample")
    from speechmos import dnsmos

    per_window = [dnsmos.run(x[a:b], SR) for a, b in windows(len(x))[:max_windows]]
    out = {name: float(np.mean([float(w[k]) for w in per_window])) for name, k in zip(SCORES, _PACKAGE_KEYS)}
    return out | {"dnsmos_windows": len(per_window)}


def signature() -> dict[str, str]:
    """What shaped the scores: the package, the models, the rate and the windowing."""
    from importlib.metadata import version

    return {"dnsmos": f"speechmos-{version('speechmos')}", "dnsmos_model": "sig_bak_ovr+model_v8",
            "dnsmos_rate": str(SR), "dnsmos_windows": f"{WINDOW_S}s-tiled,last-aligned,mean",
            "resampler": "soxr-HQ"}
