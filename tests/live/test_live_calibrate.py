"""The server's slowdown calibrated from a live run (docs/live.md, "The calibrated
slowdown"): busy periods and the number in flight worked by hand, and a live run against a
scripted serial server whose service grows by a known factor with the requests in flight:
the calibration recovers the factor, and the shared replay with it matches the live run
within the client's lateness."""

import json

import numpy as np
import pandas as pd
import pytest

from simulplay.live.calibrate import busy_periods, slowdown_table
from tests.live.fake_server import SerialServer
from tests.live.helpers import write_trace

BASE_S = 0.08


def slowdown(n: int) -> float:
    """The scripted server's factor: 1 alone, + 0.5 per other request in flight."""
    return 1.0 + 0.5 * (n - 1)


def test_busy_periods_and_requests_in_flight_by_hand():
    """Sent, first byte, last byte (s), listed out of order; in the order answered:
    r0 0.0/0.1/0.2, r1 0.05/0.25/0.4, r2 0.1/0.45/0.5, r4 0.61/0.62/0.7, r3 0.6/0.72/0.8.
    r0 starts at its send (0.0): r0 only in flight: n 1, busy 0.2. r1 starts at r0's last
    byte 0.2: r1, r2 in flight: n 2, busy 0.2. r2 at 0.4: n 1, busy 0.1. r4, sent 10 ms
    after r3 but answered first, starts at its send 0.61 (the server was idle): r3 and r4 in
    flight, n 2, busy 0.09; its first byte (0.62) came before r3's (0.72): overtaken. r3 at
    r4's last byte 0.7: n 1, busy 0.1."""
    sent = [0.1, 0.0, 0.6, 0.05, 0.61]
    first = [0.45, 0.1, 0.72, 0.25, 0.62]
    last = [0.5, 0.2, 0.8, 0.4, 0.7]
    b = busy_periods(np.array(sent), np.array(first), np.array(last))
    assert b["start_s"].tolist() == pytest.approx([0.4, 0.0, 0.7, 0.2, 0.61])
    assert b["busy_s"].tolist() == pytest.approx([0.1, 0.2, 0.1, 0.2, 0.09])
    assert b["in_flight"].tolist() == [1, 1, 1, 2, 2]
    assert b["overtaken"].tolist() == [False, False, False, False, True]


def test_the_table_sums_busy_over_isolated_per_number_in_flight_with_enough_requests():
    n = np.array([1] * 10 + [2] * 12 + [3] * 3)
    busy = np.r_[np.full(10, 0.1), np.full(12, 0.3), np.full(3, 1.0)]
    iso = np.r_[np.full(10, 0.08), np.full(12, 0.2), np.full(3, 0.1)]
    t = slowdown_table(pd.Series(busy), pd.Series(iso), pd.Series(n))
    assert t["in_flight"].tolist() == [1, 2] and t["requests"].tolist() == [10, 12]  # 3 requests at n = 3: left out
    assert t["slowdown"].tolist() == pytest.approx([1.0 / 0.8, 3.6 / 2.4])
    one = slowdown_table(pd.Series(busy[:5]), pd.Series(iso[:5]), pd.Series(n[:5]))  # too few anywhere: one factor
    assert one["in_flight"].tolist() == [1] and one["slowdown"].tolist() == pytest.approx([1.25])


def burst_trace(path, outputs=("A", "B", "C", "D"), bursts=12, every=0.65):
    """Every ``every`` s the outputs each send one request, 15 ms apart: the first starts
    alone (n 1), the second finds the other three waiting (n 3), then n 2 and n 1: about
    0.44 s of work a burst, so the queue empties between bursts."""
    return write_trace(path, [{"talk_id": "t1", "system": s, "source_s": 0.3 + every * bursts,
                               "updates": [(0.3 + every * i + 0.015 * k, f"{s.lower()}{i}") for i in range(bursts)]}
                              for k, s in enumerate(outputs)])


@pytest.mark.slow
@pytest.mark.alone  # it judges busy seconds per request within 5 %: a neighbour test's load would stretch them
def test_the_calibration_recovers_a_scripted_slowdown_and_the_calibrated_replay_matches_live(cli, tmp_path):
    trace = burst_trace(tmp_path / "t.jsonl")
    with SerialServer(BASE_S, slowdown) as server:
        res = cli("live", trace, "--rule", "immediate", "--backend", f"http:base_url={server.url}", "--out",
                  tmp_path / "run", "--predict", "--calibrate")
    assert res.returncode == 0, res.stderr
    run = tmp_path / "run"
    assert "slowdown 1:" in res.stdout and "calibrated slowdown from this run" in res.stdout
    assert "load curve measured before the run" in res.stdout
    # the run meets 1 to 3 in flight; the burst's 4 clients 3 (a client that was just answered
    # has not sent its next request yet when the server starts the next one)
    assert {1, 2, 3} <= {n for _, n in server.served}
    for name, levels in (("calibration.parquet", [1, 2, 3]), ("calibration_load.parquet", [1, 3])):
        cal = pd.read_parquet(run / name)
        assert cal["in_flight"].tolist() == levels, name
        # the factor recovered wherever others were in flight: busy seconds per request over
        # the scripted base. Such a request was read by the server while it was busy, so its
        # busy period is its service alone; one that started alone also carries its own
        # request's transfer, which a loaded machine stretches to 10–20 ms (docs/live.md)
        for n, busy, count in zip(cal["in_flight"], cal["busy_s"], cal["requests"]):
            if n > 1:
                assert busy / count / BASE_S == pytest.approx(slowdown(n), rel=0.05), (name, n)
        assert cal["slowdown"].tolist() == pytest.approx((cal["busy_s"] / cal["isolated_s"]).tolist())
    pred = pd.read_parquet(run / "prediction.parquet")
    req = pd.read_parquet(run / "requests.parquet")
    # the queue empties between bursts, so L of every output rests on the last burst's four
    # requests, one after the other: their send lateness, the server's own (its sleeps'
    # overshoot) for each, and loopback transfer
    last = req[req["seq"] == req["seq"].max()]
    tol = last["send_late_s"].sum() + 4 * server.lag + 0.01
    for model in ("shared_run", "shared_load"):
        assert (np.abs(pred[f"dL_{model}_s"]) <= tol).all(), (model, pred[f"dL_{model}_s"].tolist(), tol)
    # slowdown 1 finishes early: the last two outputs of a burst by (1 + 0.5) × 0.08 = 0.12 s
    # (a fixed bound: the tolerance above grows with the lateness a loaded machine adds)
    assert pred["dL_shared_s"].min() < -0.08, pred["dL_shared_s"].tolist()
    summary = json.loads((run / "run.json").read_text())["prediction"]
    assert summary["calibration"]["load"]["cost_s"] > 0 and summary["calibration"]["run"]["overtaken"] == 0


def test_calibrate_needs_predict_and_is_refused_before_any_request(cli, tmp_path):
    res = cli("live", burst_trace(tmp_path / "t.jsonl"), "--rule", "immediate", "--backend",
              "http:base_url=http://127.0.0.1:9/v1", "--out", tmp_path / "run", "--calibrate")
    assert res.returncode == 2 and "--calibrate: calibrates the shared-server prediction" in res.stderr
    assert not (tmp_path / "run" / "run.json").exists()
