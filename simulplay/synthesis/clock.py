"""What a request's clock saw: wall time, CPU time, time spent waiting for a CPU, and load.

Three readings are taken before a request and after it, outside nothing the service clock
covers (docs/concepts.md#the-service-clock: the service clock itself is :func:`time.perf_counter` around the
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
import threading
import time
from dataclasses import dataclass
from pathlib import Path

TASKS = Path("/proc/self/task")


class _Schedstats:
    """Open ``schedstat`` files of this process's threads, read again with ``pread`` (a read
    costs about 2 µs where opening the file anew costs about 20 µs: two readings per request).
    The thread list is compared with ``/proc/self/task`` at every reading: a thread that
    ended is dropped and its file closed, a new one is opened (so a forked child, whose
    threads are not its parent's, drops the files it inherited at its first reading)."""

    def __init__(self) -> None:
        self.fds: dict[str, int] = {}  # thread id → its open schedstat file
        self.lock = threading.Lock()  # readings from several threads must not close each other's files

    def total_ns(self) -> int | None:
        with self.lock:
            return self._total_ns()

    def _total_ns(self) -> int | None:
        try:
            live = os.listdir(TASKS)
        except OSError:
            return None
        for tid in set(self.fds) - set(live):
            os.close(self.fds.pop(tid))
        total, seen = 0, 0
        for tid in live:
            fd = self.fds.get(tid)
            try:
                if fd is None:
                    fd = self.fds[tid] = os.open(TASKS / tid / "schedstat", os.O_RDONLY)
                fields = os.pread(fd, 128, 0).split()
            except OSError:  # the thread ended meanwhile, or the kernel keeps no schedstat
                if fd is not None:
                    os.close(self.fds.pop(tid))
                continue
            if len(fields) >= 2:
                total += int(fields[1])
                seen += 1
        return total if seen else None


_schedstats = _Schedstats()


def run_queue_wait_s() -> float | None:
    """Seconds this process's threads have spent runnable but waiting for a CPU, summed
    over its live threads (Linux ``schedstat``), or None where the kernel does not say."""
    total = _schedstats.total_ns()
    return None if total is None else total / 1e9


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
