"""Revising streams: hypotheses, retractions and normalized erasure.

An update of a re-translating translator may take back text: ``retract_i`` characters
are removed from the end of the hypothesis before ``text_i`` is appended,

    H_i = cut + sep + text_i,   cut = H_{i-1}[: len(H_{i-1}) - retract_i],

where ``sep`` is one space unless ``cut`` is empty, ``text_i`` is empty (an update that
only retracts) or the update is glued. With every ``retract_i = 0`` this is
:func:`simulplay.traces.model.join_texts`, so append-only streams are the special case.

The **normalized erasure** of a stream (Arivazhagan et al., 2020) is the number of
retracted words (whitespace words of each retracted span, a word cut into counting as
one) over the words of the final hypothesis: what ``simulstream.metrics.stats.
NormalizedErasure`` counts on a simulstream log (the detokenized ``deleted_tokens`` of
each packet, over the words of the final output).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from simulplay.traces.model import Stream, apply_update, word_count

__all__ = ["apply_update", "final_hypothesis", "hypotheses", "retractions", "revision_stats"]


def retractions(stream: Stream) -> np.ndarray:
    """Each update's ``retract`` as int64 (zeros for an append-only stream)."""
    return np.zeros(len(stream), np.int64) if stream.retract is None else np.asarray(stream.retract, np.int64)


def hypotheses(texts: Sequence[str], glue: Sequence[bool], retract: Sequence[int]) -> Iterator[tuple[str, str]]:
    """For each update, the text it retracted and the hypothesis after it."""
    h = ""
    for x, g, r in zip(texts, glue, retract):
        r = int(r)
        gone = h[len(h) - r:] if r else ""
        h = apply_update(h, r, x, bool(g))
        yield gone, h


def final_hypothesis(stream: Stream) -> str:
    """The hypothesis after the stream's last update (:attr:`Stream.joined`)."""
    return stream.joined


def revision_stats(stream: Stream) -> dict[str, float | int]:
    """``revisions`` (updates that retract), ``retracted_chars``, ``retracted_words`` and
    ``normalized_erasure`` (retracted words / words of the final hypothesis; NaN when the
    final hypothesis is empty)."""
    revisions = chars = words = 0
    last = ""
    for gone, hypothesis in hypotheses(stream.texts, stream.glue, retractions(stream)):
        last = hypothesis
        if gone:
            revisions += 1
            chars += len(gone)
            words += word_count(gone)
    final = word_count(last)
    return {"revisions": revisions, "retracted_chars": chars, "retracted_words": words,
            "normalized_erasure": words / final if final else float("nan")}
