"""Faults in a live run: refused connections, a 503, a stalled stream, a cut stream, Ctrl-C.
Failed requests are recorded with status and reason, their outputs are incomplete and
refused by replay, the other outputs go on, and the exit code says so."""

import json
import os
import signal
import socket
import subprocess
import sys

import pandas as pd
import pytest

from tests.live.fake_server import ScriptedServer
from tests.live.helpers import write_trace
from tests.support.cli import ROOT

SCRIPTS = {"busy": [("status", 503)],
           "stall": [("audio", 2400), ("stall", None)],
           "cut": [("audio", 2400), ("cut", None)]}


def trace_of(path, texts_per_talk, source_s=1.0):
    return write_trace(path, [{"talk_id": talk, "system": "A", "source_s": source_s,
                               "updates": [(0.05 * (i + 1), t) for i, t in enumerate(texts)]}
                              for talk, texts in texts_per_talk.items()])


def test_failed_requests_are_recorded_and_their_outputs_incomplete(cli, tmp_path):
    trace = trace_of(tmp_path / "t.jsonl", {"ok": ["one", "two"], "busy": ["one", "busy"],
                                            "stall": ["stall", "two"], "cut": ["cut", "two"]})
    with ScriptedServer(SCRIPTS) as server:
        res = cli("live", trace, "--rule", "immediate", "--backend", f"http:base_url={server.url}",
                  "--out", tmp_path / "run", "--timeout", "0.5")
    assert res.returncode == 1, res.stderr
    assert "3 failed (3 incomplete outputs)" in res.stdout
    req = pd.read_parquet(tmp_path / "run" / "requests.parquet").set_index(["talk_id", "seq"])
    assert req.loc[("busy", 1), "status"] == 503 and req.loc[("busy", 1), "error"].startswith("HTTP 503")
    assert req.loc[("stall", 0), "error"] == "no data after 4800 bytes within 0.5 s (stalled)"
    assert req.loc[("cut", 0), "error"].startswith("stream broken after 4800 bytes")
    assert req.loc[("stall", 1), "error"] == "" and req.loc[("cut", 1), "error"] == ""  # the outputs went on
    assert (req.loc["ok", "error"] == "").all()
    player = pd.read_parquet(tmp_path / "run" / "player.parquet")
    complete = player[player["release"] == "request"].set_index("talk_id")["complete"]
    assert complete.to_dict() == {"ok": True, "busy": False, "stall": False, "cut": False}
    man = tmp_path / "run" / "live.parquet"
    refused = cli("replay", man, "--out", tmp_path / "s.parquet")
    assert refused.returncode != 0 and "3 incomplete output(s)" in refused.stderr and "busy" in refused.stderr
    kept = cli("replay", man, "--out", tmp_path / "s.parquet", "--allow-incomplete")
    assert kept.returncode == 0, kept.stderr
    assert pd.read_parquet(tmp_path / "s.parquet")["talk_id"].tolist() == ["ok"]
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["failed"] == 3 and run["incomplete_outputs"] == 3


def test_a_server_that_refuses_connections_at_the_start_is_refused_before_any_work(cli, tmp_path):
    with socket.socket() as s:  # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    trace = trace_of(tmp_path / "t.jsonl", {"t1": ["one", "two"]})
    res = cli("live", trace, "--rule", "immediate", "--backend",
              f"http:base_url=http://127.0.0.1:{port}/v1,model=m", "--out", tmp_path / "run", "--timeout", "2")
    assert res.returncode == 2, res.stderr
    assert "cannot be reached (ConnectionRefusedError" in res.stderr
    assert not (tmp_path / "run" / "run.json").exists()


@pytest.mark.slow
def test_ctrl_c_writes_what_was_measured_and_exits_130(tmp_path):
    trace = write_trace(tmp_path / "t.jsonl", [{"talk_id": "t1", "system": "A", "source_s": 30.0,
                                                "updates": [(0.05, "one"), (20.0, "later")]}])
    with ScriptedServer({}) as server:
        proc = subprocess.Popen([sys.executable, "-m", "simulplay", "live", str(trace), "--rule", "immediate",
                                 "--backend", f"http:base_url={server.url}", "--out", str(tmp_path / "run")],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env={**os.environ, "PYTHONPATH": str(ROOT)})
        try:
            assert server.wait_for("one", 60), proc.stderr.read() if proc.poll() is not None else ""
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 130, err
    assert "interrupted" in err
    req = pd.read_parquet(tmp_path / "run" / "requests.parquet")
    assert req["error"].tolist()[1] == "not sent (interrupted)"
    assert json.loads((tmp_path / "run" / "run.json").read_text())["requests"] == 2
