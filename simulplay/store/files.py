"""The store's tolerant reads (its writes are :mod:`simulplay.core.atomic`'s)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from simulplay.core import safejson


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
