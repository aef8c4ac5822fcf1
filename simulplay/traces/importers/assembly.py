"""Assembling an import: the parsed streams, the assembled-text check against the log's
own output (with the log line of the first difference), per-stream statistics, and
writing the result (trace or request manifest)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simulplay.core.fields import Checker
from simulplay.traces.importers.detokenize import SPM_SPACE, squeeze
from simulplay.traces.model import Stream, frame_from_streams, join_texts, word_count
from simulplay.traces.revisions import apply_update

CLOCKS = ("source", "computation-aware")


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
    retract: list[int] | None = None  # characters each update retracts; None: append-only

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
        joined = squeeze(_final_text(s))
        if joined != reference:
            i = first_difference(joined, reference)
            check.add(f"talk {s.talk_id}: the updates join to {_quote(joined, i)} at character {i} where the "
                      f"log's detokenized output has {_quote(reference, i)}", row=s.line_at(i),
                      accepted="updates that join to the log's output, whitespace runs counting as one space")
    check.raise_if_any()
    model = [Stream(s.talk_id, system, s.source_s, np.asarray(s.times, dtype=np.float64), tuple(s.texts),
                    np.asarray(s.glue, dtype=bool), None if s.retract is None else np.asarray(s.retract, np.int64))
             for s in streams]
    frame = frame_from_streams(model)
    stats = pd.DataFrame([{
        "talk_id": s.talk_id, "system": system, "updates": len(s.texts),
        "words": word_count(ref), "retractions": s.retractions,
        "retracted_tokens": s.retracted_tokens, "chars": len(ref), "source_s": s.source_s,
    } for s, ref in zip(streams, references)])
    from simulplay.traces.events import stream_event_stats

    events = pd.DataFrame([stream_event_stats(m) for m in model])
    if events["event_tags"].any():
        stats = pd.concat([stats, events], axis=1)
    return ImportResult("trace", frame, stats, signature)


def _final_text(s: ParsedStream) -> str:
    """The stream's output: its updates joined, or its final hypothesis when it retracts."""
    if s.retract is None:
        return join_texts(s.texts, s.glue)
    h = ""
    for x, g, r in zip(s.texts, s.glue, s.retract):
        h = apply_update(h, r, x, g)
    return h


def check_unique_talks(talks: Sequence[tuple[str, int]], check: Checker) -> None:
    """``talks``: (talk_id, line). A talk may appear once in a log."""
    seen: dict[str, int] = {}
    for talk, line in talks:
        if talk in seen:
            check.add(f"talk {talk} already appears at line {seen[talk]}", row=line,
                      accepted="each source file once per log (import repeated runs separately)")
        else:
            seen[talk] = line
