"""Damaged and missing audio in the store, `store verify` and `store gc`.

A real store: FLAC files written by ``synth`` (the deterministic fake backend, its console
entry point run in this process), then damaged by hand — cut in half, a byte flipped,
deleted, a record cut short — and read by ``player --store``, ``edges`` and a rerun of
``synth``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pandas as pd
import pytest

from simulplay.store.store import AudioStore
from tests.support.checks import assert_one_line_error, wait_until
from tests.support.cli import run_cli
from tests.support.factories import small_trace
from tests.support.synth import synth_args


def simulplay(*args, fakes=False) -> subprocess.CompletedProcess:
    """``simulplay ARGS`` through its console entry point in this process (``fakes``: with the
    fake backend registered)."""
    return run_cli(*args, imports=["tests.support.fakes"] if fakes else [])


def synth_fake(trace, store, out):
    """``simulplay synth`` of ``trace`` under immediate and timer:w=3 with the fake backend."""
    return simulplay(*synth_args(trace, "--rule", "immediate", "--rule", "timer:w=3", store=store, out=out,
                                 backend="fake-test"), fakes=True)


@pytest.fixture
def run(tmp_path):
    trace = tmp_path / "trace.jsonl"
    small_trace(trace)
    store, out = tmp_path / "store", tmp_path / "m.parquet"
    done = synth_fake(trace, store, out)
    assert done.returncode == 0, done.stderr
    return trace, store, out, pd.read_parquet(out)


def records_of(store: Path) -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text()) for p in (store / "records").glob("*.json")}


def once_used(store: Path) -> list[str]:
    """Audio keys that exactly one record refers to (sorted), so that damaging one of them
    damages exactly one request."""
    keys = [r["audio_key"] for r in records_of(store).values() if r["audio_key"]]
    return sorted(k for k in set(keys) if keys.count(k) == 1)


def cut_in_half(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def request_of(manifest: pd.DataFrame, audio_key: str) -> pd.Series:
    return manifest[manifest["audio_key"] == audio_key].iloc[0]


@pytest.mark.slow


def test_truncated_flac_is_one_line_error_in_player_and_edges(tmp_path, run):
    _, store, out, manifest = run
    key = once_used(store)[0]
    cut_in_half(AudioStore(store).audio_path(key))
    r = request_of(manifest, key)
    want = (f"store {store}", f"audio {key} of request (talk {r.talk_id}, system {r.system}, condition "
            f"{r.condition}, backend {r.backend}, realization {r.realization}, seq {r.seq})",
            "run the same `simulplay synth` command again to synthesize it anew", "store verify")
    proc = simulplay("player", out, "--store", store, "--out", tmp_path / "p.csv")
    assert_one_line_error(proc, *want)
    assert not (tmp_path / "p.csv").exists()
    proc = simulplay("edges", out, "--store", store, "--thresholds", "0.5", "--out", tmp_path / "e.csv", "--quiet")
    assert_one_line_error(proc, *want)
    assert not (tmp_path / "e.csv").exists()


@pytest.mark.slow


def test_rerun_of_synth_resynthesizes_damaged_and_missing_audio(tmp_path, run):
    """Three requests damaged three ways; the rerun finds each, logs it, synthesizes it
    again (the fake backend is deterministic: the same samples, the same manifest) and
    says so in its summary line; the store then verifies clean."""
    trace, store, out, before = run
    a, b, c = once_used(store)[:3]
    st = AudioStore(store)
    cut_in_half(st.audio_path(a))
    st.audio_path(b).unlink()
    victim = next(k for k, r in records_of(store).items() if r["audio_key"] == c)
    st.record_path(victim).write_text('{"audio_key": "' + c[:10], encoding="utf-8")  # a record cut short
    damaged_requests = {k for k, r in records_of_lenient(store).items() if r.get("audio_key") in (a, b)} | {victim}
    assert len(damaged_requests) == 3
    proc = synth_fake(trace, store, out)
    assert proc.returncode == 0, proc.stderr
    n = len(before)
    assert re.search(rf"^{n} requests → .*: synthesized 3 \(of them 3 found damaged in the store and synthesized "
                     rf"again\), already in store {len(st.completed_keys()) - 3}, failed 0", proc.stdout), proc.stdout
    events = [e for e in st.events() if e["event"] == "damaged"]
    assert {e["key"] for e in events} == damaged_requests
    assert {e["key"] for e in st.events()[-3:]} == damaged_requests  # then synthesized again
    same = ["talk_id", "system", "condition", "seq", "text", "audio_key", "n_samples", "sample_rate", "audio_s",
            "error"]  # service times are measured anew
    pd.testing.assert_frame_equal(pd.read_parquet(out)[same], before[same])
    check = simulplay("store", "verify", store)
    assert check.returncode == 0, check.stdout
    assert "0 damaged, 0 temporary files, 0 stale lock files" in check.stdout


def records_of_lenient(store: Path) -> dict[str, dict]:
    out = {}
    for p in (store / "records").glob("*.json"):
        try:
            out[p.stem] = json.loads(p.read_text())
        except ValueError:
            out[p.stem] = {}
    return out


@pytest.mark.slow


def test_store_verify_names_each_damaged_request_and_gc_removes_leftovers(tmp_path, run):
    _, store, _, manifest = run
    st = AudioStore(store)
    a, b = once_used(store)[:2]
    data = bytearray(st.audio_path(a).read_bytes())
    data[len(data) // 2] ^= 0xFF  # one flipped byte inside the audio frames
    st.audio_path(a).write_bytes(bytes(data))
    st.audio_path(b).unlink()
    tmp = st.audio_path(a).parent / f".{a}.flac.x1y2z3.tmp"
    tmp.write_bytes(b"half a write")
    (store / "records" / ".k.json.abcd.tmp").write_text("{")
    (store / "locks" / "deadbeef.lock").touch()  # left by a killed run: nobody holds it
    n_records, n_audio = len(records_of(store)), len(list((store / "audio").glob("*/*.flac")))
    proc = simulplay("store", "verify", store)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == (f"store {store}: {n_records} records (0 failed requests besides), {n_audio} audio files; "
                        "2 damaged, 2 temporary files, 1 stale lock files, 0 locks held by running processes, "
                        "0 audio files no record refers to (kept)")
    damaged = [line for line in lines if line.startswith("damaged: ")]
    assert len(damaged) == 2
    for key, problem in ((a, "not the ones its key names"), (b, "is missing")):
        r = request_of(manifest, key)
        line = next(x for x in damaged if key in x)
        assert f"(talk {r.talk_id}, system {r.system}, condition {r.condition}, realization {r.realization}, " \
               f"seq {r.seq}) has audio {key} that" in line
        assert problem in line or "does not decode" in line
    assert f"`simulplay store gc {store}` removes the 2 temporary and 1 stale lock files" in proc.stdout

    gc = simulplay("store", "gc", store)
    assert gc.returncode == 0, gc.stderr
    assert gc.stdout.strip() == (f"store {store}: removed 2 temporary files ({len(b'half a write') + 1} bytes) and "
                                 "1 stale lock files")
    assert not tmp.exists() and list((store / "locks").iterdir()) == []
    again = simulplay("store", "verify", store)
    assert "2 damaged, 0 temporary files, 0 stale lock files" in again.stdout and again.returncode == 1


def test_gc_refuses_while_a_process_works_on_the_store(tmp_path, run):
    _, store, _, _ = run
    (store / "audio" / ".x.flac.1.tmp").write_bytes(b"in flight")
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(store / "locks")], stdout=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: holder.stdout.readline().strip() == "held", "the holder to take the session lock")
        proc = simulplay("store", "gc", store)
        assert_one_line_error(proc, f"store {store}", "is in use by a running simulplay process")
        assert (store / "audio" / ".x.flac.1.tmp").exists()
    finally:
        holder.kill()
        holder.wait()
    assert simulplay("store", "gc", store).returncode == 0
    assert not (store / "audio" / ".x.flac.1.tmp").exists()


HOLD = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.flock(fd, fcntl.LOCK_SH)  # what AudioStore.session() takes
print("held", flush=True)
time.sleep(600)
"""


