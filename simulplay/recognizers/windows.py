"""The window rule: consecutive windows of the compact waveform, split at the decoding
capacity (Truong & Le (2026), Appendix D.2).

The compact waveform (an output's request audio concatenated in ``seq`` order, no idle)
at 16 kHz is cut into consecutive windows of ``window_s`` seconds from its start; the
last is shorter. Each window is decoded on its own with the language set and no
intended text. A window whose decode reaches the recognizer's decoding capacity is
split into halves; a half that still reaches it is split into quarters (each piece is
refined on its own, so a window may end as a half and two quarters). A quarter that
still reaches it, or a decode that raises, makes the window *failed*: the piece is kept
with its error and no words, and its output is incomplete. Positions are whole samples
at 16 kHz; a split puts the middle sample ``start + (end − start) // 2`` in the second
half. Word times are moved from piece time to compact-audio time by adding the piece's
start (the recognition-window offset is added first).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from simulplay.recognizers.base import SAMPLE_RATE, Recognizer, Word

LEVEL_NAMES = ("window", "half", "quarter")


@dataclass(frozen=True)
class WindowRule:
    """Consecutive ``window_s`` windows, split up to ``max_level`` times (2: halves, then quarters)."""

    window_s: float = 15.0
    max_level: int = 2

    def __post_init__(self):
        if not (np.isfinite(self.window_s) and self.window_s > 0):
            raise ValueError(f"window_s must be > 0 seconds, got {self.window_s}")
        if self.max_level not in (0, 1, 2):
            raise ValueError(f"max_level must be 0, 1 or 2, got {self.max_level}")

    def window_samples(self) -> int:
        return max(1, int(round(self.window_s * SAMPLE_RATE)))

    def describe(self) -> str:
        """``15s,halves,quarters`` — recorded in every signature."""
        return ",".join([f"{self.window_s:g}s", *("halves", "quarters")[: self.max_level]])


@dataclass
class Piece:
    """One decoded span of the compact waveform; samples at 16 kHz, words in compact seconds."""

    window: int
    level: int
    start: int
    end: int
    text: str = ""
    words: list[Word] = field(default_factory=list)
    tokens: int = -1
    error: str = ""

    @property
    def start_s(self) -> float:
        return self.start / SAMPLE_RATE

    @property
    def end_s(self) -> float:
        return self.end / SAMPLE_RATE


def plan_windows(n_samples: int, rule: WindowRule) -> list[tuple[int, int]]:
    """Consecutive ``[start, end)`` sample spans covering ``n_samples`` (the last shorter)."""
    w = rule.window_samples()
    return [(a, min(a + w, n_samples)) for a in range(0, n_samples, w)]


Aligner = Callable[[np.ndarray, str], list[Word]]


def transcribe_waveform(recognizer: Recognizer, audio: np.ndarray, language: str, rule: WindowRule, *,
                        aligner: Aligner | None = None) -> list[Piece]:
    """Decode every window of a 16 kHz compact waveform under the window rule."""
    pieces: list[Piece] = []
    for k, (a, b) in enumerate(plan_windows(len(audio), rule)):
        pieces += _decode_span(recognizer, audio, language, rule, k, a, b, 0, aligner)
    return pieces


def _decode_span(recognizer, audio, language, rule, window, a, b, level, aligner) -> list[Piece]:
    try:
        decoded = recognizer.decode(audio[a:b], language)
    except Exception as e:  # noqa: BLE001 - any recognizer failure is recorded, never dropped
        return [Piece(window, level, a, b, error=_describe_error(e))]
    if decoded.exceeded:
        if level >= rule.max_level:
            return [Piece(window, level, a, b, tokens=decoded.tokens,
                          error=f"decoding capacity reached at the smallest split ({LEVEL_NAMES[level]} of "
                          f"{(b - a) / SAMPLE_RATE:.3f} s, {decoded.tokens} tokens)")]
        mid = a + (b - a) // 2
        return (_decode_span(recognizer, audio, language, rule, window, a, mid, level + 1, aligner)
                + _decode_span(recognizer, audio, language, rule, window, mid, b, level + 1, aligner))
    words = decoded.words
    if aligner is not None:
        try:
            words = aligner(audio[a:b], decoded.text)
        except Exception as e:  # noqa: BLE001
            return [Piece(window, level, a, b, text=decoded.text, tokens=decoded.tokens,
                          error="forced alignment failed: " + _describe_error(e))]
    offset = a / SAMPLE_RATE
    return [Piece(window, level, a, b, decoded.text, [w.shifted(offset) for w in words], decoded.tokens)]


def _describe_error(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}".replace("\n", " ")[:500]


def failed_windows(pieces: list[Piece]) -> list[int]:
    """Indices of windows with a failed piece."""
    return sorted({p.window for p in pieces if p.error})


def pieces_columns(pieces: list[Piece]) -> dict[str, Any]:
    """The list columns of a transcript row (pieces and words, compact-audio seconds)."""
    words = [(i, w) for i, p in enumerate(pieces) for w in p.words]
    return {
        "piece_window": np.array([p.window for p in pieces], np.int64),
        "piece_level": np.array([p.level for p in pieces], np.int64),
        "piece_start_s": np.array([p.start_s for p in pieces], np.float64),
        "piece_end_s": np.array([p.end_s for p in pieces], np.float64),
        "piece_tokens": np.array([p.tokens for p in pieces], np.int64),
        "piece_text": np.array([p.text for p in pieces], dtype=object),
        "piece_error": np.array([p.error for p in pieces], dtype=object),
        "word": np.array([w.text for _, w in words], dtype=object),
        "word_start_s": np.array([w.start_s for _, w in words], np.float64),
        "word_end_s": np.array([w.end_s for _, w in words], np.float64),
        "word_probability": np.array([w.probability for _, w in words], np.float64),
        "word_piece": np.array([i for i, _ in words], np.int64),
    }
