"""The tests' way of running `simulplay` in this process (tests/support/cli.py) gives what a
real process gives: the same exit code, stdout and stderr as the ``simulplay`` command (the
console script) on the same arguments, what a library writes to file descriptor 2 from C, a
traceback and exit code 1 for an exception that escapes, warnings as a fresh interpreter
shows them, and the test's working folder, environment and streams put back afterwards."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import simulplay.cli
from tests.support.cli import run_cli
from tests.support.factories import small_trace


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("runner")
    small_trace(folder / "trace.jsonl", n_streams=2, n_updates=4)
    (folder / "bad.csv").write_text("talk_id,system,seq,time_s,text,source_s\nt,A,0,-1,word,3\n", encoding="utf-8")
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("args", [
    ["--version"],
    ["validate", "{f}/trace.jsonl"],
    ["validate", "{f}/bad.csv"],  # a one-line error, exit code 2
    ["group", "{f}/trace.jsonl", "--rule", "timer:w=2", "--out", "{f}/requests.csv"],
    ["group", "{f}/trace.jsonl", "--rule", "timr:w=2", "--out", "{f}/requests.csv"],  # an unknown rule
    ["replay", "{f}/missing.parquet"],
    ["group", "{f}/trace.jsonl", "--no-such-flag"],  # click's usage error, with the program's name
])
def test_in_process_and_a_real_process_agree(files, args):
    args = [a.format(f=files) for a in args]
    here = run_cli(*args, subprocess=False)
    (files / "requests.csv").unlink(missing_ok=True)
    # the console script a user's shell runs (`python -m simulplay` names itself so in usage errors)
    there = subprocess.run([str(Path(sys.executable).parent / "simulplay"), *args], capture_output=True, text=True,
                           timeout=300)
    assert (here.returncode, here.stdout, here.stderr) == (there.returncode, there.stdout, there.stderr)
    if args[0] == "group":
        assert here.returncode == (0 if "timer:w=2" in args else 2)


def test_what_c_code_writes_to_descriptor_2_is_captured(monkeypatch):
    def main():
        os.write(2, b"from C\n")
        print("from Python")
        sys.exit(3)

    monkeypatch.setattr(simulplay.cli, "main", main)
    proc = run_cli("anything", subprocess=False)
    assert (proc.returncode, proc.stdout, proc.stderr) == (3, "from Python\n", "from C\n")


def test_an_escaping_exception_is_a_traceback_and_exit_code_1(monkeypatch):
    def main():
        raise KeyError("boom")

    monkeypatch.setattr(simulplay.cli, "main", main)
    proc = run_cli("anything", subprocess=False)
    assert proc.returncode == 1 and proc.stderr.startswith("Traceback (most recent call last):")
    assert proc.stderr.rstrip().endswith("KeyError: 'boom'")


def test_warnings_are_shown_as_a_fresh_interpreter_shows_them(monkeypatch):
    import warnings

    def main():
        warnings.warn("shown once per place", RuntimeWarning, stacklevel=1)
        warnings.warn("left out by default", DeprecationWarning, stacklevel=1)

    monkeypatch.setattr(simulplay.cli, "main", main)
    proc = run_cli("anything", subprocess=False)
    assert proc.returncode == 0 and "RuntimeWarning: shown once per place" in proc.stderr
    assert "DeprecationWarning" not in proc.stderr
    strict = run_cli("anything", env={"PYTHONWARNINGS": "error::RuntimeWarning"}, subprocess=False)
    assert strict.returncode == 1 and "RuntimeWarning: shown once per place" in strict.stderr.splitlines()[-1]


def test_folder_environment_and_streams_are_put_back(tmp_path, monkeypatch):
    seen = {}

    def main():
        seen["cwd"], seen["var"] = os.getcwd(), os.environ.get("SIMULPLAY_RUNNER_TEST")
        pd.DataFrame({"x": [1]}).to_csv("made-here.csv", index=False)

    monkeypatch.setattr(simulplay.cli, "main", main)
    cwd, streams = os.getcwd(), (sys.stdout, sys.stderr)
    proc = run_cli("anything", cwd=tmp_path, env={"SIMULPLAY_RUNNER_TEST": "1"}, subprocess=False)
    assert proc.returncode == 0 and seen == {"cwd": str(tmp_path), "var": "1"}
    assert (tmp_path / "made-here.csv").exists()
    assert os.getcwd() == cwd and "SIMULPLAY_RUNNER_TEST" not in os.environ and (sys.stdout, sys.stderr) == streams
