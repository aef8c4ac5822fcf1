"""`simulplay latency` against SimulEval 1.1.4's own instance and scorers.

Every expected value comes from SimulEval itself: a real ``SpeechToSpeechInstance`` receives
each audible part's samples at its readiness (tests/support/simuleval_drive.py), and SimulEval's
scorers score it. The readiness fed to SimulEval is computed here, independently of
simulplay: the serial clock in Python integers (nanoseconds) from the manifest's seconds.
"""

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from simulplay.analysis.latency import METRIC_COLUMNS, atd_speech
from simulplay.analysis.latency_table import latency_table
from simulplay.manifest import validate_manifest
from tests.support.simuleval_drive import ns, serial_ready, simuleval_instance, simuleval_scores

RATE = 22_050


def random_manifest(rng, n_outputs):
    rows = []
    for k in range(n_outputs):
        m = int(rng.integers(1, 9))
        t, dispatch = 0, []
        for _ in range(m):
            t += int(rng.choice([0, 0, int(rng.integers(1, 3_000_000)) * 1000]))  # ties included (µs steps)
            dispatch.append(t)
        service = [int(rng.choice([0, int(rng.integers(1, 2_000_000)) * 1000])) for _ in range(m)]
        n = [int(rng.choice([0, int(rng.integers(1, 40_000))])) if j else int(rng.integers(1, 40_000))
             for j in range(m)]
        if rng.random() < 0.3:  # back to back: each part dispatched when the one before ends (to the ns)
            service = [0] * m
            n = [int(rng.integers(1, 40_000)) for _ in range(m)]
            for j in range(1, m):
                dispatch[j] = dispatch[j - 1] + round(Fraction(n[j - 1] * 10**9, RATE))
        source_ns = (dispatch[-1] // 10**6 + int(rng.integers(1, 3000))) * 10**6
        for j in range(m):
            rows.append({"talk_id": f"t{k}", "system": "A", "condition": "c", "seq": j,
                         "dispatch_s": dispatch[j] / 1e9, "service_s": service[j] / 1e9, "audio_s": n[j] / RATE,
                         "n_samples": n[j], "sample_rate": RATE, "source_s": source_ns / 1e9})
    return pd.DataFrame(rows)


def expected_rows(manifest, tmp_path):
    """SimulEval's scores of every output, plain (dispatch) and _ca (ready)."""
    out = {}
    for talk, g in manifest.groupby("talk_id", sort=False):
        g = g.sort_values("seq")
        dispatch = [ns(x) for x in g["dispatch_s"]]
        starts, ready = serial_ready(dispatch, [ns(x) for x in g["service_s"]])
        _, plain = serial_ready(dispatch, [0] * len(g))
        contents = [[0.0] * n for n in g["n_samples"]]
        source_ns = ns(g["source_s"].iloc[0])
        row = {}
        for suffix, times in (("", plain), ("_ca", ready)):
            ins = simuleval_instance(tmp_path, times, contents, RATE, source_ns)
            row |= {f"{c}{suffix}": v for c, v in simuleval_scores(ins).items()}
        out[talk] = row
    return out


@pytest.mark.slow


def test_latency_table_equals_simuleval_scorers_on_random_timelines(tmp_path):
    rng = np.random.default_rng(17)
    m = random_manifest(rng, 120)
    res = latency_table(validate_manifest(m, "m"))
    want = expected_rows(m, tmp_path)
    assert len(res.table) == 120
    mismatches = []
    for row in res.table.to_dict("records"):
        for col, v in want[row["talk_id"]].items():
            if row[col] != v:  # exact: SimulEval's float operations, in its order
                mismatches.append((row["talk_id"], col, row[col], v))
    assert mismatches == []
    # the ties made the two forms and the silences differ somewhere (the test is not vacuous)
    t = res.table
    assert (t["atd_ms"] != t["atd_ms_ca"]).any() and (t["discontinuity_num_ca"] > 0).any()
    # parts touching to the nanosecond can be a sliver apart in ms (float ms, durations from samples):
    # SimulEval counts a silence there, and so do we
    assert ((t["discontinuity_num"] > 0) & (t["discontinuity_sum_ms"] < 1e-3)).any()
    assert (t["num_chunks"] < m.groupby("talk_id", sort=False).size().to_numpy()).any()  # silent parts dropped


def test_atd_hand_computed_example():
    """Worked by hand (SimulEval's ATD, speech in and out): parts delayed 640, 1280, 1920,
    2000 ms, lasting 250, 250, 250, 100 ms. Source chunks of 640, 640, 640, 80 ms give
    300 ms tokens ending at 300, 600, 640 | 940, 1240, 1280 | 1580, 1880, 1920 | 2000. Each
    part is one target token, played serially: ends 890, 1530, 2170, 2270. Token t pairs with
    source token t (never beyond the source read by its chunk): 300, 600, 640, 940. ATD =
    (590 + 930 + 1530 + 1330) / 4 = 1095."""
    assert atd_speech([640.0, 1280.0, 1920.0, 2000.0], [250.0, 250.0, 250.0, 100.0]) == 1095.0


def test_output_without_audio_has_no_metrics_and_zero_chunks():
    m = pd.DataFrame([{"talk_id": "t", "system": "A", "condition": "c", "seq": 0, "dispatch_s": 1.0,
                       "service_s": 0.2, "audio_s": 0.0, "source_s": 3.0}])
    row = latency_table(validate_manifest(m, "m")).table.iloc[0]
    assert row["num_chunks"] == 0 and row["num_chunks_ca"] == 0
    assert all(pd.isna(row[c]) for c in METRIC_COLUMNS if c != "num_chunks")


def test_plain_form_needs_dispatch_times():
    m = pd.DataFrame([{"talk_id": "t", "system": "A", "condition": "logged", "seq": 0, "dispatch_s": "",
                       "service_s": "", "ready_s": "1.5", "audio_s": "0.5", "source_s": "3"}])
    from simulplay.core.errors import InputError

    with pytest.raises(InputError, match="dispatch_s.*plain"):
        latency_table(validate_manifest(m, "m.csv"), source="m.csv")
