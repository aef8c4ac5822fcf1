"""Ctrl-C (SIGINT) and SIGTERM during synth, edges and asr (real subprocesses).

The fakes' ``hang_after`` makes the run block at a known point after some work is done
(``tests/support/fakes.py``); the test waits for that work to appear in the store (records, the
VAD cache) or for the process to report it, then signals. The command must print one line
saying what was done and kept, remove its own lock files, exit 130 (SIGINT) or 143
(SIGTERM) without a traceback, and a rerun must resume from what was kept.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from simulplay.store.store import AudioStore
from tests.support.checks import kill_group, wait_until
from tests.support.factories import small_trace
from tests.support.synth import synth_args

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


def simulplay(*args, prelude: str = "") -> list[str]:
    """``python -m simulplay ARGS`` with the fakes registered (and ``prelude`` run) first."""
    code = (f"import runpy, tests.support.fakes; {prelude}"
            "runpy.run_module('simulplay', run_name='__main__', alter_sys=True)")
    return [sys.executable, "-c", code, *map(str, args)]


def synth_fake(trace, store, out, backend="fake-test", executor="serial"):
    """``simulplay synth`` of ``trace`` under immediate and timer:w=3 in a real process."""
    return simulplay(*synth_args(trace, "--rule", "immediate", "--rule", "timer:w=3", store=store, out=out,
                                 backend=backend, extra=("--executor", executor, "--contention-sample", "0")))


def records(store: Path) -> int:
    return len(AudioStore(store).completed_keys())


def finish(proc: subprocess.Popen) -> tuple[int, str]:
    _, err = proc.communicate(timeout=300)
    return proc.returncode, err


def lock_files(store: Path) -> list[str]:
    return sorted(p.name for p in (store / "locks").glob("*.lock"))


@pytest.fixture
def trace(tmp_path):
    path = tmp_path / "trace.jsonl"
    small_trace(path)
    return path


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
@pytest.mark.slow
def test_signal_during_synth_says_what_was_kept_and_a_rerun_resumes(tmp_path, trace, sig, code):
    store, out = tmp_path / "store", tmp_path / "m.parquet"
    proc = subprocess.Popen(synth_fake(trace, store, out, "fake-test:hang_after=3"), stderr=subprocess.PIPE, text=True,
                            env=ENV)
    wait_until(lambda: records(store) >= 3 or proc.poll() is not None, "3 records in the store")
    assert lock_files(store), "the hanging request should hold its lock"
    proc.send_signal(sig)
    rc, err = finish(proc)
    assert rc == code and "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    m = re.fullmatch(r"simulplay: interrupted: (\d+) of (\d+) requests done and kept; run the same command again "
                     r"to resume", lines[0])
    assert m, lines[0]
    done, total = int(m[1]), int(m[2])
    assert done == 3 == records(store)
    assert lock_files(store) == []
    assert not out.exists()
    rerun = subprocess.run(synth_fake(trace, store, out), capture_output=True, text=True, env=ENV)
    assert rerun.returncode == 0, rerun.stderr
    assert f"synthesized {total - 3}, already in store 3, failed 0" in rerun.stdout
    assert lock_files(store) == []


@pytest.mark.slow


def test_ctrl_c_to_the_process_group_stops_parallel_workers_quietly(tmp_path, trace):
    """A terminal's Ctrl-C reaches every process of the group: workers ignore it, the
    driver stops them and prints its one line."""
    store, out = tmp_path / "store", tmp_path / "m.parquet"
    proc = subprocess.Popen(synth_fake(trace, store, out, "fake-test:hang_after=2", "process:2"),
                            stderr=subprocess.PIPE, text=True, env=ENV, start_new_session=True)
    try:
        wait_until(lambda: records(store) >= 4 or proc.poll() is not None, "2 records from each of 2 workers")
        os.killpg(proc.pid, signal.SIGINT)
        rc, err = finish(proc)
    finally:
        kill_group(proc.pid)
    assert rc == 130 and "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and re.fullmatch(r"simulplay: interrupted: 4 of \d+ requests done and kept; run the "
                                            r"same command again to resume", lines[0]), err
    assert lock_files(store) == [] and records(store) == 4


@pytest.fixture
def synthesized(tmp_path, trace):
    store, out = tmp_path / "store", tmp_path / "m.parquet"
    done = subprocess.run(synth_fake(trace, store, out), capture_output=True, text=True, env=ENV)
    assert done.returncode == 0, done.stderr
    return store, out


@pytest.mark.slow


def test_sigint_during_edges_keeps_the_cached_waveforms(tmp_path, synthesized):
    store, manifest = synthesized
    cmd = simulplay("edges", manifest, "--store", store, "--thresholds", "0.5", "--out", tmp_path / "e.csv",
                    "--quiet", prelude="tests.support.fakes.slow_vad(2); ")
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=ENV)
    cached = lambda: list((store / "vad").glob("*/*.npy"))  # noqa: E731
    wait_until(lambda: len(cached()) >= 2 or proc.poll() is not None, "2 cached waveforms")
    proc.send_signal(signal.SIGINT)
    rc, err = finish(proc)
    assert rc == 130 and "Traceback" not in err, err
    lines = err.strip().splitlines()
    m = re.fullmatch(r"simulplay: interrupted: speech probabilities of 2 of (\d+) waveforms done and kept in the "
                     r"store's cache; run the same command again to resume", lines[-1]) if len(lines) == 1 else None
    assert m, err
    assert len(cached()) == 2 and not (tmp_path / "e.csv").exists()
    assert lock_files(store) == []


def test_sigterm_during_asr_writes_nothing(tmp_path, synthesized):
    store, manifest = synthesized
    out = tmp_path / "t.parquet"
    marker = tmp_path / "hanging"
    cmd = simulplay("asr", manifest, "--store", store, "--language", "en", "--recognizer",
                    f"fake-asr:hang_after=3,marker={marker}", "--out", out, "--quiet")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    wait_until(lambda: marker.exists() or proc.poll() is not None, "asr to decode 3 windows and block")
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 143 and "Traceback" not in err, err
    lines = err.strip().splitlines()
    want = (r"simulplay: interrupted: 3 of \d+ outputs transcribed, none written \(the table is written whole\); "
            r"run the same command again")
    assert len(lines) == 1 and re.fullmatch(want, lines[0]), err
    assert not out.exists()


POOL_COMMAND = """
import importlib, multiprocessing as mp, time
app = importlib.import_module("simulplay.cli.app")  # the module (simulplay.cli.app is the Typer object)
ctx = mp.get_context("fork")
busy = ctx.Event()

