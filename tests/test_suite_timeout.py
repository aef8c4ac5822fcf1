"""The suite cannot hang: every test runs under pytest-timeout (pyproject.toml's ``timeout``),
so a test stuck on a lock becomes one failing test with every thread's stack, and the other
tests still run. Here a real pytest, with this project's configuration and two xdist workers
as ``make test`` runs it, meets a test that waits forever inside a pool's ``join`` (the stack
CI met in OmniSTEval's aligner) and a test that passes."""

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

HANGING = '''
import threading
import time


def wait_like_a_stuck_pool_worker():
    threading.Event().wait()  # a lock no one will release


def test_stuck():
    wait_like_a_stuck_pool_worker()


def test_fine():
    time.sleep(0.1)
    assert True
'''


def test_the_configured_timeout_covers_the_slowest_fixture_and_stops_a_hang_within_ci():
    options = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]["ini_options"]
    # the slowest real-Piper fixture with its tests takes ≈ 70 s on a quiet 2-core machine (docs/tests.md):
    # the limit leaves 4× for a loaded one, and a hang costs at most a tenth of CI's 90 minutes
    assert 300 <= int(options["timeout"]) <= 540
    assert options["timeout_method"] == "signal"  # a failing test with its stack; the worker lives on


def test_a_hanging_test_fails_alone_with_its_stack_and_the_others_run(tmp_path):
    (tmp_path / "test_hangs.py").write_text(HANGING)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(tmp_path),
         "-p", "no:cacheprovider", "-n", "2", "-o", "timeout=5", str(tmp_path / "test_hangs.py")],
        capture_output=True, text=True, timeout=240, cwd=tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "1 failed, 1 passed" in out, out
    assert "Timeout" in out and "wait_like_a_stuck_pool_worker" in out, out  # the stuck frame is shown
