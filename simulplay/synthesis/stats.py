"""What a synthesis run did: counts, failures, retries, worker deaths, audio and service
seconds, per worker, the contention measured by re-timing a sample serially, and the
clock check (probe timings and the verdict, :mod:`.clock_check`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from simulplay.synthesis.clock_check import ClockCheck


@dataclass
class WorkerStats:
    """One worker's synthesized requests and their audio and service seconds."""

    requests: int = 0
    audio_s: float = 0.0
    service_s: float = 0.0


@dataclass
class SynthStats:
    """Requests synthesized, failed, already in the store (skipped), found damaged in the
    store (``damaged``: record or audio unusable, so synthesized again); retries after worker
    deaths; audio and service seconds; per worker; the median parallel/serial service-time
    ratio over ``contention_sample`` re-timed requests (None: not measured); the clock
    probes every worker timed and the clock check of the manifest's requests."""

    synthesized: int = 0
    failed: int = 0
    skipped: int = 0
    damaged: int = 0
    retries: int = 0
    worker_deaths: int = 0
    audio_s: float = 0.0
    service_s: float = 0.0
    failures: list[str] = field(default_factory=list)
    per_worker: dict[str, WorkerStats] = field(default_factory=dict)
    contention_ratio: float | None = None
    contention_sample: int = 0
    probes: list[dict[str, Any]] = field(default_factory=list)
    clock: ClockCheck | None = None
    machine: dict[str, Any] = field(default_factory=dict)  # provenance.machine() at the start, load at the end


def worker_rates(stats: SynthStats) -> pd.DataFrame:
    """Per-worker throughput: requests, audio seconds, service seconds and the real-time
    factor ``rtf = service_s / audio_s`` (NaN for a worker that made no audio)."""
    rows = [{"worker": w, "requests": v.requests, "audio_s": v.audio_s, "service_s": v.service_s,
             "rtf": v.service_s / v.audio_s if v.audio_s else float("nan")} for w, v in stats.per_worker.items()]
    return pd.DataFrame(rows, columns=["worker", "requests", "audio_s", "service_s", "rtf"])
