"""``simulplay load`` against a scripted server: a hand-worked level (TTFA, service, RTF,
underruns) within the client's recorded lateness, failures counted by status and never
retried, open-loop arrivals, and the table read by ``replay --load-curve`` as it is."""

import math

import numpy as np
import pandas as pd
import pytest

from simulplay.core.errors import InputError
from simulplay.core.tables import read_table
from simulplay.formats.load import read_load_curve
from simulplay.live.client import Record
from simulplay.loadtest.run import LoadPlan, arrivals, load_curve, texts_sha256
from simulplay.loadtest.stats import knees, underran
from simulplay.sim.servers import slowdowns
from tests.live.fake_server import RATE, ScriptedServer
from tests.support.factories import manifest

# "slow": 0.1 s of silence-free waiting, 0.1 s of audio, 0.3 s more, 0.2 s of audio: the
# player would start at 0.1 s and run dry at 0.2 s, before the second piece (0.4 s): underran.
# "fast": 0.2 s of audio at once, 0.02 s later 0.1 s more: never dry.
SCRIPTS = {"slow": [("sleep", 0.1), ("audio", 2400), ("sleep", 0.3), ("audio", 4800)],
           "fast": [("audio", 4800), ("sleep", 0.02), ("audio", 2400)],
           "busy": [("status", 503)]}


def run(server, tmp_path, texts, plan, **kw):
    return load_curve(f"http:base_url={server.url}", plan, tmp_path / "load.csv", texts=texts, text_source="test",
                      **kw)


def test_a_hand_worked_level_within_the_recorded_lateness(tmp_path):
    with ScriptedServer(SCRIPTS) as server:
        res = run(server, tmp_path, ["slow", "fast"], LoadPlan((2,), requests=4), figure=False)
    row = res.table.iloc[0]
    timed = res.requests[~res.requests["warm"]]
    # the client's lateness, the server's own (its writes' lag behind its script), and loopback
    tol = timed["late_s"].max() + server.lag + 0.03
    assert (row["concurrency"], row["requests"], row["ok"], row["failed"]) == (2, 4, 4, 0)
    # hand-worked, per request: slow TTFA 0.1, service 0.4, audio 0.3 (RTF 4/3); fast 0, 0.02, 0.3
    by = timed.groupby("text")
    assert by.size().to_dict() == {"fast": 2, "slow": 2}
    for text, ttfa, service in (("slow", 0.1, 0.4), ("fast", 0.0, 0.02)):
        g = by.get_group(text)
        assert ((g["ttfa_s"] >= ttfa - 1e-3) & (g["ttfa_s"] <= ttfa + tol)).all(), g["ttfa_s"]
        assert ((g["service_s"] >= service - 1e-3) & (g["service_s"] <= service + tol)).all(), g["service_s"]
        assert (g["audio_s"] == 0.3).all()
    # p50 of four values = the mean of the middle two (one fast, one slow): (0 + 0.1) / 2
    assert row["ttfa_p50_s"] == pytest.approx(0.05, abs=tol)
    assert row["service_p50_s"] == pytest.approx(0.21, abs=tol)
    assert row["rtf_p50"] == pytest.approx(0.21 / 0.3, abs=tol / 0.3)
    assert row["underran"] == 2 and list(by.get_group("slow")["underran"]) == [True, True]
    assert row["audio_s"] == pytest.approx(1.2)
    # wall time: client 0 sends slow (0.4 s), then the last fast (0.02 s); client 1 fast, then slow
    # from 0.02 s to 0.42 s: 0.42 s
    assert row["wall_s"] == pytest.approx(timed["ended_s"].max() - timed["sent_s"].min())
    assert 0.42 - 1e-3 <= row["wall_s"] <= 0.42 + 3 * tol
    assert row["audio_per_s"] == pytest.approx(1.2 / row["wall_s"])
    assert row["lateness_p99_ms"] == pytest.approx(np.percentile(timed["late_s"] * 1e3, 99))
    assert res.knees == {"ttfa": None, "underrun": 2}
    assert res.signature["texts_sha256"] == texts_sha256(["slow", "fast"]) and res.signature["levels"] == [2]


