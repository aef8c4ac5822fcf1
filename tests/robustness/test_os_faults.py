"""Faults of the machine, met for real: a disk that fills up (a small tmpfs), a folder where
no file can be made (``/proc``), a read-only file system (a read-only bind mount), a file
removed while a command runs. Every one ends the command (its console entry point, in this
process; the first test and the file removed mid-run in a real ``python`` process) in one
line naming the path, what failed and what to do, with the documented exit code (2: refused
before any work; 1: started and could not finish), no traceback, no half-written output,
and an audio store that ``store verify`` finds sound and a rerun resumes.

The fake backend (``tests/support/fakes.py``) synthesizes, so the runs take seconds.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from simulplay.store.store import AudioStore
from tests.support.checks import assert_fault, wait_until
from tests.support.cli import run_cli
from tests.support.factories import experiment_toml, small_trace
from tests.support.mounts import NO_FILES_HERE, Mounts, needs_root

pytestmark = needs_root

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
FULL = "no space left on the device"
READ_ONLY = "read-only file system"


def simulplay(*args, process: bool | None = None) -> subprocess.CompletedProcess:
    """``simulplay ARGS`` with the fake backend registered, run to its end: through its console
    entry point in this process (file descriptors 1 and 2 captured), or with ``process`` in a
    real ``python`` process of its own."""
    return run_cli(*args, subprocess=process, imports=["tests.support.fakes"])


def synth_args(trace, store, out, backend="fake-test") -> list:
    return ["synth", trace, "--rule", "immediate", "--rule", "timer:w=3", "--backend", backend,
            "--contention-sample", "0", "--store", store, "--out", out, "--quiet"]


def verify(store: Path) -> subprocess.CompletedProcess:
    return simulplay("store", "verify", store)


def records(store: Path) -> int:
    return len(AudioStore(store).completed_keys())


def leftovers(folder: Path) -> list[str]:
    """Everything in ``folder`` (hidden temporary files and folders included)."""
    return sorted(p.name for p in folder.iterdir())


@pytest.fixture
def mounts():
    m = Mounts()
    yield m
    m.undo()


@pytest.fixture
def trace(tmp_path) -> Path:
    """Four streams of 20 updates: 107 requests under immediate and timer:w=3 (about 0.9 MB of fake audio)."""
    path = tmp_path / "trace.jsonl"
    small_trace(path, n_streams=4, n_updates=20)
    return path


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A finished experiment: ``run/`` (a `simulplay run` folder) and its audio store ``store/``."""
    from simulplay.analysis.bootstrap import Bootstrap
    from simulplay.grouping.rules import Immediate, Timer
    from simulplay.workflows.experiment import Experiment
    from simulplay.workflows.pipeline import run_experiment
    from tests.support.fakes import FakeSettings

    base = tmp_path_factory.mktemp("finished")
    small_trace(base / "trace.jsonl", n_streams=4, n_updates=6)
    run_experiment(Experiment(name="tiny", traces=(base / "trace.jsonl",), a="A", f="F",
                              rules=(Immediate(), Timer(w=3)), reference="immediate", backends=(FakeSettings(),),
                              out=base / "run", store=base / "store", bootstrap=Bootstrap(draws=100)))
    return base


# ---- 1. disk full ------------------------------------------------------------------


@pytest.mark.slow


def test_synth_on_a_full_disk_ends_in_one_line_keeps_the_store_sound_and_resumes(tmp_path, mounts, trace):
    disk = mounts.tmpfs(tmp_path / "disk", "300k")
    store, out = disk / "store", tmp_path / "m.parquet"
    proc = simulplay(*synth_args(trace, store, out), process=True)  # a real process, as a user's shell runs it
    kept = records(store)
    line = assert_fault(proc, 1, str(store), "cannot write", FULL, "free space",
                        f"{kept} of 107 requests done and kept; run the same command again to resume")
    assert 0 < kept < 107, line
    assert "simulplay: warning: store" in proc.stderr  # the estimate warned before the work (item 2)
    assert not out.exists()
    check = verify(store)
    assert check.returncode == 0 and "0 damaged, 0 temporary files, 0 stale lock files" in check.stdout, check.stdout
    mounts.resize(disk, "20m")
    again = simulplay(*synth_args(trace, store, out))
    assert again.returncode == 0, again.stderr
    assert f"already in store {kept}" in again.stdout and "failed 0" in again.stdout
    assert verify(store).returncode == 0


