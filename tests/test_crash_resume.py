"""Killing `simulplay synth` at random moments and running it again (real subprocesses)."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import soundfile as sf

from simulplay.backends.store import AudioStore
from simulplay.traces import write_trace
from simulplay.traces.model import frame_from_streams
from tests.factories import stream

WORDS = ("the quick brown fox jumps over the lazy dog while seven small birds sing a song about the "
         "river and the mountain far away from home").split()


def small_trace(path, n_streams=2, n_updates=14):
    rng = np.random.default_rng(0)
    streams = []
    for k in range(n_streams):
        times = np.cumsum(rng.integers(1, 3, n_updates)).astype(float)
        texts = [" ".join(rng.choice(WORDS, int(rng.integers(1, 5)))) + ("." if i % 4 == 3 else "")
                 for i in range(n_updates)]
        streams.append(stream(times, texts, talk_id=f"talk{k // 2}", system="AF"[k % 2], source_s=30.0))
    write_trace(frame_from_streams(streams), path, {"table": "trace"})


def synth_cmd(trace, store, out):
    return [sys.executable, "-m", "simulplay", "synth", str(trace), "--rule", "immediate", "--rule", "timer:w=3",
            "--backend", "piper:intra_op_threads=1", "--store", str(store), "--out", str(out), "--quiet"]


def request_set(manifest_path):
    m = pd.read_parquet(manifest_path)
    return m[["talk_id", "system", "condition", "seq", "text"]].sort_values(
        ["talk_id", "system", "condition", "seq"]).reset_index(drop=True)


def assert_store_sound(store_dir, manifest_path):
    store = AudioStore(store_dir)
    m = pd.read_parquet(manifest_path)
    assert (m["error"] == "").all()
    for key, n in zip(m["audio_key"], m["n_samples"]):
        if key:
            data, rate = sf.read(store.audio_path(key), dtype="int16")
            assert len(data) == n and rate == 22_050
    done = [e["key"] for e in store.events() if e["event"] == "synthesized"]
    assert len(done) == len(set(done)), "a completed request was synthesized twice"
    for rec in (store_dir / "records").glob("*.json"):
        json.loads(rec.read_text())  # never half-written


def test_sigkill_at_random_moments_then_resume(tmp_path):
    trace = tmp_path / "trace.jsonl"
    small_trace(trace)
    reference = tmp_path / "ref.parquet"
    subprocess.run(synth_cmd(trace, tmp_path / "ref_store", reference), check=True, capture_output=True)

    store = tmp_path / "store"
    out = tmp_path / "m.parquet"
    rng = np.random.default_rng(int(time.time()))
    kills = 0
    for delay in rng.uniform(1.0, 3.5, 4):
        proc = subprocess.Popen(synth_cmd(trace, store, out), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            kills += 1
        proc.wait()
    assert kills >= 1
    before = len(AudioStore(store).completed_keys())
    done = subprocess.run(synth_cmd(trace, store, out), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert f"already in store {before}" in done.stdout
    pd.testing.assert_frame_equal(request_set(out), request_set(reference))
    assert_store_sound(store, out)


def test_two_concurrent_processes_share_one_store(tmp_path):
    trace = tmp_path / "trace.jsonl"
    small_trace(trace, n_streams=2, n_updates=10)
    store = tmp_path / "store"
    procs = [subprocess.Popen(synth_cmd(trace, store, tmp_path / f"m{i}.parquet"), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for i in range(2)]
    for p in procs:
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
    a, b = pd.read_parquet(tmp_path / "m0.parquet"), pd.read_parquet(tmp_path / "m1.parquet")
    pd.testing.assert_series_equal(a["audio_key"], b["audio_key"])
    pd.testing.assert_series_equal(a["service_s"], b["service_s"])
    assert_store_sound(store, tmp_path / "m0.parquet")
    workers = {e["pid"] for e in AudioStore(store).events()}
    assert len(workers) == 2, "both processes should have synthesized part of the work"
