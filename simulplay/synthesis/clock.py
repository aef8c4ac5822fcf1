"""What a request's clock saw: wall time, CPU time, time spent waiting for a CPU, and load.

Three readings are taken before a request and after it, outside nothing the service clock
covers (SPEC §3: the service clock itself is :func:`time.perf_counter` around the
backend's chunk generator):

* **CPU time** — :func:`time.process_time`: user + system seconds of every thread of the
  process, so onnxruntime's own threads are included.
* **Run-queue wait** — the seconds the process's threads were runnable but waiting for a
  CPU, summed over threads: the ``run_delay`` field of Linux's
  ``/proc/self/task/<tid>/schedstat`` (nanoseconds). It is what other processes (or more
  threads than cores) take from a request, and it is zero on an idle machine. Where the
  file is missing (not Linux, or a kernel without scheduler statistics) it is ``None``.
* **Load** — :func:`os.getloadavg` ``[0]``, the 1-minute load average when the request
  ended: context for a reader (it lags by tens of seconds), not part of any verdict.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

TASKS = Path("/proc/self/task")


_threads: list[str] = []  # this process's thread ids, listed again when one ends or a new one may exist


def run_queue_wait_s() -> float | None:
    """Seconds this process's threads have spent runnable but waiting for a CPU, summed
    over its live threads (Linux ``schedstat``), or None where the kernel does not say.
    The thread list is kept between calls and listed again when a thread has ended or the
    count of threads changed (``/proc/self/status``)."""
    try:
        if not _threads or len(_threads) != _thread_count():
            _threads[:] = os.listdir(TASKS)
    except OSError:
        return None
    total, seen = 0, 0
    for tid in _threads:
        try:
            with open(f"/proc/self/task/{tid}/schedstat", "rb") as fh:
                fields = fh.read().split()
        except OSError:  # the thread ended meanwhile, or no schedstat: list again next time
            _threads.clear()
            continue
        if len(fields) >= 2:
            total += int(fields[1])
            seen += 1
    return total / 1e9 if seen else None


def _thread_count() -> int:
    """The number of threads of this process (``Threads:`` in ``/proc/self/status``)."""
    with open("/proc/self/status", "rb") as fh:
        for line in fh:
            if line.startswith(b"Threads:"):
                return int(line.split()[1])
    return -1


def load1() -> float | None:
    """The 1-minute load average, or None where the platform has none."""
    try:
        return float(os.getloadavg()[0])
    except (OSError, AttributeError):
        return None


@dataclass(frozen=True)
class Reading:
    """CPU time (s) and run-queue wait (s, None: unknown) of the process at one moment."""

    cpu_s: float
    wait_s: float | None

    @classmethod
    def now(cls) -> Reading:
        """The process's CPU seconds and run-queue wait seconds at this moment."""
        return cls(time.process_time(), run_queue_wait_s())


@dataclass(frozen=True)
class RequestClock:
    """One request's clocks: wall (service) time, CPU time and run-queue wait over it (s),
    and the 1-minute load average when it ended."""

    service_s: float
    cpu_s: float
    wait_s: float | None
    load1: float | None

    @classmethod
    def between(cls, before: Reading, service_s: float) -> RequestClock:
        """The clocks from ``before`` (read just before the request) to now."""
        after = Reading.now()
        wait = None if before.wait_s is None or after.wait_s is None else max(0.0, after.wait_s - before.wait_s)
        return cls(service_s, after.cpu_s - before.cpu_s, wait, load1())

    def as_record(self) -> dict[str, float | None]:
        """The fields a store record and a manifest row carry: ``cpu_s``, ``wait_s``, ``load1``."""
        return {"cpu_s": self.cpu_s, "wait_s": self.wait_s, "load1": self.load1}
