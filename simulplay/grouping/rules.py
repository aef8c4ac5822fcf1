"""The built-in grouping rules (docs/formats.md#grouping-rules).

Rules other than ``immediate`` are evaluated at each distinct availability instant,
after every update available at that instant has joined the pending text. A deadline
fires at its own instant and updates available exactly at it join (inclusive). The
stream's last update releases any pending text at once (trigger ``eos``). Where a
content trigger (``punct``, ``words``), the deadline and the end of translation coincide,
the label is chosen in that order. Instants are compared in whole nanoseconds.

``punct`` and ``words`` count whitespace words by default (``unit=word``); ``unit=char``
counts letters and digits instead (Unicode categories L* and N*), for scripts written
without spaces (Chinese, Japanese, Thai): ``min_words`` and ``n`` are then characters.
The canonical string names ``unit`` only when it is ``char``; ``to_dict()`` always does.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from simulplay.grouping.policy import OpenBuffered, OpenImmediate, Policy
from simulplay.grouping.registry import Group, Rule, register_rule
from simulplay.traces.model import UNITS, Stream, ends_terminal, join_texts, unit_count


def instant_keys(times: np.ndarray) -> np.ndarray:
    """Times in whole nanoseconds: the identity of an availability instant."""
    return np.round(np.asarray(times, dtype=np.float64) * 1e9).astype(np.int64)


def _positive(name: str, value: float) -> None:
    if not (value >= 0 and math.isfinite(value)):
        raise ValueError(f"{name} must be a finite number of seconds ≥ 0, got {value}")


def _unit_field():
    """The ``unit`` parameter: ``word`` (default, left out of canonical strings) or ``char``."""
    return field(default="word", metadata={"choices": UNITS, "omit_default": True})


def _check_unit(unit: str) -> None:
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {', '.join(UNITS)}, got {unit!r}")


@register_rule("immediate")
@dataclass(frozen=True)
class Immediate(Rule):
    """Every update is its own group, dispatched at its availability (ties included)."""

    def group(self, stream: Stream) -> list[Group]:
        """One group per update, ``dispatch_s`` its ``time_s`` (seconds from source start)."""
        return [Group(i, i, float(t), "immediate") for i, t in enumerate(stream.times)]

    def as_policy(self) -> Policy:
        """The rule as an open-loop policy (:mod:`simulplay.grouping.policy`)."""
        return OpenImmediate(rule=self)


def buffered_groups(
    stream: Stream,
    wait_s: float,
    content: Callable[[str], bool] | None = None,
    content_trigger: str = "timer",
) -> list[Group]:
    """The instant-based engine shared by timer, punct and words.

    ``wait_s``: the deadline after the oldest pending update, in seconds (inclusive: updates
    available exactly at it join); ``content``: a test on the pending joined text that
    releases the group at the current instant, labelled ``content_trigger``. A group released
    by its deadline is dispatched at ``max(a_first + wait_s, a_last)``, any other at its
    last update's availability; dispatch times in seconds from source start.
    """
    keys = instant_keys(stream.times)
    wait_ns = int(round(wait_s * 1e9))
    n = len(keys)
    groups: list[Group] = []
    first = None  # index of the oldest pending update
    deadline = 0  # ns
    i = 0
    while i < n:
        if first is not None and deadline < keys[i]:
            # The deadline fires before the next availability instant.
            t = float(stream.times[first]) + wait_s
            groups.append(Group(first, i - 1, max(t, float(stream.times[i - 1])), "timer"))
            first = None
            continue
        t_key, start = keys[i], i
        while i < n and keys[i] == t_key:
            i += 1
        if first is None:
            first = start
            deadline = int(t_key) + wait_ns
        last = i - 1
        now = float(stream.times[last])
        trigger = None
        if content is not None and content(join_texts(stream.texts[first:i], stream.glue[first:i])):
            trigger = content_trigger
        elif deadline <= t_key:
            trigger = "timer"
            now = max(now, float(stream.times[first]) + wait_s)
        elif i == n:
            trigger = "eos"
        if trigger is not None:
            groups.append(Group(first, last, now, trigger))
            first = None
    return groups


@register_rule("timer")
@dataclass(frozen=True)
class Timer(Rule):
    """The oldest pending update starts a deadline ``a_first + w`` (seconds); all updates
    available by the deadline (inclusive) join; later arrivals never reset it."""

    w: float = 4.0

    def __post_init__(self):
        _positive("w", self.w)

    def group(self, stream: Stream) -> list[Group]:
        """The stream's groups under the ``w``-second deadline (dispatch in seconds)."""
        return buffered_groups(stream, self.w)

    def as_policy(self) -> Policy:
        """The rule as an open-loop policy (:mod:`simulplay.grouping.policy`)."""
        return OpenBuffered(rule=self, wait_s=self.w)


@register_rule("punct")
@dataclass(frozen=True)
class Punct(Rule):
    """Release once the pending text has ≥ ``min_words`` units (whitespace words, or
    letters and digits with ``unit=char``) and ends a sentence, or at the cap deadline
    ``a_first + cap`` seconds, whichever comes first.

    A sentence ends in a terminator (``. ? ! …``, ``。 ？ ！``, ``؟``, ``।``) followed by
    any run of closing marks and whitespace: straight quotes and Unicode categories Pe,
    Pf, Pi (``„Nein.“``, ``»Ja.«``, ``« Oui. »``, ``¿Qué?``, ``「はい。」``); see
    :func:`simulplay.traces.model.ends_terminal`. Only the end of the pending text counts:
    ``3.5`` does not end a sentence, a pending text ending in an abbreviation (``z.B.``)
    does."""

    cap: float = 2.0
    min_words: int = 3
    unit: str = _unit_field()

    def __post_init__(self):
        _positive("cap", self.cap)
        if self.min_words < 0:
            raise ValueError(f"min_words must be ≥ 0, got {self.min_words}")
        _check_unit(self.unit)

    def group(self, stream: Stream) -> list[Group]:
        """The stream's groups: sentence end with ``min_words`` units, else the ``cap``-second deadline."""
        return buffered_groups(stream, self.cap, self._done, "punct")

    def _done(self, text: str) -> bool:
        return ends_terminal(text) and unit_count(text, self.unit) >= self.min_words

    def as_policy(self) -> Policy:
        """The rule as an open-loop policy (:mod:`simulplay.grouping.policy`)."""
        return OpenBuffered(rule=self, wait_s=self.cap, content=self._done, content_trigger="punct")


@register_rule("words")
@dataclass(frozen=True)
class Words(Rule):
    """Release once ``n`` units (whitespace words, or letters and digits with
    ``unit=char``) have accumulated, or at the cap deadline ``a_first + cap`` seconds."""

    n: int = 8
    cap: float = 2.0
    unit: str = _unit_field()

    def __post_init__(self):
        _positive("cap", self.cap)
        if self.n < 1:
            raise ValueError(f"n must be ≥ 1, got {self.n}")
        _check_unit(self.unit)

    def group(self, stream: Stream) -> list[Group]:
        """The stream's groups: ``n`` units pending, else the ``cap``-second deadline."""
        return buffered_groups(stream, self.cap, self._done, "words")

    def _done(self, text: str) -> bool:
        return unit_count(text, self.unit) >= self.n

    def as_policy(self) -> Policy:
        """The rule as an open-loop policy (:mod:`simulplay.grouping.policy`)."""
        return OpenBuffered(rule=self, wait_s=self.cap, content=self._done, content_trigger="words")
