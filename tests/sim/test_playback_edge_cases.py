"""Edge cases of serial playback: empty outputs, silent parts, one talk, early readiness."""

import numpy as np
import pandas as pd

from simulplay.manifest import validate_manifest
from simulplay.sim import replay
from tests.support.factories import manifest


def summary(reqs, source_s=10.0):
    return replay(validate_manifest(manifest({("t", "A", "c"): reqs}, source_s), "m")).summary.iloc[0]


def test_an_output_with_no_audio_has_no_end():
    row = summary([(0, 1, 0.0), (1, 1, 0.0)])
    assert row["n_parts"] == 2 and row["audio_s"] == 0 and row["idle_s"] == 0
    assert np.isnan(row["first_play_s"]) and np.isnan(row["end_s"]) and np.isnan(row["offset_s"])
    assert row["limiting_seq"] is pd.NA  # no part was played: no limiting event


def test_zero_duration_parts_are_skipped_but_occupy_the_synthesizer():
    # the silent request (punctuation only) takes 5 s of service and delays the next one
    row = summary([(0, 1, 2.0), (0, 5, 0.0), (0, 1, 1.0)])
    assert row["audio_s"] == 3 and row["end_s"] == 8  # third ready at 7, plays 7..8
    assert row["idle_s"] == 1 + 4  # initial wait 1, then 3 → 7
    assert row["limiting_seq"] == 2


def test_a_silent_last_part_does_not_move_the_end():
    row = summary([(0, 1, 2.0), (20, 1, 0.0)])
    assert row["end_s"] == 3 and row["idle_s"] == 1


def test_all_parts_ready_before_time_zero_start_at_zero():
    row = summary([(-10, 1, 2.0), (-9, 1, 1.0)])
    assert row["first_play_s"] == 0 and row["end_s"] == 3 and row["idle_s"] == 0
    assert row["limiting_seq"] == 0


def test_a_single_talk_single_part():
    row = summary([(2, 0.5, 1.5)], source_s=2)
    assert (row["first_play_s"], row["end_s"], row["offset_s"], row["idle_s"]) == (2.5, 4.0, 2.0, 2.5)