def test_a_503_is_counted_by_status_and_never_retried(tmp_path):
    with ScriptedServer(SCRIPTS) as server:
        res = run(server, tmp_path, ["fast", "busy"], LoadPlan((1, 2), requests=4), figure=False)
        busy = sum(t == "busy" for t, _ in server.received)
    t = res.table.set_index("concurrency")
    assert list(t["requests"]) == [4, 4] and list(t["failed"]) == [2, 2] and list(t["ok"]) == [2, 2]
    assert list(t["failures"]) == ["HTTP 503: 2", "HTTP 503: 2"]
    # warm bursts use the texts from the last: level 1 sends "busy", level 2 "busy" and "fast"
    assert list(t["warm_failed"]) == [1, 1]
    assert busy == 1 + 2 + 1 + 2  # each failed request reached the server once: no retry
    failed = res.requests[~res.requests["ok"]]
    assert set(failed["status"]) == {503} and failed["error"].str.startswith("HTTP 503").all()


def test_the_table_is_a_load_curve_replay_reads(tmp_path):
    with ScriptedServer(SCRIPTS) as server:
        res = run(server, tmp_path, ["fast"], LoadPlan((1, 2, 4), requests=4))
    for path in res.files:
        assert path.exists() and path.stat().st_size > 0
    assert {p.suffix for p in res.files} == {".csv", ".parquet", ".png", ".svg"}
    df, _ = read_table(tmp_path / "load.csv")
    p50 = pd.to_numeric(df["service_p50_s"]).to_numpy()
    assert read_load_curve(tmp_path / "load.csv")  # the points replay uses
    s = slowdowns(read_load_curve(tmp_path / "load.csv"), 4)  # index c: slowdown at c requests in service
    assert [s[1], s[2], s[4]] == pytest.approx(list(p50 / p50[0]))
    assert s[3] == pytest.approx((p50[1] + p50[2]) / 2 / p50[0])


def test_the_load_command_writes_the_table_and_fails_on_failed_requests(cli, tmp_path):
    (tmp_path / "texts.txt").write_text("fast\n\nbusy\n")
    with ScriptedServer(SCRIPTS) as server:
        res = cli("load", "--backend", f"http:base_url={server.url}", "--concurrency", "1,2", "--requests", "2",
                  "--texts", tmp_path / "texts.txt", "--out", tmp_path / "curve.parquet")
    assert res.returncode == 1, res.stderr
    assert "knee:" in res.stdout
    df = pd.read_parquet(tmp_path / "curve.parquet")
    assert list(df["concurrency"]) == [1, 2] and list(df["failed"]) == [1, 1]
    # replay --load-curve reads the table as it is
    manifest({("t1", "A", "c"): [(0, 1, 1)], ("t1", "B", "c"): [(0, 1, 1)]}).to_csv(tmp_path / "m.csv", index=False)
    rep = cli("replay", tmp_path / "m.csv", "--servers", "2", "--load-curve", tmp_path / "curve.parquet",
              "--out", tmp_path / "s.parquet")
    assert rep.returncode == 0, rep.stderr
    _, meta = read_table(tmp_path / "s.parquet")
    curve = read_load_curve(tmp_path / "curve.parquet")
    assert any(sig.get("service", "").endswith(f"curve={curve}") for sig in meta["signatures"]), meta["signatures"]


def test_underrun_is_a_piece_after_ttfa_plus_the_audio_before_it():
    # TTFA 0.125 s; pieces of 0.125 s (3000 samples) at 0.125, 0.25, 0.375 s after the send:
    # each exactly when the player reaches it (binary-exact times), so none is late
    rec = Record(0, 0, math.nan, "x", sent_s=1.0, first_audible_s=1.125, last_byte_s=1.375, ended_s=1.375,
                 chunk_s=[1.125, 1.25, 1.375], chunk_n=[3000, 3000, 3000], sample_rate=RATE)
    assert not underran(rec)
    rec.chunk_s[2] = 1.5  # 0.5 > 0.125 + 0.25
    assert underran(rec)
    rec.error = "stream broken"  # a failed request is counted as failed, not as underrun
    assert not underran(rec)


