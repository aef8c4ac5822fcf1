"""Shared parts of the log importers: JSON lines with located errors, checked fields,
detokenization into glued updates, the assembled-text check and per-stream statistics.

Detokenization follows the three conventions of SimulEval's ``TextOutputInstance``
(also simulstream's ``simuleval`` detokenizer): ``word`` units are joined with one
space, ``char`` units with nothing, ``spm`` (SentencePiece) pieces are concatenated and
``▁`` becomes a space, so a piece without ``▁`` (a word continuation, attaching
punctuation) attaches to what precedes it.

Whitespace is a word boundary, however much of it there is: a lone ``▁`` piece, a piece
holding several ``▁`` or ordinary spaces, an empty word, a run of spaces, tabs or other
Unicode whitespace (``str.split``'s definition) all separate words once. Inside an update a
run becomes one space; at an update's edge it only clears ``glue``; a packet holding nothing
but whitespace makes no update. The assembled-text check compares the updates' joined text
with the log's detokenized output in the same normal form (runs squeezed to one space,
edges stripped), so a log whose own output holds double spaces imports, and any other
difference of characters is refused.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np
import pandas as pd

from simulplay.core import safejson
from simulplay.core.errors import InputError, clip
from simulplay.core.fields import Checker
from simulplay.core.provenance import file_fingerprint
from simulplay.core.tables import check_readable
from simulplay.traces.model import Stream, frame_from_streams, join_texts, word_count

CLOCKS = ("source", "computation-aware")
UNITS = ("word", "char", "spm")
SPM_SPACE = "\u2581"  # ▁


@dataclass
class ImportResult:
    """An imported log: the table to write, one statistics row per stream, the signature.

    ``kind`` is ``trace`` (write with :func:`simulplay.traces.write_trace`) or
    ``manifest`` (a request manifest for ``replay``).
    """

    kind: str
    frame: pd.DataFrame
    stats: pd.DataFrame
    signature: dict[str, Any]


def write_import(res: ImportResult, out: str | Path) -> None:
    """Write an imported trace (format by suffix) or request manifest (``kind="manifest"``,
    whose metadata carries the import's signature for downstream tables)."""
    from simulplay.core.tables import write_table
    from simulplay.traces.writers import write_trace

    if res.kind == "manifest":
        upstream = {k: v for k, v in res.signature.items() if k != "table"}
        write_table(res.frame, out, res.signature, kind="request-manifest", extra_meta={"signature": upstream})
    else:
        write_trace(res.frame, out, res.signature)


@dataclass
class ParsedStream:
    """One stream before it becomes trace rows: ``source_s`` its source duration and ``times``
    each update's availability, both in seconds from source start; ``reference`` is the log's
    full output."""

    talk_id: str
    line: int  # where the talk starts in the log (1-based), for messages
    source_s: float
    times: list[float]
    texts: list[str]
    glue: list[bool]
    reference: str
    retractions: int = 0
    retracted_tokens: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    origins: Origins | None = None  # where each piece of ``reference`` came from; None: all at ``line``

    def line_at(self, i: int) -> int:
        """The log line that wrote character ``i`` of the squeezed reference."""
        return self.origins.line_at(i) if self.origins is not None else self.line


@dataclass
class Origins:
    """The tokens of a stream's output with the 1-based log line of each, for messages.

    Only consulted when the assembled-text check fails, so imports keep no per-character map.
    """

    tokens: Sequence[str]
    lines: Sequence[int]
    unit: str

    def line_at(self, i: int) -> int:
        """The line of the token holding character ``i`` of the squeezed output (the last
        token's line past its end); a whitespace run belongs to the token that starts it."""
        n = -1
        lead = True  # leading whitespace is stripped
        prev_space = False
        for k, tok in enumerate(self.tokens):
            text = tok.replace(SPM_SPACE, " ") if self.unit == "spm" else tok
            if self.unit == "word" and k:
                text = " " + text
            for ch in text:
                if ch.isspace():
                    if lead or prev_space:
                        continue
                    prev_space = True
                else:
                    lead = prev_space = False
                n += 1
                if n == i:
                    return self.lines[k]
        return self.lines[-1] if self.lines else 0


def check_choice(option: str, value: str, choices: Sequence[str]) -> str:
    """``value`` if it is one of ``choices``; otherwise an :class:`InputError` naming ``option``."""
    if value not in choices:
        raise InputError.at(f"{option} '{value}'", f"unknown value for {option}", accepted=" or ".join(choices))
    return value


def check_system(system: str) -> str:
    """``system`` unchanged if it is not blank; otherwise an :class:`InputError` naming ``--system``."""
    if not system.strip():
        raise InputError.at("--system", "is empty", accepted="a non-empty system name")
    return system


def log_fingerprint(path: Path) -> str:
    """First 12 hex digits of the log's SHA-256, for the signature."""
    return file_fingerprint(path)


def read_json_lines(path: str | Path, check: Checker) -> list[tuple[int, dict]]:
    """The log's JSON objects with their 1-based line numbers; blank lines are skipped.

    Lines that are not UTF-8, not JSON (:func:`simulplay.core.safejson.loads`: also nesting too
    deep, integers too long, lone surrogates) or not an object are recorded in ``check``.
    """
    p = check_readable(path)
    out: list[tuple[int, dict]] = []
    for lineno, raw in enumerate(p.read_bytes().split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            obj = safejson.loads(raw)
        except safejson.JsonError as e:
            check.add(str(e), row=lineno, accepted=f"one JSON object per line; {e.accepted}")
            continue
        if not isinstance(obj, dict):
            check.add("is not a JSON object", row=lineno, accepted="one JSON object per line")
            continue
        out.append((lineno, obj))
    if not out and not check.problems:
        check.add("has no log lines", accepted="one JSON object per line")
    return out


class Fields:
    """Typed access to the keys of one log line; problems go to ``check`` at that line."""

    def __init__(self, check: Checker, lineno: int, obj: dict):
        self.check, self.lineno, self.obj = check, lineno, obj

    def problem(self, message: str, key: str | None = None, accepted: str | None = None) -> None:
        """Record a problem at this line (field ``key``, what would be ``accepted``)."""
        self.check.add(message, row=self.lineno, field=key, accepted=accepted)

    def present(self, key: str, accepted: str) -> bool:
        """Whether the line has ``key``; a missing key is recorded as a problem."""
        if key not in self.obj:
            self.problem("is missing", key, accepted)
            return False
        return True

    def number(self, key: str, accepted: str, *, positive: bool = False) -> float | None:
        """A finite number ≥ 0 (> 0 when ``positive``), or ``None`` after recording why not."""
        if not self.present(key, accepted):
            return None
        return self._number(self.obj[key], key, accepted, positive=positive)

    def _number(self, v: Any, key: str, accepted: str, *, positive: bool = False, item: str = ""):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            self.problem(f"{item}{shown(v)} is not a number", key, accepted)
            return None
        try:
            x = float(v)
        except OverflowError:  # an integer literal beyond a float's range
            self.problem(f"{item}{clip(v)} is too large (beyond a float's range, ±1.8e308)", key, accepted)
            return None
        if not math.isfinite(x):
            self.problem(f"{item}{x} is not finite", key, accepted)
        elif x < 0 or (positive and x == 0):
            self.problem(f"{item}{x:g} is not {'positive' if positive else '≥ 0'}", key, accepted)
        else:
            return x
        return None

    def numbers(self, key: str, accepted: str, *, ordered: bool = False) -> list[float] | None:
        """A list of finite numbers ≥ 0 (non-decreasing when ``ordered``)."""
        if not self.present(key, accepted):
            return None
        v = self.obj[key]
        if not isinstance(v, list):
            self.problem("is not a list", key, accepted)
            return None
        out = [self._number(x, key, accepted, item=f"item {k}: ") for k, x in enumerate(v)]
        if any(x is None for x in out):
            return None
        if ordered:
            for k in range(1, len(out)):
                if out[k] < out[k - 1]:
                    self.problem(f"item {k} ({out[k]:g}) is earlier than item {k - 1} ({out[k - 1]:g})",
                                 key, "non-decreasing times")
                    return None
        return out

    def strings(self, key: str, accepted: str) -> list[str] | None:
        """The list of strings at ``key``, or ``None`` after recording why not."""
        if not self.present(key, accepted):
            return None
        v = self.obj[key]
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            self.problem("is not a list of strings", key, accepted)
            return None
        return v

    def string(self, key: str, accepted: str) -> str | None:
        """The string at ``key``, or ``None`` after recording why not."""
        if not self.present(key, accepted):
            return None
        v = self.obj[key]
        if not isinstance(v, str):
            self.problem(f"{shown(v)} is not a string", key, accepted)
            return None
        return v


def shown(value: Any) -> str:
    """A parsed JSON value as JSON, cut to 40 characters, for messages."""
    return clip(json.dumps(value, ensure_ascii=False), 40)


def talk_id_from_path(path: str) -> str:
    """The stem of a file name (``…/ted_1096_0.wav`` → ``ted_1096_0``); ``/`` and ``\\`` separate."""
    return PurePosixPath(path.replace("\\", "/")).stem


def squeeze(text: str) -> str:
    """``text`` with each run of whitespace made one space and the edges stripped."""
    return " ".join(text.split())


def detokenize(tokens: Sequence[str], unit: str) -> str:
    """The full output text of ``tokens`` (stripped of edge whitespace, inner runs kept as
    the log's own detokenizer writes them; compare through :func:`squeeze`)."""
    if unit == "word":
        return " ".join(tokens).strip()
    if unit == "char":
        return "".join(tokens).strip()
    return "".join(tokens).replace(SPM_SPACE, " ").strip()


def segments(groups: Sequence[Sequence[str]], unit: str) -> list[str]:
    """Each group's share of the detokenized output, edge whitespace included."""
    out, started = [], False
    for g in groups:
        if unit == "word":
            s = (" " if started and g else "") + " ".join(g)
            started = started or bool(g)
        elif unit == "char":
            s = "".join(g)
        else:
            s = "".join(g).replace(SPM_SPACE, " ")
        out.append(s)
    return out


def assemble(times: Sequence[float], segs: Sequence[str]) -> tuple[list[float], list[str], list[bool]]:
    """Updates from timed segments, as (times, texts, glue): each kept segment's time
    unchanged (seconds from source start), text squeezed (no edge whitespace, inner runs one
    space), ``glue`` where no whitespace separates it from the previous text. A segment that
    is empty or only whitespace makes no update (its whitespace still separates its
    neighbours)."""
    t_out: list[float] = []
    x_out: list[str] = []
    g_out: list[bool] = []
    space = False
    for t, seg in zip(times, segs):
        core = squeeze(seg)
        if not core:
            space = space or seg != ""
            continue
        g_out.append(bool(x_out) and not (space or seg[0].isspace()))
        t_out.append(t)
        x_out.append(core)
        space = seg[-1].isspace()
    return t_out, x_out, g_out


def group_runs(keys: Sequence[Any], items: Sequence[str]) -> tuple[list[Any], list[list[str]]]:
    """Consecutive items with equal keys, as (key of each run, items of each run)."""
    run_keys: list[Any] = []
    runs: list[list[str]] = []
    for k, x in zip(keys, items):
        if run_keys and run_keys[-1] == k:
            runs[-1].append(x)
        else:
            run_keys.append(k)
            runs.append([x])
    return run_keys, runs


def first_difference(a: str, b: str) -> int:
    """The 0-based index of the first character where ``a`` and ``b`` differ (the shorter
    one's length if one is a prefix of the other, ``len(a)`` if they are equal)."""
    n = min(len(a), len(b))
    return next((i for i in range(n) if a[i] != b[i]), n)


def _quote(text: str, i: int) -> str:
    """``text`` around character ``i``, as a Python literal (… marks a cut)."""
    lo, hi = max(0, i - 12), i + 12
    return ("…" if lo else "") + repr(text[lo:hi]) + ("…" if hi < len(text) else "")


def finish(streams: list[ParsedStream], *, system: str, source: str, signature: dict[str, Any]) -> ImportResult:
    """Check each stream's assembled text against the log's output (both squeezed: runs of
    whitespace count as one space); build table and stats."""
    check = Checker(source, pd.DataFrame(), row_label="line")
    references = []
    for s in streams:
        reference = squeeze(s.reference)
        references.append(reference)
        if not s.texts:
            check.add(f"talk {s.talk_id} has no output text", row=s.line,
                      accepted="at least one emitted unit per talk (a trace needs one update)")
            continue
        joined = squeeze(join_texts(s.texts, s.glue))
        if joined != reference:
            i = first_difference(joined, reference)
            check.add(f"talk {s.talk_id}: the updates join to {_quote(joined, i)} at character {i} where the "
                      f"log's detokenized output has {_quote(reference, i)}", row=s.line_at(i),
                      accepted="updates that join to the log's output, whitespace runs counting as one space")
    check.raise_if_any()
    model = [Stream(s.talk_id, system, s.source_s, np.asarray(s.times, dtype=np.float64), tuple(s.texts),
                    np.asarray(s.glue, dtype=bool)) for s in streams]
    frame = frame_from_streams(model)
    stats = pd.DataFrame([{
        "talk_id": s.talk_id, "system": system, "updates": len(s.texts),
        "words": word_count(ref), "retractions": s.retractions,
        "retracted_tokens": s.retracted_tokens, "chars": len(ref), "source_s": s.source_s,
    } for s, ref in zip(streams, references)])
    return ImportResult("trace", frame, stats, signature)


def check_unique_talks(talks: Sequence[tuple[str, int]], check: Checker) -> None:
    """``talks``: (talk_id, line). A talk may appear once in a log."""
    seen: dict[str, int] = {}
    for talk, line in talks:
        if talk in seen:
            check.add(f"talk {talk} already appears at line {seen[talk]}", row=line,
                      accepted="each source file once per log (import repeated runs separately)")
        else:
            seen[talk] = line
