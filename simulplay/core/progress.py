"""Progress reporting as a callback: the library says what it does, the caller shows it.

Long loops (synthesis, recognition, VAD inference) take a :class:`Progress` and call
``start(total, label)`` once, ``advance(...)`` after each item and ``close()`` at the
end (also on errors). The library never imports a terminal library; the command line
passes a progress bar (``simulplay.cli.console``), everything else gets
:data:`NO_PROGRESS`, which does nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol


class Progress(Protocol):
    """What a long loop reports: its size, each finished item, its end."""

    def start(self, total: int, label: str) -> None:
        """``total`` items are about to run; ``label`` names the work (e.g. the backend)."""

    def advance(self, n: int = 1, *, audio_s: float = 0.0, work_s: float = 0.0) -> None:
        """``n`` items are done: ``audio_s`` seconds of audio made or read, in ``work_s``
        seconds of measured work (service or inference time)."""

    def close(self) -> None:
        """The loop ended (finished or failed)."""


class NoProgress:
    """A :class:`Progress` that reports nothing (the default of every library call)."""

    def start(self, total: int, label: str) -> None:
        pass

    def advance(self, n: int = 1, *, audio_s: float = 0.0, work_s: float = 0.0) -> None:
        pass

    def close(self) -> None:
        pass


NO_PROGRESS = NoProgress()


@contextmanager
def tracking(progress: Progress | None, total: int, label: str) -> Iterator[Progress]:
    """``start`` on entry, ``close`` on exit (also when the loop raises)."""
    progress = progress or NO_PROGRESS
    progress.start(total, label)
    try:
        yield progress
    finally:
        progress.close()