def test_open_loop_arrivals_are_merged_poisson_streams_cut_at_the_count():
    plan = LoadPlan((3,), requests=10, rate=2.0)
    t, s = arrivals(3, plan, np.random.default_rng(0))
    g = np.random.default_rng(0).exponential(0.5, size=(3, 10)).cumsum(axis=1)
    assert list(t) == sorted(g.ravel())[:10] and len(set(s)) <= 3
    t2, _ = arrivals(3, LoadPlan((3,), duration_s=1.5, rate=2.0), np.random.default_rng(0))
    assert (t2 < 1.5).all() and (np.diff(t2) >= 0).all()
    assert 0 < len(t2) < 3 * 26  # about 2/s × 1.5 s × 3 streams


def test_the_knees_are_the_first_levels_over_the_target_and_with_underruns():
    t = pd.DataFrame({"concurrency": [4, 1, 2, 8], "ttfa_p95_s": [1.5, 0.2, 0.9, 3.0], "underran": [0, 0, 0, 2]})
    assert knees(t, 1.0) == {"ttfa": 4, "underrun": 8}
    assert knees(t, 5.0) == {"ttfa": None, "underrun": 8}


@pytest.mark.parametrize("kw", [dict(levels=(1, 1), requests=2), dict(levels=(0,), requests=2),
                                dict(levels=(1,)), dict(levels=(1,), requests=2, duration_s=1.0),
                                dict(levels=(1,), requests=2, rate=0.0)])
def test_bad_plans_are_refused(kw):
    with pytest.raises(InputError):
        LoadPlan(**kw)


def test_open_loop_sends_at_arrival_however_many_are_in_flight(tmp_path):
    # one stream at 50/s: four arrivals within about 0.1 s, each request taking 0.4 s
    plan = LoadPlan((1,), requests=4, rate=50.0, seed=3)
    with ScriptedServer(SCRIPTS) as server:
        res = run(server, tmp_path, ["slow"], plan, figure=False)
    timed = res.requests[~res.requests["warm"]].sort_values("seq")
    expected, _ = arrivals(1, plan, np.random.default_rng(3))
    assert list(timed["due_s"]) == list(expected)
    late = timed["sent_s"] - timed["due_s"]
    assert (late >= 0).all() and (late == timed["late_s"]).all()
    assert (timed["sent_s"].iloc[1:].to_numpy() < timed["last_byte_s"].iloc[0]).all()  # sent before the first ended
    assert res.signature["mode"] == "open" and res.signature["rate"] == 50.0


def test_texts_come_from_a_file_a_table_or_the_demo_mix(tmp_path):
    from simulplay.core.tables import write_table
    from simulplay.loadtest.run import default_texts, read_texts

    (tmp_path / "t.txt").write_text("a b\n\n  c  \n")
    assert read_texts(tmp_path / "t.txt", None) == (["a b", "c"], str(tmp_path / "t.txt"))
    write_table(pd.DataFrame({"text": ["x", "y"], "seq": [0, 1]}), tmp_path / "m.parquet", {"table": "t"}, kind="t")
    assert read_texts(None, tmp_path / "m.parquet")[0] == ["x", "y"]
    demo, source = read_texts(None, None)
    assert source == "demo" and demo == default_texts() and len(demo) > 100 and len(set(demo)) > 100
    with pytest.raises(InputError, match="no column 'text'"):
        write_table(pd.DataFrame({"x": [1]}), tmp_path / "n.parquet", {"table": "t"}, kind="t")
        read_texts(None, tmp_path / "n.parquet")
