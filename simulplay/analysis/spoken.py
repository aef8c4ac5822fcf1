"""What a listener got of a revising translator under each commit policy (docs/retranslation.md).

Per (talk, system, commit policy), from the trace alone (no synthesis):

* ``words_final``: whitespace words of the translator's final hypothesis;
* ``words_spoken``: whitespace words of the committed (spoken) text;
* ``spoken_then_retracted``: spoken words a later revision took back (a word cut into
  counts as one), and ``retracted_chars_spoken``, their characters;
* ``wer_pct`` and ``cer_pct``: the word and character error rates (jiwer's, as the Levenshtein
  distance of rapidfuzz, which jiwer aligns with) of the spoken text
  against the final hypothesis, both after the ``normalized`` normalization of content
  scoring (lowercase, letters, numbers and apostrophes of each word; characters of the
  normalized words joined by one space), in % of the final hypothesis (NaN when it is empty);
* ``lag_p50_s``, ``lag_p90_s``, ``lag_max_s``: the commit lag of the words of the final
  hypothesis, seconds from the update that last wrote a word's last character to its
  commit (percentiles linear between order statistics, NumPy's default);
* ``normalized_erasure``: of the input stream (retracted words / words of the final
  hypothesis), the same for every policy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd

from simulplay.analysis.content import normalize_token
from simulplay.core.signature import base_signature
from simulplay.grouping.commit import CommitPolicy, Committed
from simulplay.traces.model import Stream, word_count
from simulplay.traces.revisions import revision_stats

SPOKEN_COLUMNS = ("talk_id", "system", "commit", "words_final", "words_spoken", "spoken_then_retracted",
                  "retracted_chars_spoken", "wer_pct", "cer_pct", "lag_p50_s", "lag_p90_s", "lag_max_s",
                  "normalized_erasure")


def char_error_pct(reference: Sequence[str], hypothesis: Sequence[str], hint: int | None = None) -> float:
    """jiwer's character error rate of two token lists joined by one space, in % (NaN when the
    reference is empty): the characters' Levenshtein distance (rapidfuzz, which jiwer
    aligns with) over the reference's characters. ``hint``: the distance expected (it
    only picks rapidfuzz's faster banded algorithm; the result is exact either way)."""
    from rapidfuzz.distance import Levenshtein

    ref, hyp = " ".join(reference), " ".join(hypothesis)
    return 100.0 * Levenshtein.distance(ref, hyp, score_hint=hint) / len(ref) if ref else float("nan")


def word_error_pct(reference: Sequence[str], hypothesis: Sequence[str]) -> float:
    """jiwer's word error rate of two token lists, in % (NaN when the reference is empty):
    (S + D + I) / N, the words' Levenshtein distance (rapidfuzz) over the reference's words,
    as :func:`simulplay.analysis.content.edit_counts` counts it without the alignment."""
    from rapidfuzz.distance import Levenshtein

    return 100.0 * Levenshtein.distance(list(reference), list(hypothesis)) / len(reference) if reference \
        else float("nan")


@lru_cache(maxsize=1 << 16)
def _word(word: str) -> str:
    return normalize_token(word)


def _tokens(text: str) -> list[str]:
    """:func:`simulplay.analysis.content.tokens` under ``normalized``, each distinct word once."""
    return [w for w in map(_word, text.split()) if w]


@dataclass
class _Input:
    """What every policy's row of one stream shares: the final words and the erasure."""

    final: list[str]
    erasure: float
    rates: dict[tuple[str, ...], tuple[float, float]] = field(default_factory=dict)  # spoken words → WER, CER

    def error_rates(self, spoken: list[str]) -> tuple[float, float]:
        """WER and CER (%) of ``spoken`` against the final words (each distinct spoken text aligned once)."""
        key = tuple(spoken)
        if key not in self.rates:
            if not self.final:
                self.rates[key] = (float("nan"), float("nan"))
            elif spoken == self.final:  # nothing to align: no error
                self.rates[key] = (0.0, 0.0)
            else:
                wer = word_error_pct(self.final, spoken)
                hint = int(wer / 100 * len(self.final) * 8) + 1  # word edits × a generous word length
                self.rates[key] = (wer, char_error_pct(self.final, spoken, hint))
        return self.rates[key]


