"""Process pools that never fork a process with threads.

``fork`` copies one thread of a process whose other threads (onnxruntime's, eSpeak NG's, a
progress bar's) may hold locks at that moment; the child can then wait on them forever. CPython
warns about it from 3.12 and stops forking by default in 3.14. Every pool simulplay starts, or
lends to a library that would start one (OmniSTEval's aligner), comes from here:

- :func:`worker_count`: how many workers ``tasks`` items can use on the CPUs this process may run on;
- :func:`pool`: a ``multiprocessing.Pool`` on the ``forkserver`` context (a single-threaded
  server started once per process, which forks the workers; ``spawn`` where there is none),
  or, for one worker, :class:`SerialPool`, which maps in this process.

Workers ignore SIGINT (Ctrl-C in a terminal reaches every process of the group: the parent
stops them) and end on SIGTERM whatever the parent had set (``Pool.terminate`` sends it; an
ignored SIGTERM would survive the exec and leave ``terminate`` waiting).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
from collections.abc import Callable, Iterable
from typing import Any


def worker_count(tasks: int) -> int:
    """Workers worth starting for ``tasks`` independent items: at most one per usable CPU."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(tasks, cpus))


def start_method() -> str:
    """``forkserver`` where the platform has it, else ``spawn``; never ``fork``."""
    return "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"


class SerialPool:
    """The part of ``multiprocessing.Pool`` a single worker needs (``with … as p: p.map(f, xs)``),
    run in this process: no process to start for one item."""

    def __enter__(self) -> SerialPool:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def map(self, func: Callable[[Any], Any], iterable: Iterable[Any], chunksize: int | None = None) -> list[Any]:
        return [func(x) for x in iterable]


def pool(processes: int):
    """A pool of ``processes`` workers that were not forked from this process (see the module)."""
    if processes <= 1:
        return SerialPool()
    return mp.get_context(start_method()).Pool(processes, initializer=_quiet_worker)


def _quiet_worker() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
