"""Executors: serial, local worker processes and Ray actors."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import ray

from simulplay.backends import parse_backend
from simulplay.core.errors import InputError
from simulplay.grouping import parse_rule
from simulplay.store.store import AudioStore
from simulplay.synthesis.executors import parse_executor
from simulplay.synthesis.run import synthesize_to_manifest
from tests.support import fakes  # noqa: F401  (registers fake-test)
from tests.support.checks import kill_group, wait_until
from tests.support.factories import small_trace, stream

# a module fixture of real runs takes seconds: every test here counts as slow (make test-fast leaves them out)
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
RULES = [parse_rule("immediate"), parse_rule("timer:w=2")]


@pytest.fixture(scope="module")
def local_ray():
    """A local Ray instance as CI has it; workers can import the tests package."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}})
    yield
    ray.shutdown()


def streams(n_talks=2):
    out = []
    for t in range(n_talks):
        for system, texts in (("A", ["one two.", "three four five.", "six.", "seven eight."]),
                              ("F", ["one two three four.", "five six seven.", "eight nine ten."])):
            out.append(stream([float(i) for i in range(len(texts))], [f"{x} t{t}" for x in texts],
                              talk_id=f"talk{t}", system=system, source_s=6.0))
    return out


def run(tmp_path, name, executor, backend="fake-test:delay=0.01", **kw):
    spec = parse_executor(executor, **kw)
    return synthesize_to_manifest(streams(), RULES, parse_backend(backend), AudioStore(tmp_path / name),
                                  tmp_path / f"{name}.parquet", executor=spec, contention_sample=2)


def test_serial_process_and_ray_give_the_same_requests_and_samples(tmp_path, local_ray):
    results = {e: run(tmp_path, e.replace(":", "-"), e) for e in ("serial", "process:2", "ray")}
    cols = ["talk_id", "system", "condition", "seq", "text", "audio_key", "n_samples"]
    base = results["serial"].manifest[cols]
    for e in ("process:2", "ray"):
        pd.testing.assert_frame_equal(results[e].manifest[cols], base)
    assert results["serial"].manifest["worker"].str.startswith("serial@").all()
    assert set(results["process:2"].manifest["worker"].str.split("@").str[0]) == {"process-0", "process-1"}
    assert results["ray"].manifest["worker"].str.startswith("ray-").all()
    for e in ("process:2", "ray"):
        st = results[e].stats
        assert st.contention_ratio is not None and st.contention_sample == 2
        assert sum(w.requests for w in st.per_worker.values()) == st.synthesized
    for e, res in results.items():  # every worker that synthesized timed the clock probe first and last
        probes = {(p["worker"], p["when"]) for p in res.stats.probes}
        workers = set(res.manifest["worker"])
        assert probes == {(w, when) for w in workers for when in ("start", "end")}, e
        assert res.stats.clock.measured == res.stats.synthesized


@pytest.mark.parametrize("executor", ["process:2", "ray"])
def test_a_killed_worker_is_replaced_and_its_request_retried(tmp_path, executor, local_ray):
    marker = tmp_path / "died-once"
    res = run(tmp_path, "store", executor, backend=f"fake-test:delay=0.01,die_on=five,die_marker={marker}")
    m, st = res.manifest, res.stats
    assert marker.exists() and st.worker_deaths == 1 and st.retries == 1
    assert (m["error"] == "").all() and m["audio_key"].ne("").all()
    retried = m[m["attempts"] == 2]  # the retry is recorded in the manifest
    assert retried["text"].nunique() == 1 and retried["text"].str.contains("five").all()
    assert (m.loc[m["attempts"] != 2, "attempts"] == 1).all()
    done = [e["key"] for e in AudioStore(tmp_path / "store").events() if e["event"] == "synthesized"]
    assert len(done) == len(set(done)) == m["text"].nunique()


@pytest.mark.slow
def test_a_request_that_keeps_killing_workers_fails_closed(tmp_path):
    res = run(tmp_path, "store", "process:2", backend="fake-test:die_on=seven", retries=1)
    m = res.manifest
    bad = m[m["text"].str.contains("seven")]
    assert (bad["error"].str.startswith("WorkerDied")).all() and len(bad) > 0
    assert (m.loc[~m["text"].str.contains("seven"), "error"] == "").all()
    assert res.stats.failed == bad["text"].nunique() and res.stats.worker_deaths >= 2


def test_bad_executor_specs():
    for text, fragment in (("process", "needs a worker count"), ("process:0", "needs a worker count"),
                           ("threads:4", "unknown executor")):
        with pytest.raises(InputError, match=fragment):
            parse_executor(text)
    assert parse_executor("ray:auto").address == "auto" and parse_executor("process:3").workers == 3


@pytest.mark.slow
def test_driver_sigkill_then_resume_with_ray(tmp_path):
    trace = tmp_path / "trace.jsonl"
    small_trace(trace, n_streams=2, n_updates=14)
    store = tmp_path / "store"
    cmd = [sys.executable, "-m", "simulplay", "synth", str(trace), "--rule", "immediate", "--rule", "timer:w=3",
           "--backend", "piper:intra_op_threads=1", "--store", str(store), "--out", str(tmp_path / "m.parquet"),
           "--executor", "ray", "--quiet", "--contention-sample", "0"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    wait_until(lambda: len(list((store / "records").glob("*.json"))) >= 6 or proc.poll() is not None,
               "6 request records in the store", timeout=240)
    assert proc.poll() is None, "the driver ended before it was killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    done_before = AudioStore(store).completed_keys()
    assert len(done_before) >= 6
    kill_group(proc.pid)  # the killed driver's local Ray daemons: gone before the next run starts
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=600, start_new_session=True)
    assert again.returncode == 0, again.stderr
    assert f"already in store {len(done_before)}" in again.stdout
    events = [e["key"] for e in AudioStore(store).events() if e["event"] == "synthesized"]
    assert len(events) == len(set(events)), "a completed request was synthesized again"
    m = pd.read_parquet(tmp_path / "m.parquet")
    assert (m["error"] == "").all()



def test_a_closed_loop_policy_under_ray_makes_the_serial_groups(tmp_path, local_ray):
    # audio is 0.05 s per letter: the first request ("one two three A", 0.6 s) plays until about 0.61 s,
    # so backlog wakes at its crossing (about 0.41 s) and joins the two updates held then; the next
    # arrival is 40 ms after it, far beyond the service time's jitter; the rest goes at the last arrival
    texts = ["one two three", "four", "five", "six seven eight", "nine", "ten"]
    loop = [stream([0.0, 0.1, 0.2, 0.45, 0.5, 0.9], [f"{x} {s}" for x in texts], talk_id="t", system=s,
                   source_s=2.0) for s in ("A", "F")]
    rules = [parse_rule("backlog:below=0.2,min_words=1"), parse_rule("immediate")]
    cols = ["talk_id", "system", "condition", "seq", "text", "trigger", "n_updates", "group", "in_flight",
            "audio_key", "n_samples"]
    got = {e: synthesize_to_manifest(loop, rules, parse_backend("fake-test:delay=0.01"), AudioStore(tmp_path / e),
                                     tmp_path / f"{e}.parquet", executor=parse_executor(e),
                                     contention_sample=0).manifest for e in ("serial", "ray")}
    pd.testing.assert_frame_equal(got["ray"][cols], got["serial"][cols])
    assert got["ray"]["worker"].str.startswith("ray-").all()
    backlog = got["serial"][got["serial"]["condition"].str.startswith("backlog")]
    assert backlog["n_updates"].max() > 1  # some group joined updates: the feedback decided
