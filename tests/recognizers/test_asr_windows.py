"""The window rule: consecutive windows, halves then quarters at the decoding capacity,
failed windows kept (a deterministic fake recognizer; real Whisper is in test_asr.py)."""

import numpy as np
import pytest

from simulplay.recognizers.base import SAMPLE_RATE, Decoded, Recognizer, Word
from simulplay.recognizers.windows import WindowRule, failed_windows, plan_windows, transcribe_waveform


class SpanRecognizer(Recognizer):
    """Decodes a piece into one word per second of audio; 'tokens' = samples // 1000.
    The capacity is a token count; ``fail_at`` makes decodes starting at that sample raise."""

    def __init__(self, capacity: int, fail_at: int | None = None):
        super().__init__(config=None)
        self.capacity = capacity
        self.fail_at = fail_at
        self.calls: list[int] = []
        self.loaded = True

    def load(self):
        pass

    def check_language(self, language):
        pass

    def identity(self):
        return {"package": "span@0"}

    def decode(self, audio, language):
        start = int(audio[0]) if len(audio) else 0  # the test audio holds each sample's index
        self.calls.append(len(audio))
        if self.fail_at is not None and start == self.fail_at:
            raise RuntimeError("boom\nsecond line")
        tokens = len(audio) // 1000
        if tokens >= self.capacity:
            return Decoded("", tokens=tokens, exceeded=True)
        return Decoded(f"w{start}", [Word(f"w{start}", 0.25, 0.5)], tokens=tokens)


def ramp(n):
    return np.arange(n, dtype=np.float32)


def test_windows_are_consecutive_from_the_start_and_the_last_is_shorter():
    rule = WindowRule(window_s=2.0)
    assert plan_windows(5 * SAMPLE_RATE + 7, rule) == [(0, 32000), (32000, 64000), (64000, 80007)]
    assert plan_windows(0, rule) == []
    assert rule.describe() == "2s,halves,quarters" and WindowRule(15, max_level=1).describe() == "15s,halves"


def test_a_window_over_capacity_is_split_into_exact_halves():
    n = 3 * SAMPLE_RATE + 1  # odd: the middle sample goes to the second half
    rec = SpanRecognizer(capacity=40)  # 48 tokens whole, 24 per half
    pieces = transcribe_waveform(rec, ramp(n), "en", WindowRule(window_s=10))
    mid = n // 2
    assert [(p.window, p.level, p.start, p.end) for p in pieces] == [(0, 1, 0, mid), (0, 1, mid, n)]
    assert not failed_windows(pieces)
    # word times move from piece time to compact time by the piece's start
    assert pieces[1].words[0].start_s == pytest.approx(0.25 + mid / SAMPLE_RATE)


def test_each_half_is_refined_on_its_own_into_quarters():
    # window 0: 4 s (64 tokens); window 1: 1.5 s (24 tokens, under capacity)
    n = int(5.5 * SAMPLE_RATE)
    rec = SpanRecognizer(capacity=20)  # halves of window 0 have 32 tokens, quarters 16
    pieces = transcribe_waveform(rec, ramp(n), "en", WindowRule(window_s=4))
    q = SAMPLE_RATE  # a quarter of 4 s
    assert [(p.window, p.level, p.start, p.end) for p in pieces] == [
        (0, 2, 0, q), (0, 2, q, 2 * q), (0, 2, 2 * q, 3 * q), (0, 2, 3 * q, 4 * q), (1, 1, 4 * q, 4 * q + 12000),
        (1, 1, 4 * q + 12000, n)]
    rec = SpanRecognizer(capacity=30)  # window 0's halves (32) split, window 1 (24) kept whole
    pieces = transcribe_waveform(rec, ramp(n), "en", WindowRule(window_s=4))
    assert [p.level for p in pieces] == [2, 2, 2, 2, 0]


def test_a_quarter_over_capacity_fails_its_window_and_the_others_survive():
    n = 8 * SAMPLE_RATE
    rec = SpanRecognizer(capacity=10)  # 4-s windows: quarters of 1 s have 16 tokens
    pieces = transcribe_waveform(rec, ramp(n), "en", WindowRule(window_s=4))
    assert failed_windows(pieces) == [0, 1]
    assert all("decoding capacity reached at the smallest split (quarter of 1.000 s, 16 tokens)" in p.error
               for p in pieces) and all(p.words == [] for p in pieces)
    rec = SpanRecognizer(capacity=100, fail_at=4 * SAMPLE_RATE)  # the second window's decode raises
    pieces = transcribe_waveform(rec, ramp(n), "en", WindowRule(window_s=4))
    assert failed_windows(pieces) == [1]
    assert pieces[1].error == "RuntimeError: boom second line" and pieces[0].text == "w0"


def test_no_split_when_splitting_is_off():
    rec = SpanRecognizer(capacity=10)
    pieces = transcribe_waveform(rec, ramp(2 * SAMPLE_RATE), "en", WindowRule(window_s=4, max_level=0))
    assert len(pieces) == 1 and pieces[0].level == 0 and "(window of 2.000 s" in pieces[0].error


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan")])
def test_window_length_must_be_positive(bad):
    with pytest.raises(ValueError, match="window_s"):
        WindowRule(window_s=bad)
