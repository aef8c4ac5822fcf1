"""The duration model's request features: the text's counts from running sums over the
updates, or the request's phonemes as the backend reads them (its joined text phonemized,
each distinct text once). The model itself: :mod:`simulplay.durationmodel.fit`."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from simulplay.grouping.vectorized import Groups, UpdateTable, last_opaque_char, per_distinct
from simulplay.traces.model import TERMINATORS, join_texts

#: The text terms of a backend without a phonemizer, in the order of the design matrix.
FEATURES = ("intercept", "chars", "words", "punct", "final")
#: The prefix of the phoneme terms (``ph:<symbol>``), which follow ``intercept`` and ``sentences``.
PHONEME_PREFIX = "ph:"
#: A phonemizer: a text's sentences, each a list of phoneme symbols (Piper's ``phonemize``).
Phonemizer = Callable[[str], list[list[str]]]
Spans = tuple[np.ndarray, np.ndarray]  # each request's first and last update (inclusive)


@dataclass(frozen=True)
class UpdateCounts:
    """Running sums over a table's updates for the text features (text length, glued
    updates, punctuation marks) and, with a phonemizer, the update texts and glue to
    join a request's text, with the phonemes of every text phonemized so far."""

    length: np.ndarray
    glued: np.ndarray
    punct: np.ndarray
    phonemize: Phonemizer | None = None
    texts: tuple[str, ...] = ()
    glue: np.ndarray | None = None
    known: dict[str, tuple[int, dict[str, int]]] = field(default_factory=dict)

    @property
    def weights(self) -> np.ndarray:
        """Each update's share weight for the anchoring: its characters + 1."""
        return np.diff(self.length).astype(float) + 1.0

    def phonemes_of(self, text: str) -> tuple[int, dict[str, int]]:
        """``(sentences, {symbol: count})`` of ``text`` (phonemized once, then remembered)."""
        got = self.known.get(text)
        if got is None:
            sentences = self.phonemize(text) if text.strip() else []
            bag: dict[str, int] = {}
            for sentence in sentences:
                for p in sentence:
                    bag[p] = bag.get(p, 0) + 1
            got = self.known[text] = (sum(1 for x in sentences if x), bag)
        return got


def _running(values) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(np.asarray(values, dtype=np.int64))])


def _punctuation(text: str) -> int:
    """Characters of Unicode category P*."""
    return sum(unicodedata.category(c)[0] == "P" for c in text)


def update_counts(table: UpdateTable, phonemize: Phonemizer | None = None) -> UpdateCounts:
    """The running sums of ``table``; with ``phonemize`` (the backend's phonemizer) the
    request features are its phonemes instead of the text's counts."""
    texts = tuple(t for s in table.streams for t in s.texts)
    glue = np.concatenate([s.glue for s in table.streams]) if table.streams else np.zeros(0, bool)
    punct = per_distinct(_punctuation, texts)
    return UpdateCounts(_running([len(t) for t in texts]), _running(glue), _running(punct), phonemize,
                        texts if phonemize else (), glue if phonemize else None)


class Features(Mapping):
    """The features of some requests, one float array per term: the text terms, or
    ``intercept``, ``sentences`` and one ``ph:<symbol>`` term per phoneme symbol. The
    phoneme counts are held once per distinct request text (``bag``, ``rows`` mapping
    each request to its text's row) and made into a request array only when a term is
    read, so a sweep of hundreds of thousands of requests holds one column at a time.
    ``extra`` holds arrays that are read but are not terms of the model (``chars`` for
    the service clock when the terms are phonemes)."""

    def __init__(self, base: dict[str, np.ndarray], bag: np.ndarray | None = None,
                 symbols: Sequence[str] = (), rows: np.ndarray | None = None,
                 extra: dict[str, np.ndarray] | None = None):
        self.base, self.bag, self.symbols, self.rows = base, bag, tuple(symbols), rows
        self.extra = extra or {}
        self._col = {PHONEME_PREFIX + p: i for i, p in enumerate(self.symbols)}

    def __getitem__(self, term: str) -> np.ndarray:
        if term in self.base:
            return self.base[term]
        if term in self.extra:
            return self.extra[term]
        if term in self._col:
            return self.bag[self.rows, self._col[term]].astype(float)
        raise KeyError(term)

    def __contains__(self, term: object) -> bool:  # without making the column (Mapping's would)
        return term in self.base or term in self.extra or term in self._col

    def __iter__(self) -> Iterator[str]:
        yield from self.base
        yield from self._col

    def __len__(self) -> int:
        return len(self.base) + len(self._col)

    def take(self, rows: np.ndarray) -> Features:
        """The features of the requests selected by ``rows`` (a mask or indices)."""
        return Features({t: v[rows] for t, v in self.base.items()}, self.bag, self.symbols,
                        None if self.rows is None else self.rows[rows], {t: v[rows] for t, v in self.extra.items()})


