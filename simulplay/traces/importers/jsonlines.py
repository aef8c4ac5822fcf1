"""Reading a translator's JSON lines log: each object with its 1-based line number, bad
lines recorded where they are; the log's fingerprint for the signature; a talk id from a
file name."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from simulplay.core import safejson
from simulplay.core.errors import InputError
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


#: Per log kind: keys only its lines have, and the command that imports it.
LOG_KINDS = {
    "SimulEval": ({"prediction", "delays", "elapsed", "source_length", "prediction_length"},
                                "import-simuleval"),
    "simulstream": ({"generated_tokens", "deleted_tokens", "total_audio_processed", "computation_time",
                     "model_loading_time", "metadata"}, "import-simulstream"),
}


def refuse_other_log(path: str | Path, lines: list[tuple[int, dict]], expected: str) -> None:
    """An InputError when the log is the other importer's: some line has keys of another kind
    of :data:`LOG_KINDS` and no line has keys of ``expected`` (``this looks like a simulstream
    log: use import-simulstream``), instead of a problem on every line."""
    mine = LOG_KINDS[expected][0]
    if any(mine & obj.keys() for _, obj in lines):
        return
    for kind, (keys, command) in LOG_KINDS.items():
        if kind != expected and any(keys & obj.keys() for _, obj in lines):
            raise InputError.at(path, f"this looks like a {kind} log: use {command}",
                                accepted=f"a {expected} log")


def talk_id_from_path(path: str) -> str:
    """The stem of a file name (``…/ted_1096_0.wav`` → ``ted_1096_0``); ``/`` and ``\\`` separate."""
    return PurePosixPath(path.replace("\\", "/")).stem