@pytest.mark.slow


def test_a_record_that_does_not_fit_ends_the_run_in_one_line(tmp_path, mounts, trace):
    store = AudioStore.open(tmp_path / "store").root
    mounts.tmpfs(store / "records", "12k")  # three pages: the write check's file, then two records
    proc = simulplay(*synth_args(trace, store, tmp_path / "m.parquet"))
    assert_fault(proc, 1, str(store / "records"), ".json: cannot write", FULL, "requests done and kept")
    assert not [p for p in (store / "records").iterdir() if p.name.startswith(".")]  # no temporary record
    assert verify(store).returncode == 0
    assert not (tmp_path / "m.parquet").exists()


@pytest.mark.slow


def test_a_manifest_that_does_not_fit_is_not_left_half_written(tmp_path, mounts, trace):
    disk = mounts.tmpfs(tmp_path / "disk", "8k")
    store = tmp_path / "store"
    proc = simulplay(*synth_args(trace, store, disk / "m.parquet"))
    assert_fault(proc, 1, str(disk / "m.parquet"), "cannot write", FULL, "free space",
                 "every finished request is kept in the store")
    assert leftovers(disk) == []
    assert verify(store).returncode == 0
    again = simulplay(*synth_args(trace, store, tmp_path / "m.parquet"))  # everything was kept
    assert again.returncode == 0 and "synthesized 0, already in store 107" in again.stdout, again.stdout


@pytest.mark.slow


def test_a_report_that_does_not_fit_leaves_nothing_behind(tmp_path, mounts, finished):
    disk = mounts.tmpfs(tmp_path / "disk", "64k")
    proc = simulplay("report", finished / "run", "--out", disk / "report", "--listen-s", "0")
    assert_fault(proc, 1, str(disk / "report"), "cannot write the report", FULL)
    assert leftovers(disk) == []


def test_a_render_that_does_not_fit_leaves_nothing_behind(tmp_path, mounts, finished):
    disk = mounts.tmpfs(tmp_path / "disk", "32k")
    proc = simulplay("render", finished / "run" / "manifest.parquet", "--store", finished / "store",
                     "--out", disk / "heard", "--quiet")
    assert_fault(proc, 1, str(disk / "heard"), "cannot write", FULL)
    assert leftovers(disk) == []


# ---- 1 and 2. outputs refused before any work ----------------------------------------


def test_an_output_folder_that_does_not_exist_is_refused_before_synthesis(tmp_path, trace):
    proc = simulplay(*synth_args(trace, tmp_path / "store", tmp_path / "missing" / "m.parquet"))
    assert_fault(proc, 2, str(tmp_path / "missing" / "m.parquet"), "does not exist")
    assert not (tmp_path / "store").exists()


def _unwritable(where: str, tmp_path: Path, mounts: Mounts) -> Path:
    if where == "proc":
        return NO_FILES_HERE
    (tmp_path / "writable").mkdir()
    return mounts.read_only(tmp_path / "writable", tmp_path / "read-only")


def _experiment(folder: Path, trace: Path, out: Path, store: Path) -> Path:
    text = experiment_toml(traces=[str(trace)], rules=["immediate"], out=str(out), store=str(store),
                           analysis={"draws": 100})
    (folder / "exp.toml").write_text(text)
    return folder / "exp.toml"


COMMANDS = {  # command → its arguments, given the finished experiment and a folder no file can be made in
    "synth": lambda f, bad: synth_args(f / "trace.jsonl", f / "store", bad / "m.parquet"),
    "replay": lambda f, bad: ["replay", f / "run" / "manifest.parquet", "--out", bad / "s.parquet"],
    "eta": lambda f, bad: ["eta", f / "run" / "summary.parquet", "--a", "A", "--f", "F", "--reference", "immediate",
                           "--out", bad / "eta.csv", "--draws", "100"],
    "render": lambda f, bad: ["render", f / "run" / "manifest.parquet", "--store", f / "store", "--out",
                              bad / "heard"],
    "report": lambda f, bad: ["report", f / "run", "--out", bad / "report"],
    "latency": lambda f, bad: ["latency", f / "run" / "manifest.parquet", "--out", bad / "latency.csv"],
    "sweep": lambda f, bad: ["sweep", f / "run", "--rule", "timer:w=1..2", "--out", bad / "sweep"],
}


