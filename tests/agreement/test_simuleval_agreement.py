"""Agreement with SimulEval 1.1.4's own speech-output playback (SpeechOutputInstance.summarize)."""

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from simuleval.evaluator.instance import SpeechToSpeechInstance
from simuleval.evaluator.scorers.latency_scorer import EndOffsetScorer, StartOffsetScorer

from simulplay.manifest import validate_manifest
from simulplay.sim import replay


def simuleval_instance(tmp_path, ready_ms, dur_ms, source_ms):
    """Drive SimulEval's instance directly, as its evaluator does after receiving segments.

    SimulEval records no segment for empty audio, so only positive-duration parts enter.
    """
    ins = SpeechToSpeechInstance.__new__(SpeechToSpeechInstance)
    ins.index = 0
    ins.args = SimpleNamespace(output=str(tmp_path))
    ins.dataloader = SimpleNamespace(get_source_audio_path=lambda i: "source.wav")
    ins.reference = None
    ins.sample_rate_value = 1000  # source at 1 kHz: its source_length is len(samples) ms
    ins.sample_list = range(int(round(source_ms)))
    ins.target_sample_rate = 100
    keep = [i for i, d in enumerate(dur_ms) if d > 0]
    ins.delays = [ready_ms[i] for i in keep]
    ins.durations = [dur_ms[i] for i in keep]
    ins.prediction_list = [[0.0] for _ in keep]
    ins.summarize()
    return ins


def test_agrees_with_simuleval_on_300_random_timelines(tmp_path):
    rng = np.random.default_rng(20261130)
    rows, cases = [], []
    for case in range(300):
        m = int(rng.integers(1, 40))
        ready = rng.uniform(0, 120, m)
        if rng.random() < 0.7:
            ready = np.sort(ready)  # a serial synthesizer's readiness; otherwise arbitrary order
        dur = rng.uniform(0.05, 6, m) * (rng.random(m) > 0.1)  # ~10% silent parts
        if dur.sum() == 0:
            dur[0] = 1.0
        source = float(rng.integers(20_000, 150_000)) / 1000
        # on whole nanoseconds, replay's resolution (it takes seconds to the nearest ns), so that
        # both sides see the same numbers; the rounding itself is tested in test_exact_time.py
        ready, dur = np.round(ready, 9), np.round(dur, 9)
        cases.append((ready, dur, source))
        for j in range(m):
            rows.append({"talk_id": f"t{case}", "system": "A", "condition": "c", "seq": j,
                         "dispatch_s": np.nan, "service_s": np.nan, "ready_s": ready[j],
                         "audio_s": dur[j], "source_s": source})
    summary = replay(validate_manifest(pd.DataFrame(rows), "m")).summary.set_index("talk_id")
    for case, (ready, dur, source) in enumerate(cases):
        ins = simuleval_instance(tmp_path, list(ready * 1000), list(dur * 1000), source * 1000)
        ours = summary.loc[f"t{case}"]
        end_offset_ms = EndOffsetScorer().compute(ins)
        start_offset_ms = StartOffsetScorer().compute(ins)
        assert ours["offset_s"] == pytest.approx(end_offset_ms / 1000, abs=1e-9)
        assert ready[dur > 0][0] == pytest.approx(start_offset_ms / 1000, abs=1e-12)
        initial_wait = ready[dur > 0][0]
        assert ours["idle_s"] - initial_wait == pytest.approx(sum(ins.silences) / 1000, abs=1e-9)
        assert ours["first_play_s"] == pytest.approx(ins.intervals[0][0] / 1000, abs=1e-12)
