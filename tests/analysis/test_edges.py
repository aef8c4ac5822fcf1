"""Edge-silence trimming as a pure function of speech probabilities (docs/diagnostics.md#edge-silence-replay)."""

import numpy as np
import pandas as pd
import pytest
import soxr
from hypothesis import given, settings
from hypothesis import strategies as st

from simulplay.analysis.edges import (
    FRAME,
    frame_bounds,
    frame_count,
    guard_samples,
    keep_bounds,
    resampled_length,
    speech_samples,
)
from simulplay.core.errors import InputError
from simulplay.workflows.edges import check_guard, parse_thresholds


def test_kept_span_runs_from_first_to_last_speech_frame_plus_guard_and_keeps_interior_pauses():
    probs = np.array([0.1, 0.2, 0.9, 0.1, 0.05, 0.8, 0.2, 0.1])
    n = len(probs) * FRAME
    # guard 10 ms = 160 samples at 16 kHz; frame 3 and 4 (a pause) stay inside
    assert keep_bounds(probs, n, 16_000, 0.5, guard_ms=10) == (2 * FRAME - 160, 6 * FRAME + 160)
    assert keep_bounds(probs, n, 16_000, 0.5, guard_ms=0) == (2 * FRAME, 6 * FRAME)
    assert speech_samples(probs, n, 16_000, 0.5) == 2 * FRAME


def test_a_probability_equal_to_the_threshold_is_speech():
    probs = np.array([0.1, 0.5, 0.1], dtype=np.float32)
    assert keep_bounds(probs, 3 * FRAME, 16_000, 0.5, guard_ms=0) == (FRAME, 2 * FRAME)
    assert keep_bounds(probs, 3 * FRAME, 16_000, 0.50001, guard_ms=0) == (0, 0)


def test_guard_is_clipped_to_the_waveform():
    probs = np.array([0.9, 0.1, 0.9])
    assert keep_bounds(probs, 3 * FRAME, 16_000, 0.5, guard_ms=100) == (0, 3 * FRAME)


def test_final_partial_frame_keeps_its_real_length():
    n = 3 * FRAME + 100  # the last frame holds 100 real samples (the model saw 412 zeros after them)
    probs = np.array([0.0, 0.0, 0.0, 0.95])
    assert keep_bounds(probs, n, 16_000, 0.5, guard_ms=0) == (3 * FRAME, n)
    assert speech_samples(probs, n, 16_000, 0.5) == 100
    assert keep_bounds(probs, n, 16_000, 0.5, guard_ms=20) == (3 * FRAME - 320, n)


def test_waveform_without_a_speech_frame_keeps_nothing():
    probs = np.array([0.29, 0.1, 0.0])
    assert keep_bounds(probs, 3 * FRAME - 7, 16_000, 0.3) == (0, 0)
    assert speech_samples(probs, 3 * FRAME - 7, 16_000, 0.3) == 0
    assert keep_bounds(np.zeros(0), 0, 22_050, 0.3) == (0, 0)  # a request without audio


def test_frames_on_the_16k_grid_map_to_original_samples_half_up():
    # 512 samples at 16 kHz are 705.6 samples at 22,050 Hz
    n = 10_000
    bounds = frame_bounds(frame_count(n, 22_050), n, 22_050)
    assert list(bounds[:6]) == [0, 706, 1411, 2117, 2822, 3528]
    assert bounds[-1] == n and np.all(np.diff(bounds) > 0)
    assert guard_samples(100, 22_050) == 2205 and guard_samples(100, 16_000) == 1600
    probs = np.zeros(frame_count(n, 22_050))
    probs[5] = 1.0
    assert keep_bounds(probs, n, 22_050, 0.5, guard_ms=0) == (3528, 4234)
    assert keep_bounds(probs, n, 22_050, 0.5, guard_ms=100) == (3528 - 2205, 4234 + 2205)


@pytest.mark.parametrize("rate", [8_000, 16_000, 22_050, 24_000, 32_000, 44_100, 48_000, 96_000])
def test_resampled_length_is_what_soxr_makes(rate):
    for n in [1, 2, 3, 5, 9, 511, 512, 513, 705, 706, 22_050, 33_333]:
        assert resampled_length(n, rate) == len(soxr.resample(np.zeros(n, np.float32), rate, 16_000)), n


