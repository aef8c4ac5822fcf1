"""Ctrl-C and SIGTERM during `simulplay live --backend piper:…`, which serves Piper with
`simulplay serve` as a child process on a free loopback port: the signal goes to the
command's process group, as a terminal sends it, and the command must stop its server
(no process of its group or of the server's is left), write what was measured into the
run folder, and exit 130 (SIGINT) or 143 (SIGTERM) with one line and no traceback.

Real subprocesses and real Piper (durations=fixed). The test waits on events: the server's
request log shows the third POST (the warm-up, the first request, the second request: the
first is then complete, since an output has one request in flight), and the third request
is due 20 s later, so the run is mid-way when signalled."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.live.helpers import write_trace
from tests.support.checks import group_members, kill_group, wait_until
from tests.support.cli import ROOT

PIPER = "piper:durations=fixed,intra_op_threads=1"
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


def children(pid: int) -> list[int]:
    """Live (not zombie) processes whose parent is ``pid`` (Linux ``/proc``)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def posts(log: Path) -> int:
    return log.read_text(errors="replace").count("POST /v1/audio/speech") if log.is_file() else 0


@pytest.mark.slow
@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["ctrl-c", "sigterm"])
def test_a_signal_stops_the_served_backend_and_keeps_what_was_measured(tmp_path, sig, code):
    trace = write_trace(tmp_path / "t.jsonl", [{"talk_id": "t1", "system": "A", "source_s": 30.0,
                                                "updates": [(0.05, "Good morning."), (0.1, "We start."),
                                                            (20.0, "Later on.")]}])
    run = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "simulplay", "live", str(trace), "--rule", "immediate",
                             "--backend", PIPER, "--out", str(run)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=ENV, start_new_session=True)
    server, survived = None, None
    try:
        server = wait_until(lambda: next((c for c in children(proc.pid) if " serve " in cmdline(c)), None)
                            or proc.poll() is not None and -1, "the served backend to start")
        assert server != -1, proc.communicate()[1]
        wait_until(lambda: posts(run / "server.log") >= 3 or proc.poll() is not None, "the second request")
        assert proc.poll() is None, proc.communicate()[1]
        assert alive(server)
        os.killpg(proc.pid, sig)  # the command's group, as a terminal's Ctrl-C
        _, err = proc.communicate(timeout=120)
        survived = alive(server)  # before the clean-up below ends it
    finally:
        if proc.poll() is None:
            kill_group(proc.pid)
            proc.wait()
        if server not in (None, -1) and alive(server):
            kill_group(server)
    assert proc.returncode == code, err
    assert "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1 and "interrupted" in err, err
    assert survived is False, "the served backend outlived the command"
    assert not group_members(server) and not group_members(proc.pid)
    req = pd.read_parquet(run / "requests.parquet")
    assert req["seq"].tolist() == [0, 1, 2]
    assert req["error"].iloc[0] == "" and np.isfinite(req["service_s"].iloc[0])  # measured before the signal
    assert req["error"].iloc[2] == "not sent (interrupted)"
    assert "POST /v1/audio/speech" in (run / "server.log").read_text()
    man = pd.read_parquet(run / "live.parquet")
    assert len(man) == 3 and man["error"].iloc[0] == ""


@pytest.mark.slow
@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["ctrl-c", "sigterm"])
def test_a_signal_while_the_served_backend_starts_stops_it_too(tmp_path, sig, code):
    """The signal arrives as soon as the child exists, while it loads Piper (before it
    announces its URL or answers): the child is stopped all the same, and the command says
    it was interrupted (typer alone would exit 130 in silence, SIGTERM included)."""
    trace = write_trace(tmp_path / "t.jsonl", [{"talk_id": "t1", "system": "A", "source_s": 5.0,
                                                "updates": [(0.05, "Good morning.")]}])
    proc = subprocess.Popen([sys.executable, "-m", "simulplay", "live", str(trace), "--rule", "immediate",
                             "--backend", PIPER, "--out", str(tmp_path / "run")], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=ENV, start_new_session=True)
    server, survived = None, None
    try:
        server = wait_until(lambda: next((c for c in children(proc.pid) if " serve " in cmdline(c)), None)
                            or proc.poll() is not None and -1, "the served backend to start")
        assert server != -1, proc.communicate()[1]
        os.killpg(proc.pid, sig)
        _, err = proc.communicate(timeout=120)
        survived = alive(server)
    finally:
        if proc.poll() is None:
            kill_group(proc.pid)
            proc.wait()
        if server not in (None, -1) and alive(server):
            kill_group(server)
    assert proc.returncode == code, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1 and "interrupted" in err, err
    assert survived is False, "the served backend outlived the command"
    assert not group_members(server) and not group_members(proc.pid)
