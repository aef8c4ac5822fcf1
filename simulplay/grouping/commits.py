"""The built-in commit policies (:mod:`simulplay.grouping.commit`; docs/retranslation.md).

* ``eager``: commit each update's text as it arrives.
* ``stable:k=2``: local agreement: commit the longest common prefix of the last ``k``
  hypotheses, up to a word boundary (``unit=char``: any character).
* ``hold:t=1``: commit a word once the prefix ending with it has stood unwritten for ``t``
  seconds (its own timers, between updates).
* ``mask:k=3``: commit all but the last ``k`` words of each hypothesis (mask-k).
* ``final``: each character of the final hypothesis at the time it was last written; it
  looks at the future (an oracle, labelled non-causal).

A word is complete once the whitespace after it is there: ``stable`` and ``hold`` commit
only words followed by whitespace (in all ``k`` hypotheses, for ``stable``), so a word the
translator may still continue (``Geb`` → ``Gebäude``) waits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from simulplay.grouping.commit import CommitPolicy, Committed, Tracker, register_commit
from simulplay.traces.model import UNITS, Stream, word_count

_SPACE = re.compile(r"\s")


@register_commit("eager")
@dataclass(frozen=True)
class Eager(CommitPolicy):
    """Commit every update as it arrives; a retraction of spoken text cannot unsay it (the
    retracted words are counted) and the replacement is spoken as new text. An append-only
    stream passes unchanged."""

    reset = "char"

    def commit(self, stream: Stream) -> Committed:
        """The stream as spoken; an append-only one is returned as it is."""
        if stream.revising:
            return super().commit(stream)
        text = stream.joined
        return Committed(stream, word_count(text), 0, 0, np.zeros(word_count(text)), text)

    def after(self, tr: Tracker, i: int) -> None:
        """Commit the whole hypothesis."""
        tr.commit_to(len(tr.h), float(tr.stream.times[i]))


@register_commit("stable")
@dataclass(frozen=True)
class Stable(CommitPolicy):
    """Local agreement: the longest common prefix of the last ``k`` hypotheses (``k`` ≥ 1),
    cut back to its last word boundary (``unit=char``: not cut back)."""

    k: int = 2
    unit: str = field(default="word", metadata={"choices": UNITS, "omit_default": True})

    def __post_init__(self):
        if self.k < 1:
            raise ValueError(f"k={self.k} must be at least 1")

    @property
    def reset(self) -> str:  # type: ignore[override]
        """Back to the cut (``unit=char``) or to the start of the word cut into."""
        return self.unit

    def after(self, tr: Tracker, i: int) -> None:
        """Commit what the last ``k`` hypotheses agree on (nothing before the ``k``-th)."""
        if i + 1 < self.k:
            return
        agreed = min(tr.lcps[len(tr.lcps) - self.k + 1:], default=len(tr.h))
        t = float(tr.stream.times[i])
        if self.unit == "char":
            tr.commit_to(agreed, t)
            return
        p = tr.last_space(tr.committed, agreed)
        if p > tr.committed:
            tr.commit_to(p, t)


@register_commit("hold")
@dataclass(frozen=True)
class Hold(CommitPolicy):
    """Commit the prefix up to a word boundary once it has stood unwritten for ``t`` seconds
    (the boundary's whitespace included); commits fire on their own timers between updates,
    and an update at the same instant comes first."""

    t: float = 1.0

    def __post_init__(self):
        if self.t < 0:
            raise ValueError(f"t={self.t:g} must be ≥ 0 seconds")

    def wait(self, tr: Tracker, until: float, *, inclusive: bool) -> None:
        """Fire the timers due by ``until`` (at it too when ``inclusive``), each at its own instant."""
        if tr.next_due is not None and (tr.next_due > until or (tr.next_due == until and not inclusive)):
            return
        j = tr.committed
        while True:
            m = _SPACE.search(tr.h, j + 1)
            if m is None:
                tr.next_due = float("inf")
                return
            due = tr.since[m.start()] + self.t
            if due > until or (due == until and not inclusive):
                tr.next_due = due
                return
            p = m.start()  # the last boundary due at the same instant
            while (n := _SPACE.search(tr.h, p + 1)) is not None and tr.since[n.start()] + self.t == due:
                p = n.start()
            tr.commit_to(p, due)
            j = p


@register_commit("mask")
@dataclass(frozen=True)
class Mask(CommitPolicy):
    """Commit all but the last ``k`` whitespace words of each hypothesis (``k`` = 0: all of
    it); a shorter hypothesis never takes a commit back."""

    k: int = 3

    def __post_init__(self):
        if self.k < 0:
            raise ValueError(f"k={self.k} must be ≥ 0")

    def after(self, tr: Tracker, i: int) -> None:
        """Commit up to the whitespace before the ``k``-th last word."""
        t = float(tr.stream.times[i])
        if self.k == 0:
            tr.commit_to(len(tr.h), t)
            return
        parts = tr.h.rsplit(None, self.k)
        if len(parts) > self.k:
            tr.commit_to(len(parts[0]), t)


@register_commit("final")
@dataclass(frozen=True)
class Final(CommitPolicy):
    """The oracle: each character of the final hypothesis at the time of the update that last
    wrote it (what ``import-simulstream --retractions final`` keeps). Non-causal."""

    causal = False
    reset = "char"

    def commit(self, stream: Stream) -> Committed:
        """Each run of characters last written by the same update, at that update's time."""
        tr = Tracker(stream, self.reset)
        retract = stream.retract if stream.retract is not None else np.zeros(len(stream), np.int64)
        for t, x, g, r in zip(stream.times, stream.texts, stream.glue, retract):
            tr.apply(float(t), int(r), x, bool(g))
        since = np.asarray(tr.since, np.float64)
        bounds = [0, *(np.flatnonzero(np.diff(since)) + 1).tolist(), len(since)]
        for j, e in zip(bounds[:-1], bounds[1:]):
            if e > j:
                tr.commit_to(e, float(since[j]))
        return tr.result()
