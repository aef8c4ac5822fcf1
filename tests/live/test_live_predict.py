"""Comparisons (b) and (c) of a live run against real Piper (durations=fixed) served on
loopback: the isolated synthesis has the live run's audio, and every written prediction
(L per output, ΔL, η and the run.json statistics) equals an independent recomputation
from the written tables: the serial clock and serial playback, and one FIFO server shared
by all outputs, each written out here by hand."""

import json

import numpy as np
import pandas as pd
import pytest

from tests.live.test_live_piper import PIPER, trace

KEYS = ["talk_id", "system", "condition"]


def serial_L(rows: pd.DataFrame, ready: np.ndarray) -> float:
    """Serial playback of one output's parts (ready times, audio_s): L = end − S."""
    end = 0.0
    for r, d in zip(ready, rows["audio_s"]):
        end = max(r, end) + d
    return end - float(rows["source_s"].iloc[0])


def isolated_L(m: pd.DataFrame) -> dict:
    out = {}
    for key, g in m.sort_values("seq").groupby(KEYS):
        ready, prev = [], 0.0
        for d, s in zip(g["dispatch_s"], g["service_s"]):
            prev = max(d, prev) + s
            ready.append(prev)
        out[key] = serial_L(g, np.array(ready))
    return out


def one_server_L(m: pd.DataFrame) -> dict:
    """One FIFO worker for every output: the next request to start is the one eligible first
    (ties by talk, system, condition); it starts when the worker is free."""
    outputs = {k: g.sort_values("seq").reset_index(drop=True) for k, g in m.groupby(KEYS)}
    nxt, eligible, ready = {k: 0 for k in outputs}, {k: g["dispatch_s"].iloc[0] for k, g in outputs.items()}, {}
    free = 0.0
    while eligible:
        k = min(eligible, key=lambda o: (eligible[o], o))
        g, j = outputs[k], nxt[k]
        free = max(eligible.pop(k), free) + g["service_s"].iloc[j]
        ready.setdefault(k, []).append(free)
        if j + 1 < len(g):
            nxt[k] = j + 1
            eligible[k] = max(g["dispatch_s"].iloc[j + 1], free)
    return {k: serial_L(outputs[k], np.array(r)) for k, r in ready.items()}


def live_L(requests: pd.DataFrame) -> dict:
    out = {}
    for key, g in requests.sort_values("seq").groupby(KEYS):
        g = g.assign(audio_s=g["n_samples"] / g["sample_rate"], source_s=8.0 / 4)
        out[key] = serial_L(g, g["last_byte_s"].to_numpy())
    return out


def eta(L: dict, cond: str, ref: str) -> float:
    """One talk: η = δ(cond) − δ(ref), δ = L(A) − L(F)."""
    return (L["t1", "A", cond] - L["t1", "F", cond]) - (L["t1", "A", ref] - L["t1", "F", ref])


@pytest.mark.slow
def test_predictions_from_an_isolated_synth_match_a_hand_recomputation(cli, tmp_path):
    res = cli("live", trace(tmp_path / "t.jsonl"), "--rule", "immediate", "--rule", "timer:w=2", "--backend", PIPER,
              "--out", tmp_path / "run", "--speed", "4", "--predict", "--a", "A", "--f", "F")
    assert res.returncode == 0, res.stderr
    assert "(b) isolated synthesis" in res.stdout and "(c) 4 outputs at once" in res.stdout
    run = tmp_path / "run"
    live, iso = pd.read_parquet(run / "live.parquet"), pd.read_parquet(run / "isolated.parquet")
    both = live.merge(iso, on=[*KEYS, "seq"], suffixes=("_live", "_iso"))
    assert len(both) == 12 and (both["n_samples_live"] == both["n_samples_iso"]).all()  # the same audio
    assert np.allclose(both["dispatch_s_live"], both["dispatch_s_iso"])  # the same (scaled) time base
    table = pd.read_parquet(run / "prediction.parquet").set_index(KEYS)
    expected = {"live": live_L(pd.read_parquet(run / "requests.parquet")), "isolated": isolated_L(iso),
                "shared": one_server_L(iso)}
    for model, L in expected.items():
        for key, value in L.items():
            assert table.loc[key, f"L_{model}_s"] == pytest.approx(value, abs=1e-6), (model, key)
            if model != "live":
                assert table.loc[key, f"dL_{model}_s"] == pytest.approx(value - expected["live"][key], abs=1e-6)
    row = pd.read_parquet(run / "prediction_eta.parquet").set_index("condition").loc["timer:w=2"]
    for model, L in expected.items():
        assert row[f"eta_{model}_s"] == pytest.approx(eta(L, "timer:w=2", "immediate"), abs=1e-6)
    pred = json.loads((run / "run.json").read_text())["prediction"]
    d = np.array([expected["isolated"][k] - expected["live"][k] for k in expected["live"]]) * 1e3
    assert pred["isolated"]["max_abs_dL_ms"] == pytest.approx(np.abs(d).max(), abs=1e-3)
    assert pred["isolated"]["p50_abs_dL_ms"] == pytest.approx(np.median(np.abs(d)), abs=1e-3)
    assert pred["outputs_at_once"] == 4
    assert pred["synth"]["synthesized"] == live["text"].nunique()  # a text two outputs share: synthesized once