def take(features: Mapping[str, np.ndarray], rows: np.ndarray) -> Mapping[str, np.ndarray]:
    """The features of the requests selected by ``rows`` (a :class:`Features` or a dict)."""
    if isinstance(features, Features):
        return features.take(rows)
    return {t: v[rows] for t, v in features.items()}


def request_features(table: UpdateTable, counts: UpdateCounts, groups: Groups, *, text: bool = False) -> Features:
    """The features of each group's request: the text terms of :data:`FEATURES`, or with
    a phonemizer (and not ``text``) ``intercept``, ``sentences`` and the phoneme terms
    (:mod:`simulplay.durationmodel.fit`). A group with a character span (a framework rule's)
    has the same terms, counted on its span's text."""
    a, b = groups.first, groups.last
    n = b - a + 1
    joins = (n - 1) - (counts.glued[b + 1] - counts.glued[a + 1])  # spaces the join adds
    chars = (counts.length[b + 1] - counts.length[a] + joins).astype(float)
    spans = span_texts(table, groups)
    for i, t in spans.items():
        chars[i] = len(t)
    if counts.phonemize is not None and not text:
        return _phoneme_features(counts, a, b, chars, spans)
    lo = table.last_opaque[b]
    base = {
        "intercept": np.ones(len(a)),
        "chars": chars,
        "words": (table.words[b] - table.words[a] + table.word_u[a]).astype(float),
        "punct": (counts.punct[b + 1] - counts.punct[a]).astype(float),
        "final": ((lo >= a) & table.terminal[np.maximum(lo, 0)]).astype(float),
    }
    for i, t in spans.items():
        base["words"][i] = len(t.split())
        base["punct"][i] = sum(unicodedata.category(c)[0] == "P" for c in t)
        base["final"][i] = float(last_opaque_char(t) in TERMINATORS)
    return Features(base)


def span_texts(table: UpdateTable, groups: Groups) -> dict[int, str]:
    """The text of each group with a character span (by row), edge whitespace stripped."""
    if groups.span_start is None:
        return {}
    joined: dict[int, str] = {}
    out = {}
    for i in np.flatnonzero(groups.spanned):
        s = int(groups.stream[i])
        if s not in joined:
            joined[s] = table.streams[s].joined
        out[int(i)] = joined[s][int(groups.span_start[i]):int(groups.span_end[i])].strip()
    return out


def anchor_spans(table: UpdateTable, groups: Groups) -> Spans:
    """The updates each group's request is anchored on (the duration model's residual of
    its updates): its own, or for a group with a character span the updates whose last
    character other than whitespace it holds (so that each update counts in one group; none
    for a span that ends no update)."""
    first, last = groups.first.copy(), groups.last.copy()
    ends: dict[int, np.ndarray] = {}
    for i in np.flatnonzero(groups.spanned):
        s = int(groups.stream[i])
        if s not in ends:
            stream, at, e = table.streams[s], 0, []
            for k, t in enumerate(stream.texts):
                at += len(t) + (1 if k and not stream.glue[k] else 0)
                e.append(at - (len(t) - len(t.rstrip())))
            ends[s] = np.array(e, np.int64)
        off = int(table.offsets[s])
        first[i] = off + int(np.searchsorted(ends[s], groups.span_start[i], side="right"))
        last[i] = off + int(np.searchsorted(ends[s], groups.span_end[i], side="right")) - 1
    return first, last


def _phoneme_features(counts: UpdateCounts, a: np.ndarray, b: np.ndarray, chars: np.ndarray,
                      spans: dict[int, str] | None = None) -> Features:
    """Each distinct update range joined and phonemized once (the same range is the same
    text), its symbol counts in one row of a small matrix; a span's text phonemized as it is."""
    if spans:
        keys = [spans.get(i, (int(x), int(y))) for i, (x, y) in enumerate(zip(a, b))]
        distinct = list(dict.fromkeys(keys))
        index = {k: r for r, k in enumerate(distinct)}
        rows = np.array([index[k] for k in keys], np.int64)
        texts = [k if isinstance(k, str) else join_texts(counts.texts[k[0]:k[1] + 1], counts.glue[k[0]:k[1] + 1])
                 for k in distinct]
    else:
        ranges, rows = np.unique(np.stack([a, b], axis=1), axis=0, return_inverse=True) if len(a) else \
            (np.zeros((0, 2), np.int64), np.zeros(0, np.int64))
        texts = [join_texts(counts.texts[i:j + 1], counts.glue[i:j + 1]) for i, j in ranges]
    found = [counts.phonemes_of(t) for t in texts]
    symbols = sorted({p for _, bag in found for p in bag})
    col = {p: k for k, p in enumerate(symbols)}
    bag = np.zeros((len(found), len(symbols)), np.int32)
    for r, (_, got) in enumerate(found):
        for p, c in got.items():
            bag[r, col[p]] = c
    sentences = np.array([n for n, _ in found], float)
    rows = np.asarray(rows, np.int64).reshape(-1)
    return Features({"intercept": np.ones(len(a)), "sentences": sentences[rows]}, bag, symbols, rows,
                    {"chars": chars})