def test_probabilities_must_match_the_waveform_length():
    with pytest.raises(ValueError, match="expected 4"):
        keep_bounds(np.zeros(3), 3 * FRAME + 1, 16_000, 0.5)
    with pytest.raises(ValueError, match="expected 2"):
        speech_samples(np.zeros(3), 1411, 22_050, 0.5)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_higher_thresholds_never_keep_more(data):
    rate = data.draw(st.sampled_from([16_000, 22_050, 24_000, 44_100]))
    n = data.draw(st.integers(1, 30_000))
    k = frame_count(n, rate)
    probs = np.array(data.draw(st.lists(st.floats(0, 1, width=32), min_size=k, max_size=k)), dtype=np.float32)
    guard_ms = data.draw(st.floats(0, 300))
    spans = [keep_bounds(probs, n, rate, t, guard_ms) for t in (0.3, 0.5, 0.7)]
    for (s_lo, e_lo), (s_hi, e_hi) in zip(spans, spans[1:]):
        if e_hi > s_hi:  # the higher threshold keeps a span inside the lower one's
            assert s_lo <= s_hi and e_hi <= e_lo
    kept = [e - s for s, e in spans]
    assert n >= kept[0] >= kept[1] >= kept[2] >= 0
    for t, (s, e) in zip((0.3, 0.5, 0.7), spans):
        assert 0 <= s <= e <= n and speech_samples(probs, n, rate, t) <= e - s


def test_thresholds_and_guard_are_checked():
    assert parse_thresholds("0.7, 0.3,0.5") == (0.3, 0.5, 0.7)
    for bad, fragment in (("0.3,x", "'x' is not a number"), ("0,0.5", "0 is not in (0, 1]"),
                          ("0.5,1.5", "1.5 is not in (0, 1]"), ("0.5,0.5", "0.5 is repeated")):
        with pytest.raises(InputError, match="expected comma-separated") as e:
            parse_thresholds(bad)
        assert fragment in str(e.value) and "--thresholds" in str(e.value)
    with pytest.raises(InputError, match="is not a duration"):
        check_guard(-1.0)


def hand_result(rows):
    """An EdgesResult from (talk, condition, n_samples, speech_samples, kept) rows at 1 kHz, one system."""
    from simulplay.analysis.edge_replay import EdgesResult
    from simulplay.vad import VadStats

    trims = pd.DataFrame([{"threshold": 0.5, "talk_id": t, "system": "A", "condition": c, "seq": 0, "n_samples": n,
                           "sample_rate": 1000, "keep_start": 0, "keep_end": kept, "speech_samples": sp}
                          for t, c, n, sp, kept in rows])
    summary = trims[["threshold", "talk_id", "system", "condition"]].copy()
    sigs = [{"rule": c, "threshold": 0.5} for c in summary["condition"]]
    return EdgesResult(summary, sigs, pd.DataFrame(), trims, VadStats(), {}, [])


def test_nonspeech_share_divides_summed_nonspeech_by_summed_reduction():
    from simulplay.analysis.edge_replay import nonspeech_share

    res = hand_result([("t1", "immediate", 10_000, 6000, 9000), ("t1", "timer:w=4", 7000, 5000, 6500),
                       ("t2", "immediate", 5000, 4000, 5000), ("t2", "timer:w=4", 4000, 3900, 4000)])
    table, sigs = nonspeech_share(res, [("immediate", "timer:w=4")])
    row = table.iloc[0]
    # t1: reduction 3 s, non-speech 4 − 2 = 2 s, edge 1 − 0.5 = 0.5 s; t2: 1 s, 1 − 0.1 = 0.9 s, 0 s
    assert row["n_talks"] == 2 and row["reduction_s"] == pytest.approx(2.0)
    assert row["nonspeech_s"] == pytest.approx(1.45) and row["speech_s"] == pytest.approx(0.55)
    assert row["share_pct"] == pytest.approx(100 * 2.9 / 4.0)  # not the mean of 66.7 % and 90 %
    assert row["edge_s"] == pytest.approx(0.25)
    assert sigs[0]["table"] == "nonspeech-share" and sigs[0]["reference"] == "immediate"


def test_nonspeech_share_fails_closed_on_a_missing_output():
    from simulplay.analysis.edge_replay import nonspeech_share
    from simulplay.core.errors import IncompleteError

    res = hand_result([("t1", "immediate", 1000, 500, 900), ("t1", "timer:w=4", 800, 500, 800),
                       ("t2", "immediate", 1000, 500, 900)])
    with pytest.raises(IncompleteError, match=r"talk_id=t2, condition=timer:w=4"):
        nonspeech_share(res, [("immediate", "timer:w=4")])
    table, sigs = nonspeech_share(res, [("immediate", "timer:w=4")], allow_incomplete=True)
    assert table["n_talks"].tolist() == [1] and sigs[0]["excluded"] == 1
    with pytest.raises(InputError, match="no condition 'punct"):
        nonspeech_share(res, [("immediate", "punct")])