@pytest.mark.parametrize(("command", "where"), [(c, ("proc", "read-only")[i % 2]) for i, c in enumerate(COMMANDS)])
def test_an_output_folder_that_cannot_be_written_is_refused_at_once(command, where, tmp_path, mounts, finished):
    bad = _unwritable(where, tmp_path, mounts)
    before = records(finished / "store")
    proc = simulplay(*COMMANDS[command](finished, bad))
    assert_fault(proc, 2, str(bad), "cannot be written", READ_ONLY, "use a folder on a writable file system")
    assert records(finished / "store") == before


@pytest.mark.parametrize("key", ["out", "store"])
def test_run_refuses_an_output_or_store_folder_it_cannot_write_before_synthesis(key, tmp_path, mounts):
    small_trace(tmp_path / "trace.jsonl", n_streams=2, n_updates=4)
    bad = _unwritable("read-only", tmp_path, mounts)
    paths = {"out": tmp_path / "run", "store": tmp_path / "store", key: bad / key}
    proc = simulplay("run", _experiment(tmp_path, tmp_path / "trace.jsonl", paths["out"], paths["store"]), "--quiet")
    assert_fault(proc, 2, str(bad / key), f"field '{key}'", "cannot be written", READ_ONLY)
    assert not (tmp_path / "store").exists() and not (tmp_path / "run").exists()


def test_a_store_that_cannot_be_created_is_refused_before_synthesis(tmp_path, trace):
    store = NO_FILES_HERE / "simulplay-store"
    proc = simulplay(*synth_args(trace, store, tmp_path / "m.parquet"))
    assert_fault(proc, 2, str(store), "field '--store'", "cannot be created as an audio store")
    assert not (tmp_path / "m.parquet").exists()


def test_a_read_only_store_is_refused_before_synthesis(tmp_path, mounts, trace):
    AudioStore.open(tmp_path / "store")
    store = mounts.read_only(tmp_path / "store", tmp_path / "archived")
    proc = simulplay(*synth_args(trace, store, tmp_path / "m.parquet", backend="fake-test:fail_on=never-seen"))
    assert_fault(proc, 2, str(store), "field '--store'", "cannot be written", READ_ONLY)
    assert records(tmp_path / "store") == 0 and not (tmp_path / "m.parquet").exists()


def test_an_os_error_no_library_call_names_is_still_one_line(tmp_path, mounts):
    """The command line's last resort: `store gc` removing a temporary file from a read-only store."""
    store = AudioStore.open(tmp_path / "store").root
    (store / "audio" / ".left.by-a-kill.tmp").write_bytes(b"x")
    proc = simulplay("store", "gc", mounts.read_only(store, tmp_path / "archived"))
    assert_fault(proc, 1, str(tmp_path / "archived" / "audio" / ".left.by-a-kill.tmp"), READ_ONLY)


# ---- 1. a file that disappears -------------------------------------------------------


@pytest.mark.slow


