"""One timed synthesis request: the clock around a backend's ``stream(text)``.

The clock starts before the first call into the backend and stops after its last chunk,
so text preparation, inference and the transfer of samples are inside it, while loading,
warm-up and storing are not (docs/concepts.md#the-service-clock). The same region's CPU time and run-queue wait are
read just outside it (:mod:`.clock`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from simulplay.backends.base import Backend
from simulplay.synthesis.clock import Reading, RequestClock


@dataclass
class TimedRequest:
    """A request's int16 samples, its chunks (``[seconds since the request started,
    n_samples]`` each) and its clocks (service, CPU and wait seconds; load)."""

    audio: np.ndarray
    chunks: list[list[float]]
    clock: RequestClock

    @property
    def service_s(self) -> float:
        """The request's service time (wall seconds)."""
        return self.clock.service_s


def timed_request(backend: Backend, text: str) -> TimedRequest:
    """Synthesize one request with the clocks running."""
    chunks, arrays = [], []
    before = Reading.now()
    t0 = time.perf_counter()
    for samples in backend.stream(text):
        chunks.append([time.perf_counter() - t0, int(len(samples))])
        arrays.append(samples)
    service = time.perf_counter() - t0
    clock = RequestClock.between(before, service)
    audio = np.concatenate(arrays).astype(np.int16) if arrays else np.zeros(0, np.int16)
    return TimedRequest(audio, chunks, clock)


def synthesize_request(backend: Backend, text: str) -> tuple[np.ndarray, float, list[list[float]]]:
    """Synthesize one request with the clock running: int16 samples, service time (s), and
    each chunk's ``[seconds since the request started, n_samples]``."""
    done = timed_request(backend, text)
    return done.audio, done.service_s, done.chunks
