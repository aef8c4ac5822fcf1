"""A CPU hog for the clock-check tests: ``python tests/support/hog.py N`` starts N processes that
spin without pause, prints ``spinning N`` once every one of them runs, and stops them when
its standard input closes. Use :func:`cpu_hog` (a context manager) from a test."""

from __future__ import annotations

import multiprocessing as mp
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def _spin(started) -> None:
    started.set()
    x = 0
    while True:
        x += 1


@contextmanager
def cpu_hog(n: int) -> Iterator[subprocess.Popen]:
    """``n`` spinning processes, running from the moment the block starts (the hog's
    readiness line is awaited) until it ends."""
    proc = subprocess.Popen([sys.executable, str(Path(__file__)), str(n)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.strip() == f"spinning {n}", f"the hog did not start: {line!r}"
        yield proc
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main(n: int) -> None:
    events = [mp.Event() for _ in range(n)]
    procs = [mp.Process(target=_spin, args=(e,), daemon=True) for e in events]
    for p in procs:
        p.start()
    for e in events:
        e.wait()
    print(f"spinning {n}", flush=True)
    sys.stdin.read()  # until the test closes our stdin (or dies)
    for p in procs:
        p.terminate()
    for p in procs:
        p.join()


if __name__ == "__main__":
    main(int(sys.argv[1]))
