"""Jobs, outcomes, workers and the driver that writes them into the store.

Workers only synthesize: each loads its backend once, warms it up and runs one request
at a time, returning samples and clocks (:class:`Outcome`). Only the driver writes the
store and later the manifest, so a cluster needs no shared filesystem.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from simulplay.backends.base import Backend, BackendConfig
from simulplay.core.progress import NO_PROGRESS, Progress
from simulplay.store.store import AudioStore
from simulplay.synthesis.clock_check import PROBE_EVERY_S, PROBE_REPEATS, PROBE_TEXT
from simulplay.synthesis.plan import origin_of
from simulplay.synthesis.request import timed_request
from simulplay.synthesis.stats import SynthStats, WorkerStats


@dataclass
class Job:
    """One request to synthesize (a unique request key)."""

    key: str
    text: str
    realization: int
    origin: dict[str, Any]
    attempts: int = 0  # times a worker died while running it
    probe: bool = False  # not a request: the worker re-times the clock probe (the end of a run)


def end_probe() -> Job:
    """The job that asks a worker for its last probe before it stops."""
    return Job("probe", "", 0, {}, probe=True)


@dataclass
class Outcome:
    key: str
    audio: np.ndarray | None
    sample_rate: int
    service_s: float
    chunks: list[list[float]]
    error: str
    worker: str
    host: str
    device: str
    pid: int
    request_attempts: int = 1  # tries inside the backend (e.g. HTTP retries), not worker deaths
    request_errors: list[str] = field(default_factory=list)
    clock: dict[str, float | None] = field(default_factory=dict)  # cpu_s, wait_s, load1 (clock.RequestClock)
    probes: list[dict[str, Any]] = field(default_factory=list)  # probes timed since the previous outcome
    probe_only: bool = False  # the answer to an end_probe() job: no request
    noise_seed: int | None = None  # the seed of the noise the worker's backend drew (Backend.noise_seed)


class WorkerState:
    """A loaded, warmed-up backend inside one worker (made by :meth:`start`). It re-times
    the clock probe before its first request, after the first request that ends
    ``PROBE_EVERY_S`` seconds or more after its last probe, and when asked
    (:func:`end_probe`); the probes travel with the next outcome."""

    def __init__(self, backend: Backend, name: str, host: str, device: str):
        self.name = name
        self.backend = backend
        self.host = host
        self.device = device
        self.runs = 0
        self.last_probe = 0.0  # time.perf_counter() when the last probe ended

    @classmethod
    def start(cls, config: BackendConfig, name: str) -> WorkerState:
        """Create the backend, load it and warm it up (outside every clock)."""
        backend = config.create()
        backend.load()
        backend.warmup()
        return cls(backend, name, socket.gethostname(), str(backend.identity().get("device", "")))

    def probe(self, when: str) -> dict[str, Any]:
        """Time the probe request :data:`PROBE_REPEATS` times in a row: ``when`` (start, every,
        end), the fastest repeat's service time, clocks and audio seconds, and every repeat's
        service time (``repeats_s``)."""
        base = {"worker": self.name, "when": when, "after_requests": self.runs, "time": time.time()}
        try:
            runs = [timed_request(self.backend, PROBE_TEXT) for _ in range(PROBE_REPEATS)]
        except Exception as e:  # noqa: BLE001 - a probe that fails is recorded, never fatal
            return {**base, "service_s": None, "error": f"{type(e).__name__}: {e}"[:200]}
        finally:
            self.last_probe = time.perf_counter()
        done = min(runs, key=lambda r: r.service_s)  # the fastest of the repeats counts
        rate = int(self.backend.sample_rate) or 1
        return {**base, "service_s": done.service_s, **done.clock.as_record(), "audio_s": len(done.audio) / rate,
                "repeats_s": [r.service_s for r in runs]}

    def run(self, job: Job) -> Outcome:
        if job.probe:
            return Outcome(job.key, None, 0, float("nan"), [], "", self.name, self.host, self.device, os.getpid(),
                           probes=[self.probe("end")] if self.runs else [], probe_only=True)
        probes = [self.probe("start")] if self.runs == 0 else []
        self.backend.prepare(job.realization)
        clock: dict[str, float | None] = {}
        try:
            done = timed_request(self.backend, job.text)
            audio, service, chunks, error = done.audio, done.service_s, done.chunks, ""
            clock = done.clock.as_record()
        except Exception as e:  # noqa: BLE001 - any backend failure is recorded, never dropped
            audio, service, chunks = None, float("nan"), []
            error = f"{type(e).__name__}: {e}".replace("\n", " ")[:500]
        self.runs += 1
        if time.perf_counter() - self.last_probe >= PROBE_EVERY_S:
            probes.append(self.probe("every"))
        return Outcome(job.key, audio, int(self.backend.sample_rate), service, chunks, error, self.name,
                       self.host, self.device, os.getpid(),
                       max(1, int(getattr(self.backend, "last_attempts", 1) or 1)),
                       list(getattr(self.backend, "last_errors", []) or []), clock, probes,
                       noise_seed=getattr(self.backend, "noise_seed", None))

    def close(self) -> None:
        self.backend.close()


def died(job: Job, worker: str, retries: int) -> Outcome:
    return Outcome(job.key, None, 0, float("nan"), [], f"WorkerDied: worker {worker} died while synthesizing "
                   f"this request ({job.attempts} times; retry limit {retries})", worker, "", "", 0)


class Driver:
    """Claims keys, receives outcomes, writes audio and records, counts everything."""

    def __init__(self, store: AudioStore, progress: Progress = NO_PROGRESS):
        self.store = store
        self.progress = progress
        self.stats = SynthStats()
        self.locks: dict[str, int] = {}
        self.deferred: list[Job] = []  # keys another process was synthesizing
        self.run_id = f"{int(time.time() * 1e6)}-{os.getpid()}"  # names this run's probes in the store

    def claim(self, unit: list[Job], *, wait: bool = False) -> tuple[list[Job], list[Job]]:
        """Lock the unit's keys; returns (ours, held by another process). Keys whose
        record appeared meanwhile are dropped (counted as skipped)."""
        mine, busy = [], []
        for job in unit:
            fd = self.store.try_lock(job.key, wait=wait)
            if fd is None:
                busy.append(job)
            elif self.store.get_record(job.key) is not None:
                self.store.unlock(fd, job.key)
                self.stats.skipped += 1
            else:
                self.locks[job.key] = fd
                mine.append(job)
        return mine, busy

    def release_all(self) -> None:
        """Unlock (and remove the lock files of) every key this process still holds."""
        for key, fd in self.locks.items():
            self.store.unlock(fd, key)
        self.locks.clear()

    def retry(self, job: Job) -> None:
        self.stats.retries += 1
        self.store.log_event({"event": "retry", "key": job.key, "attempt": job.attempts, "pid": os.getpid()})

    def outcome(self, job: Job, out: Outcome) -> None:
        self.stats.probes.extend(out.probes)
        if out.probe_only:
            return
        meta = {"origin": job.origin, "worker": out.worker, "host": out.host, "pid": out.pid,
                "device": out.device, "attempts": job.attempts + 1, "clock_run": self.run_id,
                "request_attempts": out.request_attempts, "request_errors": out.request_errors,
                **({"noise_seed": out.noise_seed} if out.noise_seed is not None else {})}
        if out.error:
            failure = self.store.get_failure(job.key) or {}
            self.store.put_failure(job.key, {**meta, "error": out.error,
                                             "runs": failure.get("runs", 0) + 1})
            self.store.log_event({"event": "failed", "key": job.key, "worker": out.worker, "error": out.error})
            self.stats.failed += 1
            self.stats.failures.append(out.error)
            audio_s = 0.0
        else:
            audio_key = self.store.put_audio(out.audio, out.sample_rate)
            audio_s = len(out.audio) / out.sample_rate
            n = int(len(out.audio))
            check = {"audio_check": self.store.audio_check(audio_key, n, out.sample_rate)} if audio_key else {}
            self.store.put_record(job.key, {**meta, "audio_key": audio_key, "sample_rate": out.sample_rate,
                                            "n_samples": n, "service_s": out.service_s, **out.clock,
                                            "chunks": out.chunks, "created": time.time(), **check})
            self.store.log_event({"event": "synthesized", "key": job.key, "pid": out.pid, "worker": out.worker})
            self.stats.synthesized += 1
            self.stats.audio_s += audio_s
            self.stats.service_s += out.service_s
            w = self.stats.per_worker.setdefault(out.worker, WorkerStats())
            w.requests += 1
            w.audio_s += audio_s
            w.service_s += out.service_s
        fd = self.locks.pop(job.key, None)
        if fd is not None:
            self.store.unlock(fd, job.key)
        self.progress.advance(audio_s=audio_s, work_s=0.0 if out.error else out.service_s)


def todo_jobs(plan: pd.DataFrame, store: AudioStore, loops: dict | None = None) -> tuple[list, int, int]:
    """Units of work: the missing keys grouped by output, in plan order; each key once.
    A completed key whose record or audio is damaged (:meth:`AudioStore.record_problem`) is
    discarded (logged as ``damaged``) and synthesized again. A placeholder row of a
    closed-loop output (its key in ``loops``) is that output's loop unit
    (:class:`simulplay.synthesis.loop.LoopUnit`), at its place in the order.

    Returns (units, keys already in the store and sound, keys found damaged)."""
    first = plan.drop_duplicates("key")
    done = store.completed_keys() & set(first["key"])
    damaged = 0
    for key in sorted(done):
        problem = store.record_problem(key)
        if problem is not None:
            store.discard(key, problem)
            done.discard(key)
            damaged += 1
    todo = first[~first["key"].isin(done)]
    units: dict[tuple, list[Job]] = {}
    loops = loops or {}
    for row in todo.to_dict("records"):
        out = (row["talk_id"], row["system"], row["condition"], row["realization"])
        if row["key"] in loops:
            units[out] = loops[row["key"]]
            continue
        units.setdefault(out, []).append(Job(row["key"], row["text"], int(row["realization"]), origin_of(row)))
    return list(units.values()), int(len(first) - len(todo)), damaged


def is_dynamic(unit) -> bool:
    """Whether a unit makes its jobs as it goes (a closed-loop output's loop unit)."""
    return bool(getattr(unit, "dynamic", False))


def split_units(units: list[list[Job]], workers: int) -> list[list[Job]]:
    """With fewer outputs than workers, split outputs into runs of consecutive requests
    (only for stateless request backends)."""
    if not units or len(units) >= workers:
        return units
    parts = -(-workers // len(units))
    out = []
    for unit in units:
        if is_dynamic(unit):
            out.append(unit)
            continue
        size = max(1, -(-len(unit) // parts))
        out += [unit[i:i + size] for i in range(0, len(unit), size)]
    return out
