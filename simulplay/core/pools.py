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
stops them) and end on SIGTERM whatever the parent had set (an ignored SIGTERM survives the
exec). ``Pool.terminate`` stops them with SIGKILL, not SIGTERM: a worker still starting when
``terminate`` runs has not yet reset an inherited SIG_IGN, would survive a SIGTERM, and then wait
forever for the task queue's lock that ``terminate`` holds (seen in CI when the command was
cleaning up after a Ctrl-C). SIGTERM at its default ends a process with no cleanup either, so
nothing else changes.
"""

from __future__ import annotations

import multiprocessing as mp
import multiprocessing.pool
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
    return _Pool(processes, initializer=_quiet_worker, context=mp.get_context(start_method()))


class _Pool(multiprocessing.pool.Pool):
    """``multiprocessing.Pool`` whose ``terminate`` ends its workers with SIGKILL (see the module)."""

    @staticmethod
    def Process(ctx, *args: Any, **kwds: Any):  # noqa: N802 (multiprocessing's name)
        process = ctx.Process(*args, **kwds)
        process.terminate = process.kill
        return process


def _quiet_worker() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
