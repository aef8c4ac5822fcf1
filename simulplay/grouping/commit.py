"""Commit policies: what of a revising stream is spoken, and when.

Audio has no undo. A commit policy turns a revising stream (updates with ``retract``,
:mod:`simulplay.traces.revisions`) into the append-only stream of **committed** text, each
piece at its commit time, which a grouping rule then groups as it groups any trace. A
policy is a frozen dataclass registered under a name (registry :data:`COMMITS`, the spec
syntax of the rules: ``stable:k=2``, ``hold:t=1``), with ``to_dict``, ``canonical`` and
``signature``; a plugin adds one with :func:`register_commit`.

Every policy is written as when to move one pointer, ``committed``: the characters of the
current hypothesis already spoken. The engine (:class:`Tracker`) applies each update; when a
retraction cuts below ``committed``, the cut words were spoken and cannot be unsaid: their
whitespace words are counted as **spoken-then-retracted** (a word cut into counts as one),
and the pointer moves back to the cut (character policies) or to the start of the word cut
into (word policies), so the replacement is spoken as new text and the listener hears both.
After the stream's last update everything left is committed at once (end of translation,
as grouping's ``eos``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from os.path import commonprefix
from typing import Any, ClassVar, TypeVar

import numpy as np

from simulplay.core.errors import InputError
from simulplay.core.specs import Registry, canonical_spec, params
from simulplay.traces.model import Stream, word_count


@dataclass(frozen=True)
class Committed:
    """A stream as a commit policy speaks it.

    ``stream`` is append-only (times are commit times, seconds from source start);
    ``spoken_words`` its whitespace words; ``retracted_words`` and ``retracted_chars`` what
    was spoken and later retracted; ``lags`` the commit lag of each word of the final
    hypothesis (seconds from the update that last wrote its last character to the commit of
    that character); ``final`` the translator's final hypothesis."""

    stream: Stream
    spoken_words: int
    retracted_words: int
    retracted_chars: int
    lags: np.ndarray
    final: str


class Tracker:
    """The hypothesis, what of it is committed, and when each character was last written."""

    def __init__(self, stream: Stream, reset: str):
        self.stream = stream
        self.reset = reset  # "word" or "char": where the pointer goes back to after a retraction
        self.h = ""
        self.committed = 0
        self.since: list[float] = []  # per character: time of the update that last wrote it
        self.commit_at: list[float] = []  # per committed character: its commit time
        self.lcps: list[int] = []  # per update: the common prefix of the hypotheses before and after it
        self.fresh = False  # the next commit starts a new word after a retraction
        self.times: list[float] = []
        self.texts: list[str] = []
        self.glue: list[bool] = []
        self.retracted_words = 0
        self.retracted_chars = 0
        self.next_due: float | None = None  # a timed policy's next due instant (None: to be found)

    def apply(self, t: float, retract: int, text: str, glue: bool) -> None:
        """Apply one update at ``t`` seconds."""
        old = self.h
        cut = len(old) - retract
        if cut < self.committed:
            self.retracted_words += word_count(old[cut:self.committed])
            self.retracted_chars += self.committed - cut
            back = cut
            if self.reset == "word" and 0 < cut < len(old) and not old[cut - 1].isspace() and not old[cut].isspace():
                back = _word_start(old, cut)
            self.committed = back
            # the replacement starts a new word unless it continues a word cut into (character policies)
            self.fresh = self.reset == "word" or back == 0 or old[back - 1].isspace()
            del self.commit_at[back:]
        sep = " " if cut and text and not glue else ""
        self.h = old[:cut] + sep + text
        self.lcps.append(cut + len(commonprefix([old[cut:], self.h[cut:]])) if retract else len(old))
        del self.since[cut:]
        self.since.extend([t] * (len(self.h) - cut))
        self.next_due = None

    def commit_to(self, end: int, t: float) -> None:
        """Commit the hypothesis up to character ``end`` at ``t`` seconds (nothing if ``end``
        is not beyond what is committed, or only whitespace would be)."""
        seg = self.h[self.committed:end]
        if end <= self.committed or not seg.strip():
            return
        glue = bool(self.texts) and not seg[0].isspace() and not self.fresh
        if seg[0].isspace() and self.committed:  # the join's separator (and any space a retraction left)
            seg = seg.lstrip()
        if self.times:  # a timer due before a commit made after a retraction waits for it
            t = max(t, self.times[-1])
        self.times.append(t)
        self.texts.append(seg)
        self.glue.append(glue)
        self.commit_at.extend([t] * (end - self.committed))
        self.committed = end
        self.fresh = False
        self.next_due = None

    def last_space(self, lo: int, hi: int) -> int:
        """The last word boundary (a whitespace character) in ``h[lo:hi]``, or -1."""
        return max(self.h.rfind(" ", lo, hi), _other_space(self.h, lo, hi))

    def result(self) -> Committed:
        """What was committed, as a :class:`Committed`."""
        s = self.stream
        stream = Stream(s.talk_id, s.system, s.source_s, np.asarray(self.times, np.float64), tuple(self.texts),
                        np.asarray(self.glue, bool))
        return Committed(stream, word_count(stream.joined), self.retracted_words, self.retracted_chars,
                         word_lags(self.h, self.since, self.commit_at), self.h)


