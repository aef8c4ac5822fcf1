"""Blocks of the continuing-session protocol (Truong & Le (2026), Appendix F): which updates a
session gets, and when each text enters it.

A *block* is a run of consecutive updates of one stream whose whitespace word count lies
in ``[min_words, max_words]``; ``select_blocks`` draws one block per stream with a seeded
generator. The block's updates are grouped by a rule as if the block were the whole
stream, so the block's last update releases pending text (``eos``); ``feed_schedule``
gives each group's dispatch time in seconds from the block's first update.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulplay.core.errors import InputError
from simulplay.grouping import Rule
from simulplay.grouping.requests import stream_requests
from simulplay.traces.model import Stream, word_count


@dataclass(frozen=True)
class Block:
    """Updates ``first..last`` (inclusive) of one stream; ``stream`` holds only them."""

    talk_id: str
    system: str
    first: int
    last: int
    n_words: int
    stream: Stream

    @property
    def a_first(self) -> float:
        return float(self.stream.times[0])

    @property
    def a_last_rel(self) -> float:
        """The last original update's time, seconds from the block's first update."""
        return float(self.stream.times[-1] - self.stream.times[0])


def select_blocks(streams: list[Stream], *, min_words: int, max_words: int, seed: int) -> list[Block]:
    """One block per stream: a uniformly drawn start among those from which the block that
    first reaches ``min_words`` stays within ``max_words`` (one generator for all streams)."""
    if not 1 <= min_words <= max_words:
        raise InputError.at("--min-words/--max-words", f"{min_words}–{max_words} is not a word range",
                            accepted="1 ≤ min ≤ max")
    rng = np.random.default_rng(seed)
    blocks = []
    for s in streams:
        words = np.array([word_count(t) for t in s.texts])
        cum = np.concatenate([[0], np.cumsum(words)])
        candidates = []
        for i in range(len(words)):
            j = int(np.searchsorted(cum, cum[i] + min_words, side="left"))  # first end reaching min
            if j <= len(words) and cum[j] - cum[i] <= max_words:
                candidates.append((i, j - 1, int(cum[j] - cum[i])))
        if not candidates:
            raise InputError.at(f"talk {s.talk_id}, system {s.system}", f"has no block of {min_words}–{max_words} "
                                f"words ({int(cum[-1])} words in all)", accepted="a smaller --min-words or a larger "
                                "--max-words")
        first, last, n = candidates[int(rng.integers(len(candidates)))]
        sub = Stream(s.talk_id, s.system, s.source_s, s.times[first:last + 1], s.texts[first:last + 1],
                     s.glue[first:last + 1])
        blocks.append(Block(s.talk_id, s.system, first, last, n, sub))
    return blocks


def feed_schedule(block: Block, rule: Rule) -> list[tuple[float, str]]:
    """(dispatch seconds from the block's first update, text with its separating space)."""
    out = []
    for row in stream_requests(block.stream, rule):
        sep = "" if row["seq"] == 0 or row["glue"] else " "
        out.append((float(row["dispatch_s"]) - block.a_first, sep + row["text"]))
    return out
