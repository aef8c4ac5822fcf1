"""The built-in rules on many streams and many parameter values at once, as array operations.

A sweep groups the same streams under tens of parameter values of a rule. Rather than run
each rule's ``group`` once per stream and value, :func:`group_many` holds every update of
every stream in flat arrays (:class:`UpdateTable`) and follows the groups of all (rule,
stream) *lanes* together: step k finds the k-th group of every lane in one set of NumPy
operations, so the Python loop runs over group positions, never over requests × rules.

It computes exactly what :func:`simulplay.grouping.rules.buffered_groups` and the rules'
``group`` compute (tests/grouping/test_vectorized.py checks it on random streams), with
three facts about the joined pending text (:func:`simulplay.traces.model.join_texts`):

* **Words** of a range ``i..j`` are ``W[j] − W[i] + u[i]``: ``u`` the whitespace words of
  each update, ``W`` the running sum of ``u − m``, where ``m`` marks an update glued to a
  previous one with no whitespace between them (the two words merge). A stream holding
  an empty update text is grouped by its rules' own ``group`` instead (an empty update
  at the start of a range would carry a merge across it).
* **Letters and digits** (``unit=char``) add up: joining adds only spaces.
* **The end of a sentence** depends only on the last update of the range that holds a
  character other than whitespace and closing marks (joining adds only spaces).

Rules other than ``immediate``, ``timer``, ``punct`` and ``words`` (a rule registered by a
user, or a subclass with its own ``group``) are grouped by their own ``group``, stream by
stream; one whose groups are character spans (a framework rule) keeps its spans
(``Groups.span_start``/``span_end``).
Times are compared in whole nanoseconds, as the rules compare them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from simulplay.core.errors import InputError
from simulplay.grouping.registry import TRIGGERS, Committing, Rule, groups_of
from simulplay.grouping.rules import Immediate, Punct, Timer, Words, instant_keys
from simulplay.traces.model import TERMINATORS, Stream, char_count, is_closing_mark

TRIGGER_CODE = {t: i for i, t in enumerate(TRIGGERS)}
T = TypeVar("T")


@dataclass(frozen=True)
class UpdateTable:
    """Every update of ``streams`` in flat arrays, stream after stream.

    ``offsets[s]..offsets[s+1]`` are stream ``s``'s updates; ``times`` seconds from source
    start, ``keys`` the same in whole nanoseconds; ``words`` (``W``) and ``chars`` running
    sums for the content triggers (module docstring), ``word_u`` each update's own words;
    ``last_opaque[j]`` the last update ≤ j with a character other than whitespace and
    closing marks (−1: none), ``terminal[j]`` whether that character of update j is a
    sentence terminator, ``next_opaque[j]`` the first ≥ j (n: none); ``next_terminal[j]``
    the first instant-block end ≥ j whose text up to it ends a sentence (n: none);
    ``block_end[j]`` the last update available at the instant of update j; ``simple``:
    the streams without an empty update text."""

    streams: tuple[Stream, ...]
    offsets: np.ndarray
    times: np.ndarray
    keys: np.ndarray
    words: np.ndarray
    word_u: np.ndarray
    chars: np.ndarray
    last_opaque: np.ndarray
    terminal: np.ndarray
    next_opaque: np.ndarray
    next_terminal: np.ndarray
    block_end: np.ndarray
    simple: np.ndarray

    @property
    def n(self) -> int:
        """How many updates the table holds."""
        return len(self.times)


def last_opaque_char(text: str) -> str:
    """The last character that is neither whitespace nor a closing mark ('' if none)."""
    for ch in reversed(text):
        if not (ch.isspace() or is_closing_mark(ch)):
            return ch
    return ""


def per_distinct(fn: Callable[[str], T], texts: Sequence[str]) -> list[T]:
    """``fn`` of each text, computed once per distinct text (a sweep's committed streams
    repeat the same pieces across policies)."""
    seen: dict[str, T] = {}
    return [seen[t] if t in seen else seen.setdefault(t, fn(t)) for t in texts]


def update_table(streams: Sequence[Stream]) -> UpdateTable:
    """The flat arrays of ``streams`` (one pass over the update texts)."""
    streams = tuple(streams)
    sizes = np.array([len(s) for s in streams], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(offsets[-1])
    texts = [t for s in streams for t in s.texts]
    glue = np.concatenate([s.glue for s in streams]) if streams else np.zeros(0, bool)
    times = np.concatenate([s.times for s in streams]).astype(np.float64) if streams else np.zeros(0)
    keys = instant_keys(times)
    word_u = np.fromiter((len(t.split()) for t in texts), np.int64, n)
    starts_word = np.fromiter((bool(t) and not t[0].isspace() for t in texts), bool, n)
    ends_word = np.fromiter((bool(t) and not t[-1].isspace() for t in texts), bool, n)
    first = np.zeros(n, bool)
    first[offsets[:-1][sizes > 0]] = True
    merge = np.zeros(n, bool)
    merge[1:] = glue[1:] & starts_word[1:] & ends_word[:-1]
    merge &= ~first
    words = np.cumsum(word_u - merge)
    chars = np.cumsum(np.array(per_distinct(char_count, texts), np.int64))
    tail = per_distinct(last_opaque_char, texts)
    opaque = np.array([c != "" for c in tail], bool)
    terminal = np.array([c in TERMINATORS for c in tail], bool)
    idx = np.arange(n)
    last_opaque = np.maximum.accumulate(np.where(opaque, idx, -1)) if n else idx
    next_opaque = np.minimum.accumulate(np.where(opaque, idx, n)[::-1])[::-1] if n else idx
    stream_of = np.repeat(np.arange(len(streams)), sizes)
    same_next = np.zeros(n, bool)
    same_next[:-1] = (keys[1:] == keys[:-1]) & (stream_of[1:] == stream_of[:-1])
    ends = ~same_next
    block_end = np.minimum.accumulate(np.where(ends, idx, n)[::-1])[::-1] if n else idx
    term_end = ends & (last_opaque >= 0) & terminal[np.maximum(last_opaque, 0)]
    next_terminal = np.minimum.accumulate(np.where(term_end, idx, n)[::-1])[::-1] if n else idx
    simple = np.array([all(s.texts) for s in streams], bool)
    return UpdateTable(streams, offsets, times, keys, words, word_u, chars, last_opaque, terminal, next_opaque,
                       next_terminal, block_end, simple)


@dataclass(frozen=True)
class Groups:
    """Groups of (rule, stream) lanes in flat arrays, ordered rule by rule, stream by stream,
    then in time: ``rule`` and ``stream`` index the inputs, ``first``/``last`` are update
    indices into the :class:`UpdateTable` (both inclusive), ``dispatch_s`` seconds from
    source start, ``trigger`` codes into :data:`~simulplay.grouping.registry.TRIGGERS`.
    ``span_start``/``span_end``: a group's character span of its stream's joined text
    (``Group.span``), −1 for a group of whole updates (None: no group has a span)."""

    rule: np.ndarray
    stream: np.ndarray
    first: np.ndarray
    last: np.ndarray
    dispatch_s: np.ndarray
    trigger: np.ndarray
    span_start: np.ndarray | None = None
    span_end: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.first)

    @property
    def spanned(self) -> np.ndarray:
        """Which groups are character spans."""
        return np.zeros(len(self), bool) if self.span_start is None else self.span_start >= 0


def _kind(rule: Rule) -> str | None:
    """Which vectorised engine groups this rule exactly, or None (its own ``group`` does)."""
    for cls, kind in ((Immediate, "immediate"), (Timer, "timer"), (Punct, "punct"), (Words, "words")):
        if type(rule) is cls:
            return kind
    return None


def group_many(table: UpdateTable, rules: Sequence[Rule], streams: Sequence[range] | None = None) -> Groups:
    """The groups of every stream of ``table`` under every rule (see :class:`Groups`);
    ``streams``: per rule, the indices of the streams it groups (None: all).

    A rule after a commit policy groups another stream than the table's: refused (the
    sweep groups the plain rule on its policy's committed streams,
    :mod:`simulplay.analysis.sweep_commit`)."""
    for rule in rules:
        if isinstance(rule, Committing) or any(s.revising for s in table.streams):
            raise InputError.at(f"condition '{rule.canonical()}'", "groups the text a commit policy speaks, "
                                "not this table's updates", accepted="the plain rule on a table of the committed "
                                "streams (the modelled sweep builds one per policy)")
    parts: list[tuple[np.ndarray, ...]] = []
    lanes_r, lanes_s = [], []
    for r, rule in enumerate(rules):
        kind = _kind(rule)
        for s, stream in enumerate(table.streams):
            if len(stream) == 0 or (streams is not None and s not in streams[r]):
                continue
            if kind == "immediate":
                parts.append(_immediate(table, r, s))
            elif kind is None or not table.simple[s]:
                parts.append(_by_rule(table, rule, r, s))
            else:
                lanes_r.append(r)
                lanes_s.append(s)
    if lanes_r:
        parts.append(_buffered(table, rules, np.array(lanes_r), np.array(lanes_s)))
    if not parts:
        empty = np.zeros(0, np.int64)
        return Groups(empty, empty, empty, empty, np.zeros(0), empty)
    parts = [p if len(p) == 8 else (*p, np.full(len(p[0]), -1), np.full(len(p[0]), -1)) for p in parts]
    cols = [np.concatenate([p[k] for p in parts]) for k in range(8)]
    order = np.lexsort((cols[6], cols[2], cols[1], cols[0]))
    cols = [c[order] for c in cols]
    return Groups(*cols) if (cols[6] >= 0).any() else Groups(*cols[:6])


def _immediate(table: UpdateTable, r: int, s: int) -> tuple[np.ndarray, ...]:
    lo, hi = int(table.offsets[s]), int(table.offsets[s + 1])
    idx = np.arange(lo, hi)
    k = len(idx)
    return (np.full(k, r), np.full(k, s), idx, idx, table.times[lo:hi].copy(),
            np.full(k, TRIGGER_CODE["immediate"]))


def _by_rule(table: UpdateTable, rule: Rule, r: int, s: int) -> tuple[np.ndarray, ...]:
    """A rule's own ``group`` on one stream (rules the engine does not cover)."""
    groups = groups_of(rule, table.streams[s])
    lo = int(table.offsets[s])
    k = len(groups)
    return (np.full(k, r), np.full(k, s), np.array([g.first + lo for g in groups], np.int64),
            np.array([g.last + lo for g in groups], np.int64), np.array([g.dispatch_s for g in groups], float),
            np.array([TRIGGER_CODE[g.trigger] for g in groups], np.int64),
            np.array([-1 if g.span is None else g.span[0] for g in groups], np.int64),
            np.array([-1 if g.span is None else g.span[1] for g in groups], np.int64))


