import os
from pathlib import Path

import pytest

from tests.support.cli import run_cli

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def cli():
    return run_cli


PARTS = ("shared", "alone")


def pytest_addoption(parser):
    parser.addoption("--part", choices=PARTS, default=None,
                     help="run only the tests that may share the machine (shared: run them with "
                          "-n 2) or only those marked alone (they judge the machine's timing or "
                          "load every core); `make test` runs both parts, one after the other")


def pytest_collection_modifyitems(config, items):
    """``--part``: keep one part, slow modules first; the other part's tests are left for the
    other run (and counted apart from a deselection in :func:`pytest_sessionfinish`)."""
    part = config.getoption("--part")
    if part is None:
        return
    keep = [i for i in items if (i.get_closest_marker("alone") is not None) == (part == "alone")]
    config._simulplay_other_part = len(items) - len(keep)
    # modules with slow tests first (stable otherwise): two workers that take the long modules
    # early end together, instead of one finishing a long module while the other idles
    slow = {i.module.__name__ for i in keep if i.get_closest_marker("slow") is not None}
    items[:] = sorted(keep, key=lambda i: i.module.__name__ not in slow)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    left = getattr(config, "_simulplay_other_part", None)
    if left is not None:
        other = PARTS[1 - PARTS.index(config.getoption("--part"))]
        terminalreporter.write_line(f"--part {config.getoption('--part')}: {left} test(s) left to --part {other}")


def pytest_sessionfinish(session, exitstatus):
    """In CI (CI=true) a skipped test is a failure (what a test needs must be installed), and
    so is a deselected one (CI runs the tests marked slow too: no ``-m "not slow"`` there);
    the tests ``--part`` leaves to the other part's run are neither."""
    if os.environ.get("CI", "").lower() == "true" and not hasattr(session.config, "workerinput"):
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        stats = reporter.stats if reporter else {}
        skipped, deselected = len(stats.get("skipped", [])), len(stats.get("deselected", []))
        if (skipped or deselected) and session.exitstatus == 0:
            print(f"\nCI=true: {skipped} skipped and {deselected} deselected test(s) count as failures")
            session.exitstatus = 1


@pytest.fixture(scope="session")
def piper_runs(tmp_path_factory):
    """Real Piper runs of named stream sets in one store, each synthesized once per session
    (per xdist worker): ``piper_runs.run(name, streams)`` (tests/support/synth.py)."""
    from tests.support.synth import PiperRuns

    return PiperRuns(tmp_path_factory.mktemp("piper-runs"))


@pytest.fixture(scope="session")
def docs_site(tmp_path_factory) -> Path:
    """The documentation site, built once per session (per xdist worker) with ``mkdocs build
    --strict`` into a temporary folder: the folder, or the test fails with the build's output."""
    import subprocess
    import sys

    site = tmp_path_factory.mktemp("docs-site") / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    out = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                          str(ROOT / "mkdocs.yml"), "--site-dir", str(site)],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        pytest.fail("mkdocs build --strict failed:\n" + out.stdout[-3000:] + out.stderr[-3000:])
    return site


@pytest.fixture(scope="session")
def tiny_xtts_dir(tmp_path_factory):
    """A tiny random XTTS-v2 checkpoint folder, built once per test session (about 90 MB)."""
    from tests.support.tiny_xtts import build_tiny_xtts

    return build_tiny_xtts(tmp_path_factory.mktemp("tiny-xtts"))
