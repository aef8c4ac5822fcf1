"""The update-stream model.

A trace is a table with one row per update: ``talk_id, system, seq, time_s, text,
source_s, glue``. ``time_s`` is when the text became available, in seconds from source
start; ``source_s`` is the talk's source duration (repeated per row); ``glue`` marks an
update that attaches to the previous one without a space (a continued word, attaching
punctuation). The joined text of a stream is the translator's output exactly.

A revising translator (re-translation) also gives ``retract``: how many characters to
remove from the end of the hypothesis before the update's text is appended
(:mod:`simulplay.traces.revisions`). It is 0, or absent, for an append-only trace; such a
stream reaches grouping only through a commit policy (:func:`streams_from_frame`).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from simulplay.core.errors import InputError

TRACE_COLUMNS = ("talk_id", "system", "seq", "time_s", "text", "source_s")
OPTIONAL_COLUMNS = ("glue", "retract")
#: The commit policies a revising stream can take, for messages (the registry is in grouping).
COMMIT_HINT = "a commit policy (--commit eager, stable:k=2, hold:t=1, mask:k=3 or final) to choose what is spoken"


def join_texts(texts: Sequence[str], glue: Sequence[bool] | np.ndarray) -> str:
    """Join update texts with one space, or none before an update marked ``glue``.

    The first item's ``glue`` flag is ignored (there is nothing before it to attach to).
    """
    parts: list[str] = []
    for i, (t, g) in enumerate(zip(texts, glue)):
        if i and not g:
            parts.append(" ")
        parts.append(t)
    return "".join(parts)


def apply_update(hypothesis: str, retract: int, text: str, glue: bool) -> str:
    """The hypothesis after one update: ``retract`` characters (at most ``len(hypothesis)``)
    removed from its end, then one space unless what is left is empty, the text is empty
    or the update is glued, then ``text``. With ``retract`` 0 this is :func:`join_texts`'s step."""
    cut = hypothesis[: len(hypothesis) - retract] if retract else hypothesis
    sep = " " if cut and text and not glue else ""
    return cut + sep + text


@dataclass(frozen=True)
class Stream:
    """The ordered updates of one (talk, system), with its source duration in seconds."""

    talk_id: str
    system: str
    source_s: float
    times: np.ndarray  # float64 seconds, non-decreasing
    texts: tuple[str, ...]
    glue: np.ndarray  # bool
    retract: np.ndarray | None = None  # int64 characters removed before each update; None: append-only

    def __len__(self) -> int:
        return len(self.texts)

    @property
    def revising(self) -> bool:
        """Whether some update retracts text emitted before it."""
        return self.retract is not None and bool(np.any(self.retract > 0))

    @property
    def joined(self) -> str:
        """The stream's full output text: its updates joined by :func:`join_texts` (for a
        revising stream, its final hypothesis)."""
        if self.revising:
            h = ""
            for x, g, r in zip(self.texts, self.glue, self.retract):
                h = apply_update(h, int(r), x, bool(g))
            return h
        return join_texts(self.texts, self.glue)


def streams_from_frame(df: pd.DataFrame, *, revising: bool = False) -> list[Stream]:
    """Split a validated trace table into streams in order of first appearance.

    A stream with retractions is refused unless ``revising`` (a caller that applies a
    commit policy first): grouping it as it is would speak text the translator took back.
    """
    out = []
    has_retract = "retract" in df.columns
    for (talk, system), g in df.groupby(["talk_id", "system"], sort=False):
        g = g.sort_values("seq", kind="stable")
        # a stream from a trace without retractions, read with one that has them: NaN, none
        retract = g["retract"].fillna(0).to_numpy(dtype=np.int64) if has_retract else None
        if retract is not None and not retract.any():
            retract = None
        if retract is not None and not revising:
            i = int(np.flatnonzero(retract)[0])
            raise InputError.at("trace", f"stream (talk_id={talk}, system={system}) revises its output (update seq "
                                f"{g['seq'].iloc[i]} retracts {retract[i]} character(s))", accepted=COMMIT_HINT)
        out.append(
            Stream(
                talk_id=str(talk),
                system=str(system),
                source_s=float(g["source_s"].iloc[0]),
                times=g["time_s"].to_numpy(dtype=np.float64),
                texts=tuple(g["text"].astype(str)),
                glue=g["glue"].to_numpy(dtype=bool) if "glue" in g else np.zeros(len(g), bool),
                retract=retract,
            )
        )
    return out


