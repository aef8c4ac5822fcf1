"""The store's file primitives: whole-file atomic writes and tolerant reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from simulplay import safejson
from simulplay.errors import FileFault
from simulplay.tables import write_bytes_atomic


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (:func:`~simulplay.tables.write_bytes_atomic`),
    creating the folder when it is missing (the first write under it); a refused write is
    a :class:`~simulplay.errors.FileFault` naming ``path`` (its temporary file removed)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise FileFault(path, "cannot write", e) from e
    write_bytes_atomic(path, data)


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