def stream_input(stream: Stream) -> _Input:
    """What every policy's row of ``stream`` shares: its final words and normalized erasure."""
    return _Input(_tokens(stream.joined), revision_stats(stream)["normalized_erasure"])


def spoken_row(stream: Stream, policy: CommitPolicy, shared: _Input | None = None,
               committed: Committed | None = None) -> dict[str, Any]:
    """One row of :data:`SPOKEN_COLUMNS` for one stream under one policy (``committed``: the
    policy's result on the stream, when already computed)."""
    c = committed if committed is not None else policy.commit(stream)
    if shared is None:
        shared = stream_input(stream)
    wer, cer = shared.error_rates(_tokens(c.stream.joined))
    lags = c.lags
    pct = np.percentile(lags, [50, 90]) if len(lags) else [np.nan, np.nan]
    return {"talk_id": stream.talk_id, "system": stream.system, "commit": policy.label(),
            "words_final": word_count(c.final), "words_spoken": c.spoken_words,
            "spoken_then_retracted": c.retracted_words, "retracted_chars_spoken": c.retracted_chars,
            "wer_pct": wer, "cer_pct": cer,
            "lag_p50_s": float(pct[0]), "lag_p90_s": float(pct[1]),
            "lag_max_s": float(lags.max()) if len(lags) else float("nan"),
            "normalized_erasure": shared.erasure}


def spoken_table(streams: Sequence[Stream], policies: Sequence[CommitPolicy]) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The table of what each stream's listener got under each policy (policy by policy,
    stream by stream), and its signature (``commit``: the policies; ``oracle`` when one of
    them is non-causal)."""
    shared = [stream_input(s) for s in streams]
    rows = [spoken_row(s, p, i) for p in policies for s, i in zip(streams, shared)]
    sig = base_signature(table="spoken", commit=[p.canonical() for p in policies], normalization="normalized",
                         oracle="non-causal: " + ", ".join(p.canonical() for p in policies if not p.causal)
                         if any(not p.causal for p in policies) else None)
    return pd.DataFrame(rows, columns=list(SPOKEN_COLUMNS)), sig


#: The per-policy columns of :func:`spoken_per_policy`.
PER_POLICY_COLUMNS = ("commit", "system", "talks", "words_spoken", "spoken_then_retracted", "retracted_per_min",
                      "wer_pct", "cer_pct", "lag_p50_s", "lag_p90_s", "lag_max_s", "normalized_erasure")
_MEANS = ("wer_pct", "cer_pct", "lag_p50_s", "lag_p90_s", "normalized_erasure")


def spoken_per_policy(spoken: pd.DataFrame, source: pd.DataFrame) -> pd.DataFrame:
    """Per (commit policy, system) of a :func:`spoken_table` (rows in their first order): the talks,
    the words spoken and spoken-then-retracted summed over the talks, the spoken-then-retracted
    words per minute of source (``source``: ``talk_id``, ``system``, ``source_s`` in seconds; the
    sum over the talks' summed minutes), the equal-talk means of WER, CER, lag p50 and p90 and
    normalized erasure, and the largest lag; ``_first``: the index of the group's first row."""
    s = spoken.assign(_first=range(len(spoken))).merge(
        source.drop_duplicates(["talk_id", "system"])[["talk_id", "system", "source_s"]],
        on=["talk_id", "system"], how="left")
    per = s.groupby(["commit", "system"], sort=False).agg(
        talks=("talk_id", "nunique"), words_spoken=("words_spoken", "sum"),
        spoken_then_retracted=("spoken_then_retracted", "sum"), _seconds=("source_s", "sum"),
        lag_max_s=("lag_max_s", "max"), _first=("_first", "first"), **{c: (c, "mean") for c in _MEANS}).reset_index()
    with np.errstate(divide="ignore", invalid="ignore"):
        per["retracted_per_min"] = np.where(per["_seconds"] > 0,
                                            per["spoken_then_retracted"] * 60.0 / per["_seconds"], np.nan)
    return per[[*PER_POLICY_COLUMNS, "_first"]]
