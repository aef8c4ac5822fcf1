"""Atomic writes, the one home of them: a file is written whole or not at all.

Every write goes to a temporary file in the target's folder and is renamed into place, so an
interrupted write never leaves a half-written file; a write the machine refuses (a full disk,
a read-only folder) removes the temporary file and is a one-line
:class:`~simulplay.core.errors.FileFault` naming the target. Tables
(:mod:`simulplay.core.tables`), the store's audio and records, traces and run records all
write through here. A file is created with the mode every other tool gives a new file
(0666 less the process's umask: 0644 under the usual umask 022), not ``mkstemp``'s 0600.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from simulplay.core.errors import FileFault


def _umask() -> int:
    """The process's umask: read from /proc (Linux), else set and restored at once."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextmanager
def _temporary_beside(target: Path) -> Iterator[tuple[int, Path]]:
    """A new temporary file next to ``target``, open (its descriptor, which the caller
    closes) and its path; renamed into place on success. On any error the temporary file
    is removed; an OSError (disk full, read-only) becomes a
    :class:`~simulplay.core.errors.FileFault` naming ``target``."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as e:
        raise FileFault(target, "cannot write", e) from e
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes it 0600
        yield fd, Path(tmp)
        os.replace(tmp, target)
    except BaseException as e:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(e, OSError):
            raise FileFault(target, "cannot write", e) from e
        raise


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path next to ``path`` (for a library that writes to a path);
    rename it into place on success. On any error the temporary file is removed; an
    OSError (disk full, read-only) becomes a :class:`~simulplay.core.errors.FileFault` naming
    ``path``."""
    with _temporary_beside(Path(path)) as (fd, tmp):
        os.close(fd)
        yield tmp


def write_bytes_atomic(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` as :func:`atomic_path` does, through the descriptor that
    created the temporary file (opening it again costs a tenth of a millisecond per file
    on these machines: twice per synthesized request in the store)."""
    with _temporary_beside(Path(path)) as (fd, _):
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)


def write_atomic(path: Path, data: bytes) -> None:
    """:func:`write_bytes_atomic`, creating the folder when it is missing (the store's first
    write under a folder); a refused folder is a :class:`~simulplay.core.errors.FileFault`
    naming ``path``."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise FileFault(path, "cannot write", e) from e
    write_bytes_atomic(path, data)
