"""A closed-loop policy live against real Piper (durations=fixed) served on loopback: the
policy decides on the wall clock from what the virtual player holds, the live manifest
records each decision (trigger, what the policy saw), and comparison (b) against an
isolated closed-loop synth stays within 0.3 s at p95. A closed-loop policy can be the
reference of η."""

import json

import numpy as np
import pandas as pd
import pytest

from tests.live.test_live_piper import PIPER, trace

RULE = "backlog:below=1,max_chars=300,min_words=1"


def queued_at(req: pd.DataFrame, t: float, before: int) -> float:
    """q(t) from the live records of one output: the serial playback of its requests
    ready (last byte) at or before ``t`` among the first ``before``, ``max(0, C_k − t)``."""
    end, C = 0.0, 0.0
    for _, r in req.iloc[:before].iterrows():
        if r["last_byte_s"] > t:
            break
        end = max(r["last_byte_s"], end) + r["n_samples"] / r["sample_rate"]
        C = end
    return max(0.0, C - t)


@pytest.mark.slow
def test_backlog_live_records_its_decisions_and_the_isolated_closed_loop_synth_predicts_it(cli, tmp_path):
    # one output at a time: the serial server's queue (comparison (c)'s subject) stays out of (b)
    res = cli("live", trace(tmp_path / "t.jsonl"), "--rule", "backlog:below=1,min_words=1", "--backend", PIPER,
              "--out", tmp_path / "run", "--speed", "4", "--predict", "--concurrent", "1")
    assert res.returncode == 0, res.stderr
    run = tmp_path / "run"
    live, req = pd.read_parquet(run / "live.parquet"), pd.read_parquet(run / "requests.parquet")
    assert set(live["condition"]) == {RULE} and (live["error"] == "").all()
    # every update is spoken once, in order
    assert " ".join(live[live["system"] == "A"]["text"]) == "Good morning. We start with the weather. It is sunny " \
        "and warm today."
    for system, rows in req.groupby("system"):
        rows = rows.sort_values("seq").reset_index(drop=True)
        man = live[live["system"] == system].sort_values("seq").reset_index(drop=True)
        for j, r in man.iterrows():
            # what the policy saw at its decision, from the live records: the player's queue then
            assert r["queued_s"] == pytest.approx(queued_at(rows, r["dispatch_s"], j), abs=1e-6), (system, j)
            assert r["in_flight"] == 0  # backlog waits for its request in flight
            if r["trigger"] == "backlog":
                assert r["queued_s"] <= 1.0
        assert (rows["sent_s"] >= rows["dispatch_s"]).all()
    assert (live["trigger"] == "eos").sum() + (live["trigger"] == "backlog").sum() == len(live)
    iso = pd.read_parquet(run / "isolated.parquet")
    assert set(iso["condition"]) == {RULE} and np.isfinite(iso["queued_s"]).all()
    # on the live time base once: the first update (0.5 s in the trace, --speed 4) went at 0.125 s, S = 8 / 4
    assert iso.groupby("system")["dispatch_s"].min().tolist() == [0.125, 0.125] and (iso["source_s"] == 2.0).all()
    # comparison (b): the isolated closed-loop synth against the live run, per output
    table = pd.read_parquet(run / "prediction.parquet")
    record = json.loads((run / "run.json").read_text())
    pred = record["prediction"]
    assert record["language"]["mismatched"] == []  # the plan's language check, kept with closed-loop outputs too
    d = np.abs(table["dL_isolated_s"].to_numpy()) * 1e3
    assert pred["isolated"]["p95_abs_dL_ms"] == pytest.approx(np.percentile(d, 95), abs=1e-3)
    assert pred["isolated"]["p95_abs_dL_ms"] <= 300, pred["isolated"]
    assert "(b) isolated synthesis" in res.stdout


def test_a_closed_loop_policy_is_a_reference_the_run_has(cli, tmp_path):
    # the η design is checked before anything runs: the policy passes, and the unreachable
    # server is what stops the run
    res = cli("live", trace(tmp_path / "t.jsonl"), "--rule", "immediate", "--rule", "backlog", "--backend",
              "http:base_url=http://127.0.0.1:9/v1", "--out", tmp_path / "run", "--predict", "--a", "A", "--f", "F",
              "--reference", "backlog")
    assert res.returncode == 2 and "--reference" not in res.stderr and "127.0.0.1:9" in res.stderr, res.stderr