def _word_start(h: str, i: int) -> int:
    """The start of the whitespace word holding position ``i`` of ``h``."""
    j = i
    while j > 0 and not h[j - 1].isspace():
        j -= 1
    return j


_OTHER_SPACE = re.compile(r"[^\S ]")


def _other_space(h: str, lo: int, hi: int) -> int:
    """The last whitespace other than a plain space in ``h[lo:hi]`` (-1; rare in traces)."""
    last = -1
    for m in _OTHER_SPACE.finditer(h, lo, hi):
        last = m.start()
    return last


_WORD_END = re.compile(r"\S(?!\S)")


def word_lags(h: str, since: list[float], commit_at: list[float]) -> np.ndarray:
    """Per whitespace word of ``h`` whose last character is committed: its commit time minus
    the time its last character was last written (seconds)."""
    ends = np.fromiter((m.start() for m in _WORD_END.finditer(h)), np.int64)
    ends = ends[ends < len(commit_at)]
    return np.asarray(commit_at, np.float64)[ends] - np.asarray(since, np.float64)[ends]


@dataclass(frozen=True)
class CommitPolicy:
    """Base class: subclasses are frozen dataclasses whose fields are parameters.

    ``causal`` is False for an oracle (it looks at the future); ``reset`` is where the
    committed pointer goes back to after a retraction cuts below it (``word``: the start of
    the word cut into; ``char``: the cut)."""

    name: ClassVar[str] = ""
    causal: ClassVar[bool] = True
    reset: ClassVar[str] = "word"

    def commit(self, stream: Stream) -> Committed:
        """The stream as this policy speaks it."""
        tr = Tracker(stream, self.reset)
        retract = stream.retract if stream.retract is not None else np.zeros(len(stream), np.int64)
        times = stream.times
        for i, (t, x, g, r) in enumerate(zip(times, stream.texts, stream.glue, retract)):
            self.wait(tr, float(t), inclusive=False)
            tr.apply(float(t), int(r), x, bool(g))
            self.after(tr, i)
            self.wait(tr, float(t), inclusive=True)
        if len(stream):
            tr.commit_to(len(tr.h), float(times[-1]))
        return tr.result()

    def after(self, tr: Tracker, i: int) -> None:
        """Commit what the policy allows right after update ``i`` (at its time)."""

    def wait(self, tr: Tracker, until: float, *, inclusive: bool) -> None:
        """Commit what becomes due by ``until`` seconds without an update (timers)."""

    def params(self) -> dict[str, Any]:
        """The policy's parameters (its dataclass fields) by name, in field order."""
        return params(self)

    def canonical(self) -> str:
        """The canonical policy string, e.g. ``stable:k=2``."""
        return canonical_spec(self)

    def to_dict(self) -> dict[str, Any]:
        """The registered name and every parameter (defaults included)."""
        return {"commit": self.name, **self.params()}

    def signature(self) -> dict[str, Any]:
        """``commit`` (the canonical string) and, for an oracle, ``oracle: non-causal``."""
        return {"commit": self.canonical(), **({} if self.causal else {"oracle": "non-causal"})}

    def label(self) -> str:
        """The canonical string, with ``(oracle)`` for a non-causal policy: for tables."""
        return self.canonical() + ("" if self.causal else " (oracle)")

    def __str__(self) -> str:
        return self.canonical()


COMMITS: Registry[CommitPolicy] = Registry("commit policy", group="simulplay.commits", key="commit")
P = TypeVar("P", bound=type[CommitPolicy])


def register_commit(name: str) -> Callable[[P], P]:
    """Class decorator adding a commit policy to the registry under ``name``."""
    return COMMITS.register(name)


def parse_commit(text: str, *, source: str = "--commit") -> CommitPolicy:
    """Parse a policy string (``eager``, ``stable:k=2``, ``stable:k=3,unit=char``, ``hold:t=1``,
    ``mask:k=3``, ``final``)."""
    return COMMITS.parse(text, source=source)


def unique_commits(policies: list[CommitPolicy]) -> list[CommitPolicy]:
    """Policies in order with repeats (same canonical string) refused."""
    seen: set[str] = set()
    for p in policies:
        if p.canonical() in seen:
            raise InputError.at(f"--commit '{p.canonical()}'", "is given twice",
                                accepted="each commit policy once (policies compare by canonical form)")
        seen.add(p.canonical())
    return policies
