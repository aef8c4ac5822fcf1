"""A live run against a server with scripted timing: the hand-worked timeline of a
2-request session, within the client's recorded lateness."""

import json

import pandas as pd
import pytest

from tests.live.fake_server import RATE, ScriptedServer
from tests.live.helpers import write_trace

# Request "alpha" is released at 0.20 s: the server answers after 0.10 s with 0.1 s of audio,
# waits 0.05 s and sends 0.1 s more (last byte ≈ 0.35 s). "beta" is released at 0.30 s while
# alpha is in flight, so it is due at alpha's end (≈ 0.35 s); the server answers after 0.10 s
# with 0.2 s of audio (last byte ≈ 0.45 s). Source: 1.0 s.
SCRIPTS = {"alpha": [("sleep", 0.10), ("audio", 2400), ("sleep", 0.05), ("audio", 2400)],
           "beta": [("sleep", 0.10), ("audio", 4800)]}
# Virtual player, request release: alpha plays 0.35–0.55, beta 0.55–0.75: first playback
# 0.35, D 0.4, I 0.35 (the wait before alpha), end 0.75, L = 0.75 − 1.0 = −0.25.
# Chunk release: alpha's pieces arrive at 0.30 and 0.35 and play 0.30–0.40–0.50, beta
# arrives at 0.45 and plays 0.50–0.70: first playback 0.30, end 0.70, L = −0.30.
EXPECTED = {"request": {"first_play_s": 0.35, "audio_s": 0.4, "idle_s": 0.35, "end_s": 0.75, "offset_s": -0.25},
            "chunk": {"first_play_s": 0.30, "audio_s": 0.4, "idle_s": 0.30, "end_s": 0.70, "offset_s": -0.30}}
# the most client and server lateness together the timeline checks accept (their tolerance is
# that lateness + 15 ms, so at most 0.05 s, and twice that for sums of two times)
MAX_LAG_S = 0.035


@pytest.fixture
def trace(tmp_path):
    return write_trace(tmp_path / "t.jsonl", [{"talk_id": "t1", "system": "A", "source_s": 1.0,
                                               "updates": [(0.2, "alpha"), (0.3, "beta")]}])


def test_two_request_session_matches_the_hand_worked_timeline(cli, tmp_path, trace):
    with ScriptedServer(SCRIPTS) as server:
        res = cli("live", trace, "--rule", "immediate", "--backend", f"http:base_url={server.url}",
                  "--out", tmp_path / "run")
    assert res.returncode == 0, res.stderr
    req = pd.read_parquet(tmp_path / "run" / "requests.parquet")
    late = req["send_late_s"].max()
    assert late >= 0
    # the client's lateness and the server's own (its sleeps' overshoot on a busy machine),
    # measured, plus loopback transfer: within a fixed bound, so that no lag, however large,
    # widens the checks past the timeline's 0.05 s steps (measured at most 0.01 s on 2 cores
    # at load 7)
    assert late + server.lag <= MAX_LAG_S, (late, server.lag)
    tol = late + server.lag + 0.015
    a, b = req.iloc[0], req.iloc[1]
    assert a["dispatch_s"] == pytest.approx(0.2) and a["due_s"] == pytest.approx(0.2)
    assert a["first_byte_s"] == pytest.approx(0.30, abs=tol)
    assert a["last_byte_s"] == pytest.approx(0.35, abs=tol)
    assert b["due_s"] == pytest.approx(a["ended_s"])  # one request in flight: beta waited for alpha
    assert b["last_byte_s"] == pytest.approx(0.45, abs=2 * tol)
    assert (a["n_chunks"], a["n_samples"], b["n_samples"]) == (2, 4800, 4800)
    assert a["first_audible_s"] == pytest.approx(a["first_byte_s"], abs=1e-3)  # the tone is loud from its start
    player = pd.read_parquet(tmp_path / "run" / "player.parquet").set_index("release")
    for release, want in EXPECTED.items():
        for col, value in want.items():
            assert player.loc[release, col] == pytest.approx(value, abs=2 * tol), (release, col)
    assert player["stall_count"].tolist() == [0, 0]  # playback never waited once it started
    man = pd.read_parquet(tmp_path / "run" / "live.parquet")
    assert man["n_samples"].tolist() == [4800, 4800] and (man["sample_rate"] == RATE).all()
    assert man["service_s"].tolist() == pytest.approx((req["last_byte_s"] - req["sent_s"]).tolist())
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["failed"] == 0 and run["lateness"]["verdict"] == "on time"
    assert run["agreement"]["request"]["max_abs_d_offset_ms"] <= 20


def test_speed_divides_trace_times(cli, tmp_path, trace):
    with ScriptedServer({}, default=[("audio", 240)]) as server:
        res = cli("live", trace, "--rule", "immediate", "--backend", f"http:base_url={server.url}",
                  "--out", tmp_path / "run", "--speed", "4")
    assert res.returncode == 0, res.stderr
    man = pd.read_parquet(tmp_path / "run" / "live.parquet")
    assert man["dispatch_s"].tolist() == pytest.approx([0.05, 0.075])
    assert man["source_s"].tolist() == pytest.approx([0.25, 0.25])
    req = pd.read_parquet(tmp_path / "run" / "requests.parquet")
    assert req["sent_s"].iloc[0] == pytest.approx(0.05, abs=req["send_late_s"].iloc[0] + 1e-3)
