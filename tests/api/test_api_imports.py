"""The API is loaded on first use (PEP 562): ``import simulplay``, ``import
simulplay.traces`` and the command line's start-up do not import it, nor what it needs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
API = ("read_trace", "group", "synthesize", "replay", "eta", "bootstrap", "load_run", "sweep")
#: What a trace reader never needs: the API, the later layers, plotting, statistics, the CLI.
HEAVY = ("simulplay.api", "simulplay.grouping", "simulplay.backends", "simulplay.synthesis", "simulplay.sim",
         "simulplay.analysis", "simulplay.report", "simulplay.workflows", "matplotlib", "scipy", "typer")


def loaded_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    probe = f"{code}\nimport sys\nprint('\\n'.join(sorted(sys.modules)))"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return set(proc.stdout.split())


@pytest.mark.parametrize("code", ["import simulplay", "import simulplay.traces",
                                  "from simulplay.traces import read_trace"])
def test_importing_the_package_or_its_trace_readers_loads_no_api(code):
    loaded = loaded_after(code)
    assert "simulplay.traces" in loaded or code == "import simulplay"
    heavy = sorted(m for m in loaded if m in HEAVY or m.startswith(tuple(h + "." for h in HEAVY)))
    assert not heavy, f"{code!r} imports {heavy}"


def test_the_command_line_starts_without_the_api():
    code = ("import runpy, sys\nsys.argv = ['simulplay', '--help']\ntry:\n"
            "    runpy.run_module('simulplay', run_name='__main__')\nexcept SystemExit:\n    pass")
    loaded = loaded_after(code)
    assert "simulplay.cli.app" in loaded
    assert "simulplay.api" not in loaded


def test_the_first_use_loads_it():
    loaded = loaded_after("import simulplay\nsimulplay.group")
    assert {"simulplay.api", "simulplay.api.steps"} <= loaded


def test_every_api_name_is_an_attribute_listed_by_dir_and_all():
    import simulplay.api

    for name in API:
        assert getattr(simulplay, name) is getattr(simulplay.api, name)
        assert name in dir(simulplay) and name in simulplay.__all__
        assert getattr(simulplay, name).__doc__
    assert simulplay.Run is simulplay.api.Run
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        simulplay.nothing  # noqa: B018
    assert not hasattr(simulplay, "nothing")