def _lane_settings(rules: Sequence[Rule], lane_rule: np.ndarray):
    """Per lane: the deadline (s and ns), the content test (0 none, 1 words, 2 punct), its
    count threshold, and whether it counts letters and digits."""
    wait, test, need, by_char = [], [], [], []
    for r in lane_rule:
        rule = rules[int(r)]
        if isinstance(rule, Timer):
            wait.append(rule.w), test.append(0), need.append(0), by_char.append(False)
        elif isinstance(rule, Words):
            wait.append(rule.cap), test.append(1), need.append(rule.n), by_char.append(rule.unit == "char")
        else:
            wait.append(rule.cap), test.append(2), need.append(rule.min_words), by_char.append(rule.unit == "char")
    wait_s = np.array(wait, float)
    return wait_s, instant_keys(wait_s), np.array(test), np.array(need, np.int64), np.array(by_char)


def _buffered(table: UpdateTable, rules: Sequence[Rule], lane_rule: np.ndarray,
              lane_stream: np.ndarray) -> tuple[np.ndarray, ...]:
    """Timer, punct and words lanes, one group of every lane per step."""
    wait_s, wait_ns, test, need, by_char = _lane_settings(rules, lane_rule)
    n = table.n
    stream_of = np.repeat(np.arange(len(table.streams)), np.diff(table.offsets))
    sizes = np.diff(table.offsets)
    first_key = np.minimum.reduceat(table.keys, table.offsets[:-1][sizes > 0]) if n else np.zeros(0, np.int64)
    stream_min = np.zeros(len(table.streams), np.int64)
    stream_min[sizes > 0] = first_key
    keys = table.keys - stream_min[stream_of]  # ≥ 0 within each stream
    span = int(keys.max(initial=0)) + int(wait_ns.max(initial=0)) + 1
    if len(table.streams) * span >= 2**62:  # composite keys would overflow: search stream by stream
        global_keys = None
    else:
        global_keys = stream_of.astype(np.int64) * span + keys
    pos = table.offsets[lane_stream].copy()
    stop = table.offsets[lane_stream + 1]
    out: list[tuple[np.ndarray, ...]] = []
    lanes = np.arange(len(lane_rule))
    while len(lanes):
        p = pos[lanes]
        deadline = keys[p] + wait_ns[lanes]
        if global_keys is not None:
            e = np.searchsorted(global_keys, stream_of[p] * span + deadline, side="right") - 1
        else:
            e = np.array([np.searchsorted(keys[p0:s1], d, side="right") - 1 + p0
                          for p0, s1, d in zip(p, stop[lanes], deadline)], np.int64)
        content = _content_end(table, p, test[lanes], need[lanes], by_char[lanes])
        hit = content <= e
        last = np.where(hit, content, e)
        at_end = (e == stop[lanes] - 1) & (keys[e] < deadline)
        trigger = np.where(hit, np.where(test[lanes] == 1, TRIGGER_CODE["words"], TRIGGER_CODE["punct"]),
                           np.where(at_end, TRIGGER_CODE["eos"], TRIGGER_CODE["timer"]))
        fired = ~hit & ~at_end
        dispatch = np.where(fired, np.maximum(table.times[p] + wait_s[lanes], table.times[e]), table.times[last])
        out.append((lane_rule[lanes], lane_stream[lanes], p, last, dispatch, trigger))
        pos[lanes] = last + 1
        lanes = lanes[pos[lanes] < stop[lanes]]
    return tuple(np.concatenate([o[k] for o in out]) for k in range(6))


def _content_end(table: UpdateTable, p: np.ndarray, test: np.ndarray, need: np.ndarray,
                 by_char: np.ndarray) -> np.ndarray:
    """The first instant-block end at which each lane's content test holds for the text
    from ``p`` (n when none: the test never holds)."""
    n = table.n
    end = np.full(len(p), n, np.int64)
    if not (test > 0).any():
        return end
    base_w = table.words[p] - table.word_u[p]
    base_c = np.where(p > 0, table.chars[np.maximum(p - 1, 0)], 0)
    target_w = np.searchsorted(table.words, base_w + need, side="left")
    target_c = np.searchsorted(table.chars, base_c + need, side="left")
    lo = np.maximum(p, np.where(by_char, target_c, target_w))
    ok = lo < n
    safe = np.minimum(lo, n - 1)
    words_end = np.where(ok, table.block_end[safe], n)
    punct_lo = np.maximum(lo, table.next_opaque[p])
    punct_end = np.where(punct_lo < n, table.next_terminal[np.minimum(punct_lo, n - 1)], n)
    end = np.where(test == 1, words_end, end)
    return np.where(test == 2, punct_end, end)