def test_a_translator_the_run_lacks_is_refused_before_anything_runs(cli, tmp_path):
    res = cli("live", trace(tmp_path / "t.jsonl"), "--rule", "immediate", "--rule", "timer:w=2", "--backend",
              "http:base_url=http://127.0.0.1:9/v1", "--out", tmp_path / "run", "--predict", "--a", "X", "--f", "F")
    assert res.returncode == 2 and "--a X" in res.stderr
    assert not (tmp_path / "run" / "run.json").exists()


@pytest.mark.parametrize("flags", [["--predict", "--a", "A"], ["--a", "A", "--f", "F"],
                                   ["--predict", "--reference", "immediate"]])
def test_eta_flags_need_each_other_and_predict(cli, tmp_path, flags):
    res = cli("live", trace(tmp_path / "t.jsonl"), "--rule", "immediate", "--rule", "timer:w=2", "--backend",
              "http:base_url=http://127.0.0.1:9/v1", "--out", tmp_path / "run", *flags)
    assert res.returncode == 2 and "--a/--f/--reference" in res.stderr


@pytest.mark.slow
def test_outputs_played_one_at_a_time_get_no_shared_server_prediction(cli, tmp_path):
    res = cli("live", trace(tmp_path / "t.jsonl"), "--rule", "immediate", "--backend", PIPER, "--out",
              tmp_path / "run", "--speed", "4", "--concurrent", "1", "--predict")
    assert res.returncode == 0, res.stderr
    assert "(c) not measured" in res.stdout and "no η" in res.stdout
    run = tmp_path / "run"
    table = pd.read_parquet(run / "prediction.parquet")
    assert "L_shared_s" not in table and len(table) == 2
    live = live_L(pd.read_parquet(run / "requests.parquet"))
    iso = isolated_L(pd.read_parquet(run / "isolated.parquet"))
    for row in table.to_dict("records"):
        key = (row["talk_id"], row["system"], row["condition"])
        assert row["dL_isolated_s"] == pytest.approx(iso[key] - live[key], abs=1e-6)
    pred = json.loads((run / "run.json").read_text())["prediction"]
    assert pred["outputs_at_once"] == 1 and "shared" not in pred and not (run / "prediction_eta.parquet").exists()


def test_the_isolated_synthesis_is_written_once_in_the_live_time_base(tmp_path, monkeypatch):
    """``isolated.parquet`` is written once, already on the live time base: dispatch and source
    times are the trace's divided by the speed, and each row's signature records the speed."""
    import simulplay.core.tables as tables
    import simulplay.live.predict as predict
    import simulplay.synthesis.run as synthesis
    from simulplay.backends import parse_backend
    from simulplay.grouping import parse_rule
    from simulplay.live.predict import isolated_synth
    from simulplay.store.store import AudioStore
    from simulplay.traces import read_trace
    from tests.support import fakes  # noqa: F401  (registers the fake backend)
    from tests.support.factories import small_trace

    small_trace(tmp_path / "t.jsonl", n_streams=2, n_updates=4, source_s=12.0)
    writes = []
    real = tables.write_table
    for module in (synthesis, predict):  # every writer the isolated synthesis could go through
        monkeypatch.setattr(module, "write_table", lambda df, path, *a, **k: (writes.append(path),
                                                                              real(df, path, *a, **k)))
    out = tmp_path / "isolated.parquet"
    manifest, counts = isolated_synth([tmp_path / "t.jsonl"], [parse_rule("immediate")],
                                      parse_backend("fake-test:reuse=never"),
                                      AudioStore(tmp_path / "store"), out, speed=4.0)
    assert writes.count(out) == 1 and counts["synthesized"] == 8
    trace = read_trace(tmp_path / "t.jsonl").sort_values(["talk_id", "system", "seq"])
    got = manifest.sort_values(["talk_id", "system", "seq"])
    assert got["dispatch_s"].tolist() == (trace["time_s"] / 4.0).tolist()  # immediate: one request per update
    assert set(got["source_s"]) == {3.0}
    written, meta = tables.read_table(out)
    pd.testing.assert_frame_equal(written.reset_index(drop=True), manifest.reset_index(drop=True), check_dtype=False)
    assert {s["speed"] for s in tables.stored_signatures(meta, len(written))} == {4.0}
