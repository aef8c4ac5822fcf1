"""Excerpts for a listening test: stretches of one output that hold the same words under two
conditions, aligned by the trace's text (docs/quality.md#listening-tests).

An output's requests, joined in ``seq`` order with the trace's rule (one space, none before a
glued request: :func:`simulplay.traces.model.join_texts`), give its text; each request ends at a
character of that text. Where two conditions of one talk (same system, backend and realization)
both end a request at the same character, an excerpt may start or end: the requests between two
such shared ends say exactly the same words under both conditions. An excerpt's audio under a
condition is its listener audio (what ``simulplay render`` writes) from the first sample of the
excerpt's first sounding request to the last sample of its last one, so the waits between those
requests are heard as the listener hears them.

Each output's shared ends are cut greedily from its start into excerpts lasting at most
``excerpt_s`` seconds under the longer of the two conditions; a stretch between two neighbouring
shared ends that alone lasts longer is skipped and counted (``n_too_long``). Pure: samples in,
spans out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Requests:
    """One output's requests in ``seq`` order: where each ends in the output's text
    (characters), and the first and stop sample of its sound in the listener audio
    (``-1, -1`` for a request that made no sound)."""

    text: str
    ends: np.ndarray  # character offset after each request's text
    first: np.ndarray  # first sample, or -1
    stop: np.ndarray  # sample after the last, or -1


@dataclass(frozen=True)
class Span:
    """An excerpt of one output pair: characters ``[char_start, char_stop)`` of the text and,
    per condition (in the pair's order), the samples ``[start, stop)`` of its listener audio."""

    char_start: int
    char_stop: int
    samples: tuple[tuple[int, int], ...]

    def seconds(self, rate: int) -> float:
        """The longer condition's duration (seconds at ``rate`` Hz)."""
        return max(b - a for a, b in self.samples) / rate


def text_ends(texts: Sequence[str], glue: Sequence[bool]) -> tuple[str, np.ndarray]:
    """The joined text (one space between requests, none before a glued one; the first
    request's glue ignored) and the character offset after each request."""
    out, ends = "", []
    for i, (t, g) in enumerate(zip(texts, glue)):
        out += ("" if i == 0 or g else " ") + str(t)
        ends.append(len(out))
    return out, np.asarray(ends, np.int64)


def _sound_between(req: Requests, lo: int, hi: int) -> tuple[int, int] | None:
    """Samples from the first sound of the requests ending after ``lo`` through the last sound
    of those ending at or before ``hi``; None when none of them sounds."""
    inside = (req.ends > lo) & (req.ends <= hi) & (req.first >= 0)
    if not inside.any():
        return None
    return int(req.first[inside].min()), int(req.stop[inside].max())


def shared_spans(pair: Sequence[Requests], rate: int, excerpt_s: float) -> tuple[list[Span], int]:
    """The excerpts of one output pair (module docstring) and the number of stretches
    skipped as longer than ``excerpt_s`` seconds (samples at ``rate`` Hz). The two texts
    must be equal (checked by the caller)."""
    shared = sorted(set(pair[0].ends.tolist()) & set(pair[1].ends.tolist()))
    cuts = [0, *shared]
    spans: list[Span] = []
    too_long, i = 0, 0
    while i < len(cuts) - 1:
        best = None
        for j in range(i + 1, len(cuts)):
            sounds = [_sound_between(r, cuts[i], cuts[j]) for r in pair]
            if any(s is None for s in sounds):
                continue
            span = Span(cuts[i], cuts[j], tuple(sounds))  # type: ignore[arg-type]
            if span.seconds(rate) > excerpt_s:
                break
            best = (j, span)
        if best is None:
            too_long += 1
            i += 1
        else:
            spans.append(best[1])
            i = best[0]
    return spans, too_long


def words_of(text: str, span: Span) -> str:
    """The excerpt's words: its characters of the text, stripped."""
    return text[span.char_start:span.char_stop].strip()
