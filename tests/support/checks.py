"""Assertions and waits shared by tests: one-line CLI errors, and waiting on events.

Tests never sleep for a fixed time to let something happen: they wait until it has
happened (a file appears, a log line is written, a process ends), polling with a
generous overall deadline that only a broken program reaches.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")
DEADLINE_S = 120.0  # what only a hung or broken program takes; the waits return at the event


def assert_one_line_error(proc, *fragments: str) -> None:
    """Exit code 2, one line on stderr holding every fragment, no traceback."""
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    for f in fragments:
        assert f in lines[0], lines[0]


def assert_fault(proc, code: int, *fragments: str) -> str:
    """Exit code ``code``, no traceback, and exactly one error line on stderr (``simulplay:
    error: …``) holding every fragment; any other stderr line is a one-line warning. Returns
    the error line."""
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    errors = [line for line in lines if line.startswith("simulplay: error: ")]
    assert len(errors) == 1, proc.stderr
    assert all(line.startswith("simulplay: warning: ") for line in lines if line not in errors), proc.stderr
    for f in fragments:
        assert f in errors[0], errors[0]
    return errors[0]


def wait_until(condition: Callable[[], T], what: str, *, timeout: float = DEADLINE_S, poll: float = 0.01) -> T:
    """``condition()``'s first truthy value, as soon as it has one; fails naming ``what``
    after ``timeout`` seconds. ``poll`` (seconds) is only how often it looks."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up after {timeout:g} s waiting for {what}")
        time.sleep(poll)


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of process group ``pgid`` (Linux ``/proc``)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended meanwhile
        if fields[0] != "Z" and int(fields[2]) == pgid:
            out.append(int(stat.parent.name))
    return out


def kill_group(pgid: int) -> None:
    """SIGKILL a process group and wait until none of its processes is left."""
    import signal

    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        return
    wait_until(lambda: not group_members(pgid), f"process group {pgid} to end")
