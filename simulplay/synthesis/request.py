"""One timed synthesis request: the clock around a backend's ``stream(text)``.

The clock starts before the first call into the backend and stops after its last chunk,
so text preparation, inference and the transfer of samples are inside it, while loading,
warm-up and storing are not (SPEC §3).
"""

from __future__ import annotations

import time

import numpy as np

from simulplay.backends.base import Backend


def synthesize_request(backend: Backend, text: str) -> tuple[np.ndarray, float, list[list[float]]]:
    """Synthesize one request with the clock running: int16 samples, service time (s), and
    each chunk's ``[seconds since the request started, n_samples]``."""
    chunks, arrays = [], []
    t0 = time.perf_counter()
    for samples in backend.stream(text):
        chunks.append([time.perf_counter() - t0, int(len(samples))])
        arrays.append(samples)
    service = time.perf_counter() - t0
    audio = np.concatenate(arrays).astype(np.int16) if arrays else np.zeros(0, np.int16)
    return audio, service, chunks
