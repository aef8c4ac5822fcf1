"""Live runs against real Piper (durations=fixed) served by `simulplay serve` on loopback:
the replay of the live manifest agrees with the live virtual player within 20 ms per
output, replay and eta read the live manifest, and a server killed mid-run fails the
requests it leaves behind without stopping the run."""

import json
import os
import signal
import subprocess
import sys
import threading

import pandas as pd
import pytest

from tests.live.helpers import write_trace
from tests.support.cli import ROOT

PIPER = "piper:durations=fixed,intra_op_threads=1"
TEXTS = ["Good morning.", "We start", "with the weather.", "It is sunny", "and warm today."]


def trace(path):
    streams = []
    for system, step in (("A", 1.0), ("F", 2.0)):
        ups = [(0.5 + i * step, t) for i, t in enumerate(TEXTS[:: 1 if system == "A" else 2])]
        streams.append({"talk_id": "t1", "system": system, "source_s": 8.0, "updates": ups})
    return write_trace(path, streams)


@pytest.mark.slow
def test_live_piper_agrees_with_its_replay_and_is_read_by_replay_and_eta(cli, tmp_path):
    tr = trace(tmp_path / "t.jsonl")
    res = cli("live", tr, "--rule", "immediate", "--rule", "timer:w=2", "--backend", PIPER,
              "--out", tmp_path / "run", "--speed", "4")
    assert res.returncode == 0, res.stderr
    run = tmp_path / "run"
    agree = pd.read_parquet(run / "agreement.parquet")
    request = agree[agree["release"] == "request"]
    assert len(request) == 4
    assert (request["abs_d_offset_s"] <= 0.020).all(), request[["system", "condition", "abs_d_offset_s"]]
    assert (request["abs_d_first_play_s"] <= 0.020).all()
    per_request = pd.read_parquet(run / "agreement_requests.parquet")
    assert len(per_request) == 12 and (per_request["abs_d_ready_s"] <= 0.020).all()
    assert (run / "server.log").read_text().count("POST /v1/audio/speech") == 13  # 12 and the warm-up
    assert cli("replay", run / "live.parquet", "--out", tmp_path / "summary.parquet").returncode == 0
    eta = cli("eta", tmp_path / "summary.parquet", "--a", "A", "--f", "F", "--reference", "immediate",
              "--out", tmp_path / "eta.parquet")
    assert eta.returncode == 0, eta.stderr
    assert cli("player", run / "live.parquet", "--out", tmp_path / "player.parquet", "--store",
               run / "store").returncode == 0
    info = json.loads((run / "run.json").read_text())
    assert info["speed"] == 4 and info["failed"] == 0 and info["identity"]["served"]["voice"]


@pytest.mark.slow
def test_a_server_killed_mid_run_fails_the_rest_and_the_run_goes_on(cli, tmp_path):
    tr = write_trace(tmp_path / "t.jsonl", [{"talk_id": "t1", "system": "A", "source_s": 4.0,
                                             "updates": [(0.2, "First words."), (1.5, "Second words."),
                                                         (2.5, "Third words.")]}])
    server = subprocess.Popen([sys.executable, "-m", "simulplay", "serve", "--backend", PIPER, "--port", "0"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        url = server.stdout.readline().rsplit(" at ", 1)[1].strip()
        posts = threading.Semaphore(0)

        def killer():  # SIGKILL once the first timed request has started answering (the second POST)
            seen = 0
            for line in server.stderr:
                if "POST /v1/audio/speech" in line:
                    seen += 1
                    if seen == 2:
                        server.send_signal(signal.SIGKILL)
                        posts.release()
                        return

        threading.Thread(target=killer, daemon=True).start()
        res = cli("live", tr, "--rule", "immediate", "--backend", f"http:base_url={url}", "--out",
                  tmp_path / "run", "--timeout", "5")
        assert posts.acquire(timeout=30)
    finally:
        server.kill()
        server.wait(30)
    assert res.returncode == 1, res.stderr
    req = pd.read_parquet(tmp_path / "run" / "requests.parquet")
    assert req["error"].iloc[1:].str.startswith("connection failed").all()
    assert json.loads((tmp_path / "run" / "run.json").read_text())["failed"] >= 2