def test_a_trace_removed_while_synth_runs_costs_nothing(tmp_path, trace):
    """The trace's hash is the one of the file as read at the start, not read again at the end
    (a trace moved during hours of synthesis used to end the run in a traceback)."""
    digest = hashlib.sha256(trace.read_bytes()).hexdigest()
    store, out = tmp_path / "store", tmp_path / "m.parquet"
    code = "import runpy, tests.support.fakes; runpy.run_module('simulplay', run_name='__main__', alter_sys=True)"
    proc = subprocess.Popen([sys.executable, "-c", code, *map(str, synth_args(trace, store, out,
                                                                              "fake-test:delay=0.02"))],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    wait_until(lambda: (store / "records").is_dir() and records(store) > 0 or proc.poll() is not None,
               "the first record")
    assert proc.poll() is None, "synth ended before its trace could be removed"
    trace.unlink()
    _, err = proc.communicate(timeout=600)
    assert proc.poll() == 0 and "Traceback" not in err, err
    meta = json.loads(pq.read_schema(out).metadata[b"simulplay"])
    assert [t["sha256"] for t in meta["traces"]] == [digest]
    assert len(pd.read_parquet(out)) == 112


def test_an_audio_file_removed_before_render_names_the_store_and_the_fix(tmp_path, finished):
    """Read-only use: the missing file is named, nothing is synthesized or removed (exit 2)."""
    import shutil

    store = tmp_path / "store"
    shutil.copytree(finished / "store", store)
    victim = next((store / "audio").glob("*/*.flac"))
    victim.unlink()
    proc = simulplay("render", finished / "run" / "manifest.parquet", "--store", store, "--out", tmp_path / "heard",
                     "--quiet")
    assert_fault(proc, 2, f"store {store}", victim.stem, "is missing", "simulplay synth")
    assert not (tmp_path / "heard").exists()


# ---- 3. a finished experiment on a read-only file system ------------------------------


@pytest.fixture(scope="module")
def archived(finished, tmp_path_factory):
    """The finished experiment seen through a read-only bind mount."""
    m = Mounts()
    point = m.read_only(finished, tmp_path_factory.mktemp("archive") / "ro")
    yield point
    m.undo()


READERS = {  # command → its arguments on the archived run (A) writing only into OUT
    "replay": lambda a, out: ["replay", a / "run" / "manifest.parquet", "--out", out / "s.parquet",
                              "--parts", out / "parts.csv"],
    "eta": lambda a, out: ["eta", a / "run" / "summary.parquet", "--a", "A", "--f", "F", "--reference", "immediate",
                           "--out", out / "eta.csv", "--per-talk", out / "per_talk.csv", "--draws", "100"],
    "report": lambda a, out: ["report", a / "run", "--store", a / "store", "--out", out / "report"],
    "latency": lambda a, out: ["latency", a / "run" / "manifest.parquet", "--out", out / "latency.csv"],
    "render": lambda a, out: ["render", a / "run" / "manifest.parquet", "--store", a / "store", "--out",
                              out / "heard", "--quiet"],
    "explore": lambda a, out: ["explore", a / "run", "--store", a / "store", "--out", out / "explore"],
}


def test_edges_refuses_a_read_only_store_before_inferring_what_its_cache_lacks(archived, tmp_path):
    proc = simulplay("edges", archived / "run" / "manifest.parquet", "--store", archived / "store",
                     "--thresholds", "0.5", "--out", tmp_path / "edges.csv", "--quiet")
    assert_fault(proc, 2, str(archived / "store" / "vad"), "field '--store'", "cannot be written", READ_ONLY)
    assert not (tmp_path / "edges.csv").exists()


@pytest.mark.parametrize("command", sorted(READERS))
@pytest.mark.slow
def test_a_read_only_run_and_store_serve_every_reading_command(command, archived, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    proc = simulplay(*READERS[command](archived, out))
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "error" not in proc.stderr, proc.stderr
    assert leftovers(out), "nothing was written to --out"


# ---- the pieces ------------------------------------------------------------------------


def test_an_arrow_error_without_errno_still_reads_as_a_full_disk():
    from simulplay.core.errors import FileFault

    fault = FileFault("/x/m.parquet", "cannot write",
                      OSError("Error writing bytes to file. Detail: [errno 28] No space left on device"))
    assert str(fault) == ("/x/m.parquet: cannot write (no space left on the device); free space on that file system "
                          "or use a folder on another one") and fault.exit_code == 1


def test_the_space_estimate_counts_only_what_the_store_lacks(tmp_path):
    import tests.support.fakes  # noqa: F401
    from simulplay.backends import parse_backend
    from simulplay.synthesis.space import CHARS_PER_S, estimate_space

    store = AudioStore.open(tmp_path / "store")
    store.put_record("done", {"audio_key": ""})
    plan = pd.DataFrame({"key": ["done", "a", "a", "b"], "text": ["x" * 99, "y" * 28, "y" * 28, "z" * 14]})
    config = parse_backend("fake-test")
    est = estimate_space(plan, config, store)
    assert est.requests == 2 and est.audio_s == pytest.approx(42 / CHARS_PER_S)
    assert est.needed_bytes == int(42 / CHARS_PER_S * 22_050 * 2 * 0.6)
    assert est.free_bytes > 0 and not est.short
