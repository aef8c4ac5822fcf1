"""The store's file primitives: whole-file atomic writes and tolerant reads."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from simulplay import safejson
from simulplay.errors import FileFault


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically, as :func:`~simulplay.tables.atomic_path`
    does (a temporary file beside it, renamed into place), written through the descriptor
    that created it (opening it again costs a tenth of a millisecond per file, twice per
    request); the folder is created when missing (the first write under it). A refused
    write is a :class:`~simulplay.errors.FileFault` naming ``path`` (its temporary file
    removed)."""
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException as e:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        if isinstance(e, OSError):
            raise FileFault(path, "cannot write", e) from e
        raise


def read_or_none(path: Path) -> bytes | None:
    """The file's bytes, or None when it is missing or cannot be read."""
    try:
        return path.read_bytes()
    except OSError:
        return None


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        obj = safejson.loads(path.read_bytes())
    except (FileNotFoundError, safejson.JsonError):
        return None
    return obj if isinstance(obj, dict) else None
