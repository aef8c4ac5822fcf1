"""Reading a translator's JSON lines log: each object with its 1-based line number, bad
lines recorded where they are; the log's fingerprint for the signature; a talk id from a
file name."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from simulplay.core import safejson
from simulplay.core.fields import Checker
from simulplay.core.provenance import file_fingerprint
from simulplay.core.tables import check_readable


def log_fingerprint(path: Path) -> str:
    """First 12 hex digits of the log's SHA-256, for the signature."""
    return file_fingerprint(path)


def read_json_lines(path: str | Path, check: Checker) -> list[tuple[int, dict]]:
    """The log's JSON objects with their 1-based line numbers; blank lines are skipped.

    Lines that are not UTF-8, not JSON (:func:`simulplay.core.safejson.loads`: also nesting too
    deep, integers too long, lone surrogates) or not an object are recorded in ``check``.
    """
    out = list(safejson.json_objects(check_readable(path).read_bytes(), check))
    if not out and not check.problems:
        check.add("has no log lines", accepted="one JSON object per line")
    return out


def talk_id_from_path(path: str) -> str:
    """The stem of a file name (``…/ted_1096_0.wav`` → ``ted_1096_0``); ``/`` and ``\\`` separate."""
    return PurePosixPath(path.replace("\\", "/")).stem
