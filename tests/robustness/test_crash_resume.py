"""Killing `simulplay synth` at random moments and running it again (real subprocesses).

The moments are counted in completed requests (``synthesized`` lines in the store's
``events.jsonl``), drawn with a fixed seed: a kill lands right after the k-th request,
while the next one is being synthesized or written, whatever the machine's speed.
"""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import soundfile as sf

from simulplay.store.store import AudioStore
from tests.support.checks import wait_until
from tests.support.factories import small_trace

ROOT = Path(__file__).resolve().parents[2]
# `python -m simulplay` with the fake-test backend registered first
WITH_FAKES = [sys.executable, "-c", "import runpy, tests.support.fakes; "
              "runpy.run_module('simulplay', run_name='__main__', alter_sys=True)"]


def synth_cmd(trace, store, out, backend="piper:intra_op_threads=1"):
    return [sys.executable, "-m", "simulplay", "synth", str(trace), "--rule", "immediate", "--rule", "timer:w=3",
            "--backend", backend, "--store", str(store), "--out", str(out), "--quiet"]


def request_set(manifest_path):
    m = pd.read_parquet(manifest_path)
    return m[["talk_id", "system", "condition", "seq", "text"]].sort_values(
        ["talk_id", "system", "condition", "seq"]).reset_index(drop=True)


def assert_store_sound(store_dir, manifest_path, rate=22_050):
    store = AudioStore(store_dir)
    m = pd.read_parquet(manifest_path)
    assert (m["error"] == "").all()
    for key, n in zip(m["audio_key"], m["n_samples"]):
        if key:
            data, sr = sf.read(store.audio_path(key), dtype="int16")
            assert len(data) == n and sr == rate
    done = [e["key"] for e in store.events() if e["event"] == "synthesized"]
    assert len(done) == len(set(done)), "a completed request was synthesized twice"
    for rec in (store_dir / "records").glob("*.json"):
        json.loads(rec.read_text())  # never half-written


def synthesized(store_dir) -> int:
    """Requests completed in the store so far (lines of its events.jsonl; a line cut by a
    kill is not counted)."""
    return sum(e["event"] == "synthesized" for e in AudioStore(store_dir).events())


@pytest.mark.slow
def test_sigkill_at_random_moments_then_resume(tmp_path):
    trace = tmp_path / "trace.jsonl"
    small_trace(trace)
    reference = tmp_path / "ref.parquet"
    subprocess.run(synth_cmd(trace, tmp_path / "ref_store", reference), check=True, capture_output=True)
    n_keys = len(AudioStore(tmp_path / "ref_store").completed_keys())

    store = tmp_path / "store"
    out = tmp_path / "m.parquet"
    rng = np.random.default_rng(20261201)
    kills = 0
    for step in rng.integers(0, 6, 4):  # 2, 3, 1, 0 more requests (0: killed while starting up)
        target = synthesized(store) + int(step)
        if target >= n_keys - 2:  # leave work for the resumed run
            break
        proc = subprocess.Popen(synth_cmd(trace, store, out), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wait_until(lambda p=proc, n=target: synthesized(store) >= n or p.poll() is not None,
                   f"{target} synthesized requests in the store")
        assert proc.poll() is None, f"synth ended before it was killed: {proc.stderr.read().decode()}"
        os.kill(proc.pid, signal.SIGKILL)
        kills += 1
        proc.wait()
    assert kills >= 2
    before = len(AudioStore(store).completed_keys())
    assert before < n_keys
    done = subprocess.run(synth_cmd(trace, store, out), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert f"already in store {before}" in done.stdout
    pd.testing.assert_frame_equal(request_set(out), request_set(reference))
    assert_store_sound(store, out)


@pytest.mark.slow


def test_two_concurrent_processes_share_one_store(tmp_path):
    """Both processes synthesize part of the work: the fake backend's gate holds each one's
    first request until the other also holds one (so neither can do everything alone)."""
    trace = tmp_path / "trace.jsonl"
    small_trace(trace, n_streams=2, n_updates=10)
    store = tmp_path / "store"
    backend = f"fake-test:gate={tmp_path / 'gate'}"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    procs = [subprocess.Popen(WITH_FAKES + synth_cmd(trace, store, tmp_path / f"m{i}.parquet", backend)[3:],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) for i in range(2)]
    for p in procs:
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
    a, b = pd.read_parquet(tmp_path / "m0.parquet"), pd.read_parquet(tmp_path / "m1.parquet")
    pd.testing.assert_series_equal(a["audio_key"], b["audio_key"])
    pd.testing.assert_series_equal(a["service_s"], b["service_s"])
    assert_store_sound(store, tmp_path / "m0.parquet", rate=16_000)
    workers = {e["pid"] for e in AudioStore(store).events()}
    assert workers == {p.pid for p in procs}, "both processes should have synthesized part of the work"