def hang():
    busy.set()
    time.sleep(120)

def _run():  # what OmniSTEval's aligner does inside `textlatency`: a fork pool, ended by terminate()
    if CLEANING_UP:  # as after a first Ctrl-C, while the command cleans up: our handlers are SIG_IGN
        app._on_signals(app.signal.SIG_IGN)
    with ctx.Pool(2) as pool:
        print(sum(pool.map(abs, [-1, -2, -3])), flush=True)
        pool.apply_async(hang)
        busy.wait(60)  # one worker is inside a task when terminate() sends SIGTERM

app._run = _run
app.main()
"""


@pytest.mark.parametrize("cleaning_up", [False, True])
def test_a_forked_pool_inside_a_command_ends_quietly(cleaning_up):
    """``Pool.__exit__`` ends its workers with SIGTERM. Workers forked while ``main()`` runs
    must not inherit its handler (which turns SIGTERM into a Terminated exception): CI once
    got a 'Process ForkPoolWorker-2: Traceback … Terminated' on textlatency's one-line error.
    Nor the SIG_IGN it sets while cleaning up after a signal: terminate() could not end them."""
    code = f"CLEANING_UP = {cleaning_up}\n{POOL_COMMAND}"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ENV, timeout=120)
    assert proc.returncode == 0 and proc.stdout == "6\n" and proc.stderr == "", proc.stderr


POOLS_SCRIPT = """
import importlib, signal, sys, time
from pathlib import Path
from simulplay.core import pools
app = importlib.import_module("simulplay.cli.app")


def hang(mark):
    Path(mark).write_text("busy")
    time.sleep(120)


def _run():  # a pool of simulplay.core.pools (what textlatency lends OmniSTEval's aligner), ended by terminate()
    if sys.argv[2] == "1":  # cleaning up after a first Ctrl-C: SIGTERM is ignored, and an exec keeps that
        app._on_signals(app.signal.SIG_IGN)
    with pools.pool(2) as pool:
        print(sum(pool.map(abs, [-1, -2, -3])), pool.apply(signal.getsignal, (signal.SIGINT,)).name,
              pool.apply(signal.getsignal, (signal.SIGTERM,)).name, flush=True)
        pool.apply_async(hang, (sys.argv[1],))
        deadline = time.monotonic() + 120
        while not Path(sys.argv[1]).exists() and time.monotonic() < deadline:
            time.sleep(0.05)  # one worker is inside a task when terminate() sends SIGTERM


if __name__ == "__main__":
    app._run = _run
    app.main()
"""


@pytest.mark.parametrize("cleaning_up", [False, True])
def test_a_pool_of_simulplay_ends_quietly_and_its_workers_ignore_ctrl_c(tmp_path, cleaning_up):
    """simulplay.core.pools' workers are not forked from the command, so they inherit no Python
    handler, but an exec keeps an ignored SIGTERM: they set SIGTERM back to its default (or
    terminate() would wait on them forever) and ignore SIGINT (the parent stops them)."""
    script = tmp_path / "pool_command.py"
    script.write_text(POOLS_SCRIPT)
    proc = subprocess.run([sys.executable, str(script), str(tmp_path / "busy"), "1" if cleaning_up else "0"],
                          capture_output=True, text=True, env=ENV, timeout=180)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert proc.stdout == "6 SIG_IGN SIG_DFL\n" and (tmp_path / "busy").exists()


STARTING_SCRIPT = """
import importlib
from simulplay.core import pools
app = importlib.import_module("simulplay.cli.app")


def _run():  # cleaning up after a first Ctrl-C (SIGTERM ignored), terminate() before the workers have started
    app._on_signals(app.signal.SIG_IGN)
    for _ in range(5):
        with pools.pool(4):
            pass
    print("ended", flush=True)


if __name__ == "__main__":
    app._run = _run
    app.main()
"""


def test_a_pool_terminated_while_its_workers_start_does_not_wait_forever(tmp_path):
    """A worker still starting when terminate() runs has not reset the SIGTERM it inherited as
    ignored; with SIGTERM it survived, then waited forever for the queue lock terminate() holds
    (CI hung here). The pool stops its workers with SIGKILL: five pools of four end in seconds."""
    script = tmp_path / "starting.py"
    script.write_text(STARTING_SCRIPT)
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=ENV, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)  # SIGTERM is ignored in there: the group gets SIGKILL
        pytest.fail("five pools terminated while their workers started did not end within 120 s")
    assert proc.returncode == 0 and err == "", err
    assert out == "ended\n"