def frame_from_streams(streams: Iterable[Stream]) -> pd.DataFrame:
    """The canonical trace table (``seq`` from 0 within each stream; ``time_s`` and
    ``source_s`` in seconds; a ``retract`` column only when some stream revises)."""
    streams = list(streams)
    rows = []
    for s in streams:
        for i, (t, x, g) in enumerate(zip(s.times, s.texts, s.glue)):
            rows.append((s.talk_id, s.system, i, float(t), x, float(s.source_s), bool(g)))
    df = pd.DataFrame(rows, columns=[*TRACE_COLUMNS, "glue"]).astype(
        {"talk_id": str, "system": str, "seq": np.int64, "time_s": np.float64,
         "text": str, "source_s": np.float64, "glue": bool}
    )
    if any(s.revising for s in streams):
        df["retract"] = np.concatenate([s.retract if s.retract is not None else np.zeros(len(s), np.int64)
                                        for s in streams]).astype(np.int64)
    return df


#: Sentence terminators (docs/formats.md#grouping-rules): ``. ? ! …``, full-width ``。 ？ ！``, Arabic ``؟``,
#: Devanagari danda ``।``.
TERMINATORS = frozenset(".?!…。？！؟।")
#: Straight quotes close a sentence as well as every character of the categories below.
STRAIGHT_QUOTES = frozenset("'\"")
#: Unicode general categories of closing marks: close (Pe: ``) ] } 」 』``), final quote
#: (Pf: ``” ’ »``) and initial quote (Pi: German closes with ``“ ‘``, French and German
#: ``»…«`` close with ``«``).
CLOSING_CATEGORIES = frozenset({"Pe", "Pf", "Pi"})
#: Counting units of the ``words`` and ``punct`` rules: whitespace words, or letters and
#: digits (Unicode categories L* and N*; for Chinese, Japanese, Thai).
UNITS = ("word", "char")


def is_closing_mark(ch: str) -> bool:
    """A straight quote or a character of category Pe, Pf or Pi (one character)."""
    return ch in STRAIGHT_QUOTES or unicodedata.category(ch) in CLOSING_CATEGORIES


def ends_terminal(text: str) -> bool:
    """Does the text end a sentence: a terminator, then any run of closing marks and
    whitespace (``str.isspace``: also U+00A0 and U+202F), then the end?

    ``„Nein.“``, ``« Oui. »``, ``¿Qué?``, ``好。」`` and ``so.») `` end; ``3.5`` and ``.-``
    do not. Only the end of the text is looked at, so an abbreviation at the end
    (``z.B.``) ends it too, and an English opening ``“`` (also Pi) after a terminator
    counts as closing (the sentence before it has ended anyway). The punctuation rule and
    ``validate``'s share of updates ending in terminal punctuation both use this function.
    """
    i = len(text)
    while i and (text[i - 1].isspace() or is_closing_mark(text[i - 1])):
        i -= 1
    return i > 0 and text[i - 1] in TERMINATORS


def word_count(text: str) -> int:
    """Whitespace words (punctuation-only tokens count, as in Truong & Le (2026))."""
    return len(text.split())


def char_count(text: str) -> int:
    """Letters and digits: characters of Unicode categories L* and N* (combining marks,
    punctuation, symbols and spaces do not count)."""
    return sum(1 for ch in text if unicodedata.category(ch)[0] in "LN")


def unit_count(text: str, unit: str = "word") -> int:
    """The length of ``text`` in ``unit`` (``word``: whitespace words; ``char``: letters
    and digits)."""
    if unit == "word":
        return word_count(text)
    if unit == "char":
        return char_count(text)
    raise ValueError(f"unit must be one of {', '.join(UNITS)}, got {unit!r}")
