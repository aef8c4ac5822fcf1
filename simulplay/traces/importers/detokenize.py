"""Detokenizing a log's units into glued updates.

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

from collections.abc import Sequence
from typing import Any

UNITS = ("word", "char", "spm")
SPM_SPACE = "\u2581"  # ▁


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


class Shown:
    """The squeezed output of a stack of tokens (``squeeze(detokenize(tokens, unit))``), kept
    token by token so that pushing and popping tokens costs what they hold, not the output:
    ``squeeze(a + b)`` is ``squeeze(a)``, one space if both are non-empty and whitespace ends
    ``a`` or starts ``b``, then ``squeeze(b)``."""

    def __init__(self, unit: str):
        self.unit = unit
        self.tokens: list[str] = []
        self.text = ""
        self._lens = [0]  # len(text) after each prefix of the tokens
        self._space = [False]  # whether the raw output of each prefix ends in whitespace

    def push(self, tokens: Sequence[str]) -> None:
        """Append tokens."""
        parts: list[str] = []
        n, space = self._lens[-1], self._space[-1]
        for tok in tokens:
            if self.unit == "word":
                raw = (" " if self.tokens else "") + tok
            else:
                raw = tok.replace(SPM_SPACE, " ") if self.unit == "spm" else tok
            core = squeeze(raw)
            if core:
                sep = " " if n and (space or raw[0].isspace()) else ""
                parts.append(sep + core)
                n += len(sep) + len(core)
                space = raw[-1].isspace()
            elif raw:
                space = True
            self.tokens.append(tok)
            self._lens.append(n)
            self._space.append(space)
        self.text += "".join(parts)

    def pop(self, k: int) -> None:
        """Remove the last ``k`` tokens (``k`` ≤ how many there are)."""
        if k:
            del self.tokens[len(self.tokens) - k:]
            del self._lens[len(self._lens) - k:]
            del self._space[len(self._space) - k:]
            self.text = self.text[: self._lens[-1]]


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
