"""``simulplay demo --frameworks``: its design and its table (docs/frameworks.md)."""

import numpy as np
import pandas as pd
import pytest

from simulplay.grouping.grid import parse_grids
from simulplay.workflows.frameworks import (
    FRAMEWORK_RULES,
    KNOB_GRIDS,
    frameworks_experiment,
    frameworks_table,
    knob_table,
)


def test_the_design_is_the_demos_under_the_framework_rules(tmp_path):
    exp = frameworks_experiment(tmp_path / "demo")
    assert [r.canonical() for r in exp.rules] == [
        "immediate", "timer:w=2", "timer:w=4", "punct:cap=2,min_words=3", "words:n=8,cap=2",
        "livekit:min_sentence_len=5,stream_context_len=10", "livekit:min_sentence_len=10,stream_context_len=10",
        "livekit:min_sentence_len=20,stream_context_len=10", "livekit:min_sentence_len=40,stream_context_len=10",
        "livekit-pacer:min_audio_buffer=1,max_text_length=300,min_sentence_len=20",
        "livekit-pacer:min_audio_buffer=5,max_text_length=300,min_sentence_len=20",
        "livekit-pacer:min_audio_buffer=8,max_text_length=300,min_sentence_len=20", "pipecat",
        "realtimetts:minimum_sentence_length=10,minimum_first_fragment_length=10,"
        "fast_sentence_fragment=true,fast_sentence_fragment_allsentences=true,context_size=12"]
    assert len(FRAMEWORK_RULES) == len(exp.rules)
    assert exp.out == (tmp_path / "demo" / "frameworks").resolve()
    assert exp.store == (tmp_path / "demo" / "store").resolve()  # the demo's own store: its audio is reused
    assert (exp.a, exp.f, exp.reference) == ("eager", "batched", "immediate")
    assert not (exp.variants or exp.edges or exp.sweep or exp.contrasts) and exp.quality is None
    # the knobs swept on the run's models: 8 points each, the run's own points among them
    points = {r.canonical() for g in parse_grids(list(KNOB_GRIDS)) for r in g.rules()}
    assert len(points) == 16 and {r.canonical() for r in exp.rules if "livekit" in r.canonical()} <= points


def test_the_table_by_hand():
    eta = pd.DataFrame({"condition": ["pipecat"], "eta_s": [1.5], "ci_low_s": [0.5], "ci_high_s": [2.5]})
    # two outputs of 120 s and 60 s of source: 4 and 1 parts → 3 + 0 joins in 3 minutes
    summary = pd.DataFrame({"condition": ["pipecat", "pipecat", "immediate"], "system": ["eager", "batched", "eager"],
                            "offset_s": [2.0, 4.0, 99.0], "first_play_s": [10.0, np.nan, 99.0],
                            "idle_s": [1.0, 2.0, 99.0], "n_parts": [4, 1, 99], "source_s": [120.0, 60.0, 99.0]})
    row = frameworks_table(eta, summary).iloc[0]
    assert row["condition"] == "pipecat" and (row["eta_s"], row["ci_low_s"], row["ci_high_s"]) == (1.5, 0.5, 2.5)
    assert row["mean_L_s"] == pytest.approx(3.0)
    assert row["first_play_s"] == pytest.approx(10.0)  # an output with no audio has no first playback
    assert row["idle_s"] == pytest.approx(1.5)
    assert row["joins_per_min"] == pytest.approx(1.0)


def test_the_knob_table_by_hand():
    sweep = pd.DataFrame({"rule": ["livekit-pacer:a", "livekit-pacer:b"], "modelled_eta_s": [-1.0, -2.0],
                          "modelled_ci_low_s": [-3.0, -4.0], "modelled_ci_high_s": [0.5, 0.25],
                          "modelled_L_a_s": [2.0, 3.0], "modelled_L_f_s": [4.0, 6.0]})
    check = pd.DataFrame({"condition": ["livekit-pacer:b"], "measured_eta_s": [-2.5], "measured_L_a_s": [4.5],
                          "measured_L_f_s": [5.0]})
    got = knob_table(sweep, check)
    assert got["modelled_mean_L_s"].tolist() == [3.0, 4.5]  # the two translators' means, averaged
    assert np.isnan(got.loc[0, "measured_eta_s"]) and (got.loc[1, "measured_eta_s"], got.loc[1, "measured_mean_L_s"]) \
        == (-2.5, 4.75)