def test_a_finished_run_leaves_no_lock_files(run):
    _, store, _, _ = run
    assert list((store / "locks").iterdir()) == []


@pytest.mark.slow


def test_verify_and_gc_refuse_a_folder_that_is_no_store(tmp_path):
    for command in ("verify", "gc"):
        proc = simulplay("store", command, tmp_path)
        assert_one_line_error(proc, str(tmp_path), "is not an audio store")


def test_a_waiter_on_a_removed_lock_file_locks_the_new_one(tmp_path):
    """The holder removes its lock file when it unlocks; a process already waiting on the
    old file gets that old file's lock, sees it is no longer at the path, and locks the
    file that is (so two processes never both think they hold one request)."""
    st = AudioStore(tmp_path)
    holder = st.try_lock("k")
    got: list[int] = []
    waiter = threading.Thread(target=lambda: got.append(st.try_lock("k", wait=True)))
    waiter.start()
    wait_until(lambda: _opened_by_this_process(st.lock_path("k")) >= 2, "the waiter to open the lock file")
    st.unlock(holder, "k")
    waiter.join(timeout=60)
    assert got and got[0] is not None
    assert os.fstat(got[0]).st_ino == os.stat(st.lock_path("k")).st_ino  # it holds the file at the path
    assert st.try_lock("k") is None  # and nobody else can take it
    st.unlock(got[0], "k")
    assert not st.lock_path("k").exists()


