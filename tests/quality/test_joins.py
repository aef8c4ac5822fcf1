"""Joins on hand-built signals: a known gap, silences, level step and click give exactly those.

Expected values come from how the signals are built (sample counts, sine amplitudes whose
50 ms windows hold whole periods, a one-sample click in digital silence), never from the
scorer's own helpers.
"""

import math

import numpy as np
import pytest

from simulplay.scorers.joins import joins, summarize

RATE = 16_000


def sine(n: int, amp: float) -> np.ndarray:
    """1 kHz at 16 kHz (16 samples a period), phase-shifted half a sample: no sample below
    amp·sin(π/16) (≈ 0.2·amp), so every sample is audible for amp ≥ 0.06."""
    return amp * np.sin(2 * np.pi * (np.arange(n) + 0.5) / 16)


def test_gap_silences_and_step_are_exact():
    a = np.concatenate([sine(8000, 0.5), np.zeros(1600)])  # 0.5 s tone, 0.1 s trailing silence
    b = np.concatenate([np.zeros(800), sine(8000, 0.25)])  # 0.05 s leading silence, tone at half the amplitude
    gap = 3200  # 0.2 s of idle
    x = np.concatenate([a, np.zeros(gap), b])
    t = joins(x, np.array([0, len(a) + gap]), np.array([len(a), len(b)]), RATE)
    assert len(t) == 1
    row = t.iloc[0]
    assert row["silence_before_s"] == 0.1 and row["gap_s"] == 0.2 and row["silence_after_s"] == 0.05
    assert row["pause_s"] == pytest.approx(0.35, abs=1e-12)
    assert row["level_before_db"] == pytest.approx(20 * math.log10(0.5 / math.sqrt(2)), abs=1e-9)
    assert row["step_db"] == pytest.approx(20 * math.log10(0.25 / 0.5), abs=1e-9)  # −6.02 dB
    assert row["at_s"] == (len(a) + gap) / RATE


def test_smooth_join_has_no_discontinuity_and_a_cut_has_one():
    whole = sine(16000, 0.5)  # one tone cut into two touching parts: the join continues the waveform
    t = joins(whole, np.array([0, 8000]), np.array([8000, 8000]), RATE)
    assert t.iloc[0]["discontinuity_db"] == pytest.approx(0.0, abs=1e-9)
    assert t.iloc[0]["pause_s"] == 0 and t.iloc[0]["step_db"] == pytest.approx(0.0, abs=1e-9)
    low = 0.5 * np.sin(2 * np.pi * 100 * np.arange(16000) / RATE)  # 100 Hz, cut at a crest (sample 40)
    cut = np.concatenate([low[:8040], -low[:7960]])  # the next part starts in antiphase: a jump of one amplitude
    assert joins(cut, np.array([0, 8040]), np.array([8040, 7960]), RATE).iloc[0]["discontinuity_db"] > 10


def test_a_click_in_silence_scores_its_energy_over_the_floor():
    c = 0.9
    a, b = np.zeros(4000), np.zeros(4000)
    b[0] = c  # one sample at the join; both sides digitally silent for more than 100 ms
    t = joins(np.concatenate([a, b]), np.array([0, 4000]), np.array([4000, 4000]), RATE)
    # first differences: +c at the click, −c after it, both inside the 5 ms (80-sample) window
    expected = 10 * math.log10((2 * c * c / 80 + 1e-10) / 1e-10)
    assert t.iloc[0]["discontinuity_db"] == pytest.approx(expected, abs=1e-9)
    assert t.iloc[0]["silence_before_s"] == 0.25 and t.iloc[0]["silence_after_s"] == 0.0


def test_summary_counts_joins_per_minute_and_per_100_words():
    x = np.concatenate([sine(8000, 0.5), sine(8000, 0.25), sine(8000, 0.5)])
    t = joins(x, np.array([0, 8000, 16000]), np.array([8000, 8000, 8000]), RATE)
    s = summarize(t, audio_s=1.5, n_words=8)
    assert s["n_joins"] == 2 and s["joins_per_min"] == 80 and s["joins_per_100_words"] == 25
    six = 20 * math.log10(2)
    assert s["step_median_db"] == pytest.approx(six, abs=1e-9)  # |−6.02| and |+6.02|
    assert s["step_p95_db"] == pytest.approx(six, abs=1e-9)


def test_one_part_has_no_join():
    t = joins(sine(800, 0.5), np.array([0]), np.array([800]), RATE)
    assert len(t) == 0 and summarize(t, 0.05, 1)["n_joins"] == 0
