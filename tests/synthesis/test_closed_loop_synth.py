"""Closed-loop synthesis with real Piper (``durations=fixed``): each request synthesized when
its policy sends it; the manifest replays to the engine's own clock; a killed run resumes."""

import os
import signal
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import simulplay
from simulplay.core.timebase import to_ns
from simulplay.grouping import Served, parse_rule, run_policy
from simulplay.store.store import AudioStore
from simulplay.traces import read_traces, streams_from_frame
from tests.support.checks import wait_until
from tests.support.factories import small_trace
from tests.support.synth import synth

PIPER = "piper:intra_op_threads=1,durations=fixed"
BACKLOG = "backlog:below=1,max_chars=300,min_words=3"
PACER = "pacer:min_audio_buffer=5,max_text_length=300"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    d = tmp_path_factory.mktemp("loop")
    small_trace(d / "trace.jsonl", n_updates=10)
    streams = streams_from_frame(read_traces([d / "trace.jsonl"]))
    res = synth(streams, d / "store", d / "m.parquet", backend=PIPER, rules=("immediate", "backlog", "pacer"))
    return d, streams, res


def served_from(rows: pd.DataFrame):
    """A provider giving each request what the manifest recorded for it (by seq)."""
    table = rows.set_index("seq")
    return lambda req: Served(float(table.at[req.seq, "service_s"]), n_samples=int(table.at[req.seq, "n_samples"]),
                              sample_rate=int(table.at[req.seq, "sample_rate"]))


def test_the_manifest_holds_the_policys_own_groups_and_replays_to_its_clock(run):
    d, streams, res = run
    m = res.manifest
    assert (m["error"] == "").all()
    summary = simulplay.replay(d / "m.parquet").summary.set_index(["talk_id", "system", "condition"])
    for cond in (BACKLOG, PACER):
        for s in streams:
            rows = m[(m["condition"] == cond) & (m["talk_id"] == s.talk_id) & (m["system"] == s.system)]
            again = run_policy(s, parse_rule(cond), served_from(rows))
            # the engine fed the recorded service and samples sends the same requests at the same times
            assert [(r.text, r.dispatch_s, r.trigger) for r in again.requests] == \
                list(zip(rows["text"], rows["dispatch_s"], rows["trigger"]))
            assert "".join(rows["text"]) .replace(" ", "") == "".join(s.texts).replace(" ", "")
            # replay of the written manifest ends where the engine's playback ended, to the nanosecond
            end_ns = max(r.end_ns for r in again.requests)
            assert to_ns(summary.loc[(s.talk_id, s.system, cond), "end_s"]) == end_ns


def test_backlog_requests_record_what_the_policy_saw(run):
    _, _, res = run
    m = res.manifest
    b = m[m["condition"] == BACKLOG]
    # one request in flight at most: backlog never sends while one is in flight
    assert (b["in_flight"] == 0).all()
    # it sends at q ≤ 1 s, except what the end of the stream releases
    assert (b.loc[b["trigger"] == "backlog", "queued_s"] <= 1.0).all()
    assert set(b["trigger"]) <= {"backlog", "eos"}
    # open-loop outputs have no such record
    assert m.loc[m["condition"] == "immediate", "queued_s"].isna().all()


def synth_cmd(trace, store, out):
    return [sys.executable, "-m", "simulplay", "synth", str(trace), "--rule", "backlog:below=2,min_words=1",
            "--rule", "immediate", "--backend", PIPER, "--store", str(store), "--out", str(out), "--quiet"]


def synthesized(store_dir) -> list[str]:
    return [e["key"] for e in AudioStore(store_dir).events() if e["event"] == "synthesized"]


def test_a_killed_closed_loop_run_resumes_without_synthesizing_again(tmp_path):
    trace = tmp_path / "trace.jsonl"
    small_trace(trace, n_streams=1, n_updates=10)
    store, out = tmp_path / "store", tmp_path / "m.parquet"
    proc = subprocess.Popen(synth_cmd(trace, store, out), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wait_until(lambda: len(synthesized(store)) >= 4 or proc.poll() is not None, "4 synthesized requests")
    assert proc.poll() is None, f"synth ended before it was killed: {proc.stderr.read().decode()}"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before = set(synthesized(store))
    done = subprocess.run(synth_cmd(trace, store, out), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    first = pd.read_parquet(out)
    keys = first["audio_key"]
    assert (first["error"] == "").all()
    after = synthesized(store)
    assert len(after) == len(set(after)), "a request was synthesized twice"
    assert before <= set(after)
    # a run that finds everything stored synthesizes nothing and makes the same groups
    again = subprocess.run(synth_cmd(trace, store, tmp_path / "m2.parquet"), capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert synthesized(store) == after
    second = pd.read_parquet(tmp_path / "m2.parquet")
    cols = ["condition", "seq", "text", "dispatch_s", "trigger", "queued_s", "in_flight", "service_s", "n_samples"]
    pd.testing.assert_frame_equal(first[cols], second[cols])
    assert list(keys) == list(second["audio_key"])
    assert np.isfinite(first.loc[first["condition"].str.startswith("backlog"), "queued_s"]).all()


def test_closed_loop_outputs_run_in_parallel_on_worker_processes(run, tmp_path):
    from simulplay.synthesis.executors import parse_executor

    d, streams, _ = run
    res = synth(streams, tmp_path / "store", tmp_path / "m.parquet", backend=PIPER, rules=("backlog", "pacer"),
                executor=parse_executor("process:2"), contention_sample=0)
    m = res.manifest
    assert (m["error"] == "").all() and set(m["condition"]) == {BACKLOG, PACER}
    assert set(m["worker"]) == {"process-0@" + m["host"].iloc[0] + ".0", "process-1@" + m["host"].iloc[0] + ".0"}
    summary = simulplay.replay(tmp_path / "m.parquet").summary.set_index(["talk_id", "system", "condition"])
    for (talk, system, cond), rows in m.groupby(["talk_id", "system", "condition"]):
        s = next(x for x in streams if (x.talk_id, x.system) == (talk, system))
        again = run_policy(s, parse_rule(cond), served_from(rows))
        assert [r.text for r in again.requests] == list(rows["text"])
        assert to_ns(summary.loc[(talk, system, cond), "end_s"]) == max(r.end_ns for r in again.requests)