def _opened_by_this_process(path: Path) -> int:
    """Descriptors of this process open on ``path`` (Linux /proc)."""
    n = 0
    for fd in Path("/proc/self/fd").iterdir():
        try:
            n += os.readlink(fd) == str(path)
        except OSError:
            continue
    return n


def test_a_reuse_decodes_only_files_that_changed_since_they_were_written(tmp_path, run, monkeypatch):
    """``audio_check`` in each record: SHA-256 of 'key:n_samples:sample_rate:' plus the hex
    SHA-256 of the FLAC file's bytes (computed here with hashlib, from the files on disk).
    A reuse accepts a record that still matches without decoding; a file re-encoded (same
    samples, other bytes), an old record without the field, a changed record or a flipped
    byte are decoded, and only the real damage is reported. `store verify` decodes all."""
    import hashlib

    import numpy as np
    import soundfile as sf

    from simulplay.store import store as store_mod

    _, store, _, _ = run
    st = AudioStore(store)
    recs = {k: r for k, r in records_of(store).items() if r["audio_key"]}
    for r in recs.values():
        file_sha = hashlib.sha256(st.audio_path(r["audio_key"]).read_bytes()).hexdigest()
        assert r["audio_check"] == hashlib.sha256(
            f"{r['audio_key']}:{r['n_samples']}:{r['sample_rate']}:{file_sha}".encode()).hexdigest()
    decoded = []
    real_read = store_mod.sf.read
    monkeypatch.setattr(store_mod.sf, "read", lambda *a, **k: decoded.append(1) or real_read(*a, **k))
    assert [st.record_problem(k) for k in recs] == [None] * len(recs) and decoded == []
    assert [st.record_problem(k, full=True) for k in recs] == [None] * len(recs) and len(decoded) == len(recs)

    once = [(k, r) for k, r in recs.items() if r["audio_key"] in once_used(store)]
    (k1, r1), (k2, r2), (k3, r3), (k4, r4) = once[:4]
    samples, rate = real_read(st.audio_path(r1["audio_key"]), dtype="int16")
    sf.write(st.audio_path(r1["audio_key"]), samples, rate, format="FLAC", subtype="PCM_16", compression_level=1.0)
    old = dict(r2)
    del old["audio_check"]  # a record written before the field existed
    st.record_path(k2).write_text(json.dumps(old))
    st.record_path(k3).write_text(json.dumps({**r3, "n_samples": r3["n_samples"] + 1}))
    data = bytearray(st.audio_path(r4["audio_key"]).read_bytes())
    data[len(data) // 2] ^= 0xFF
    st.audio_path(r4["audio_key"]).write_bytes(bytes(data))
    decoded.clear()
    problems = {k: st.record_problem(k) for k in recs}
    assert len(decoded) == 4 and all(problems[k] is None for k in recs if k not in (k3, k4))
    assert problems[k3] == (f"has audio {r3['audio_key']} that holds {r3['n_samples']} samples where "
                            f"{r3['n_samples'] + 1} are expected")
    assert r4["audio_key"] in problems[k4] and ("not the ones its key names" in problems[k4]
                                                or "does not decode" in problems[k4])
    assert np.array_equal(st.load_audio(r1["audio_key"])[0], samples)
