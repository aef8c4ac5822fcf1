"""Plugins as a user meets them (docs/plugins.md): a package built and installed in the test
(pip, entry points) and the same module named with ``--plugin``, through `group`, `synth`,
`run` and `sweep` in real processes; its identity in the signatures; the one-line errors."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess as sp
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from simulplay.grouping.registry import RULES
from tests.support.cli import ROOT

HERE = Path(__file__).parent
MODULE = HERE / "clause_plugin.py"
SHA = hashlib.sha256(MODULE.read_bytes()).hexdigest()
TRACE = ROOT / "traces" / "sample_traces.jsonl"
PYPROJECT = """\
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "simulplay-clause"
version = "0.3.1"

[project.entry-points."simulplay.rules"]
clause = "simulplay_clause"
{extra}
[project.entry-points."simulplay.backends"]
tone = "simulplay_clause"
"""


def install(folder: Path, *, source: str | None = None, extra: str = "") -> Path:
    """Build the package ``simulplay-clause`` 0.3.1 (the module :data:`MODULE`, or ``source``)
    in ``folder`` and install it with pip into ``folder/site``; returns that folder."""
    pkg = folder / "pkg"
    (pkg / "simulplay_clause").mkdir(parents=True)
    (pkg / "simulplay_clause" / "__init__.py").write_text(source or MODULE.read_text(encoding="utf-8"))
    (pkg / "pyproject.toml").write_text(PYPROJECT.format(extra=extra))
    site = folder / "site"
    sp.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index",
            "--target", str(site), str(pkg)], check=True, capture_output=True, timeout=300, cwd=folder)
    shutil.rmtree(pkg)  # only the installed copy is importable
    return site


def simulplay(*args, cwd: Path, site: Path | None = None) -> sp.CompletedProcess:
    """``python -m simulplay *args`` in a fresh interpreter, with ``site`` on its path."""
    path = os.pathsep.join(str(p) for p in (ROOT, site) if p)
    return sp.run([sys.executable, "-m", "simulplay", *map(str, args)], cwd=cwd, capture_output=True, text=True,
                  timeout=300, env={**os.environ, "PYTHONPATH": path})


def signatures(path: Path) -> list[dict]:
    meta = json.loads(pq.read_metadata(path).metadata[b"simulplay"])
    return meta["signatures"] if "signatures" in meta else [meta["signature"]]


def plugin_entries(path: Path, rule: str) -> list[str]:
    return next(s for s in signatures(path) if s.get("rule") == rule).get("plugin", [])


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    return install(tmp_path_factory.mktemp("installed"))


def test_an_installed_plugin_works_through_group_synth_run_and_sweep(site, tmp_path):
    mine = f"simulplay-clause@0.3.1/sha256:{SHA}"
    done = simulplay("group", TRACE, "--rule", "clause:cap=3", "--rule", "immediate", "--out", "req.parquet",
                     cwd=tmp_path, site=site)
    assert done.returncode == 0, done.stderr
    assert plugin_entries(tmp_path / "req.parquet", "clause:cap=3") == [f"clause={mine}"]
    assert "plugin" not in next(s for s in signatures(tmp_path / "req.parquet") if s["rule"] == "immediate")

    done = simulplay("synth", "--requests", "req.parquet", "--backend", "tone:hz=330", "--store", "store",
                     "--out", "man.parquet", cwd=tmp_path, site=site)
    assert done.returncode == 0, done.stderr
    assert plugin_entries(tmp_path / "man.parquet", "clause:cap=3") == [f"clause={mine}", f"tone={mine}"]
    assert plugin_entries(tmp_path / "man.parquet", "immediate") == [f"tone={mine}"]

    (tmp_path / "exp.toml").write_text(f'traces = ["{TRACE}"]\na = "eager"\nf = "batched"\n'
                                       'rules = ["immediate", "clause"]\nreference = "immediate"\nout = "run"\n'
                                       '[backend]\nname = "tone"\nper_char = 0.04\n[analysis]\ndraws = 200\n')
    done = simulplay("run", "exp.toml", cwd=tmp_path, site=site)
    assert done.returncode == 0, done.stderr
    assert f"plugin:clause={mine},tone={mine}|version:" in (tmp_path / "run" / "eta.md").read_text()
    assert plugin_entries(tmp_path / "run" / "eta.parquet", "clause:cap=4") == [f"clause={mine}", f"tone={mine}"]

    done = simulplay("sweep", "run", "--rule", "clause:cap=2..3", "--quiet", cwd=tmp_path, site=site)
    assert done.returncode == 0, done.stderr
    assert plugin_entries(tmp_path / "run" / "sweep" / "sweep.parquet", "clause:cap=2") == \
        [f"clause={mine}", f"tone={mine}"]


def test_without_the_plugin_the_names_are_unknown_and_built_in_signatures_name_none(tmp_path):
    done = simulplay("group", TRACE, "--rule", "clause", "--out", "req.parquet", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "simulplay: error: --rule 'clause': unknown grouping rule 'clause' "
        f"(expected {', '.join(RULES.names())})"]
    done = simulplay("group", TRACE, "--rule", "punct", "--out", "req.parquet", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert all("plugin" not in s for s in signatures(tmp_path / "req.parquet"))


def test_a_plugin_file_named_with_plugin_works_without_installing(tmp_path):
    exp = tmp_path / "exp.toml"
    exp.write_text(f'plugins = ["{MODULE}"]\ntraces = ["{TRACE}"]\na = "eager"\nf = "batched"\n'
                   'rules = ["immediate", "clause:cap=2"]\nreference = "immediate"\nout = "run"\n'
                   '[backend]\nname = "tone"\n[analysis]\ndraws = 200\n')
    done = simulplay("group", TRACE, "--rule", "clause:cap=2", "--rule", "immediate", "--out", "req.parquet",
                     "--plugin", MODULE, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    mine = f"clause_plugin@0.1.0/sha256:{SHA}"  # the module's name and __version__
    assert plugin_entries(tmp_path / "req.parquet", "clause:cap=2") == [f"clause={mine}"]
    assert plugin_entries(tmp_path / "req.parquet", "immediate") == []  # built-ins the plugin imported are not its
    done = simulplay("--plugin", MODULE, "synth", "--requests", "req.parquet", "--backend", "tone", "--store",
                     "store", "--out", "man.parquet", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert plugin_entries(tmp_path / "man.parquet", "clause:cap=2") == [f"clause={mine}", f"tone={mine}"]
    done = simulplay("run", exp, cwd=tmp_path)  # the experiment file's plugins = [...]
    assert done.returncode == 0, done.stderr
    assert plugin_entries(tmp_path / "run" / "eta.parquet", "clause:cap=2") == [f"clause={mine}", f"tone={mine}"]


BROKEN = "raise RuntimeError('no licence server')\n"
TAKEN = ("from dataclasses import dataclass\nfrom simulplay.grouping import Rule, register_rule\n\n"
         "@register_rule('punct')\n@dataclass(frozen=True)\nclass Mine(Rule):\n    pass\n")


@pytest.mark.parametrize(("source", "fragment"), [
    (BROKEN, "failed to import (RuntimeError: no licence server) (expected a module importable from sys.path"),
    (TAKEN, "registers a name already taken: grouping rule 'punct' is built into simulplay (expected a name of "
     "its own"),
])
def test_a_plugin_file_that_fails_or_takes_a_built_in_name_is_one_line_exit_2(tmp_path, source, fragment):
    (tmp_path / "mine.py").write_text(source)
    done = simulplay("group", TRACE, "--rule", "punct", "--out", "req.parquet", "--plugin", "mine.py", cwd=tmp_path)
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"simulplay: error: --plugin 'mine.py': {fragment}"), done.stderr
    assert not (tmp_path / "req.parquet").exists()


@pytest.mark.parametrize(("args", "fragment"), [
    (["--plugin", "no_such_plugin_module"], "--plugin 'no_such_plugin_module': failed to import (no module named "
     "'no_such_plugin_module' with a file)"),
    (["--plugin", "missing.py"], "--plugin 'missing.py': no such .py file"),
    (["--plugin", "not a module"], "--plugin 'not a module': is neither a module name nor a .py file"),
    (["--plugin"], "--plugin: needs a value"),
])
def test_bad_plugin_options_are_one_line_exit_2(tmp_path, args, fragment):
    done = simulplay("validate", TRACE, *args, cwd=tmp_path)
    assert done.returncode == 2
    assert len(done.stderr.splitlines()) == 1 and fragment in done.stderr, done.stderr


def test_an_experiment_file_with_a_bad_plugins_key_names_the_file_and_key(tmp_path):
    exp = tmp_path / "exp.toml"
    exp.write_text(f'plugins = "clause_plugin"\ntraces = ["{TRACE}"]\na = "eager"\nf = "batched"\n'
                   'rules = ["immediate"]\nreference = "immediate"\n')
    done = simulplay("run", exp, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"simulplay: error: {exp}, field 'plugins': 'clause_plugin' is not a list of "
                                        "strings (expected a list: a module importable from sys.path (my_rules, "
                                        "pkg.my_rules) or a path to a .py file (./my_rules.py))"]


def test_installed_plugins_that_fail_or_register_nothing_are_one_line_exit_2(tmp_path):
    broken = install(tmp_path / "broken", source=BROKEN)
    done = simulplay("group", TRACE, "--rule", "clause", "--out", "req.parquet", cwd=tmp_path, site=broken)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "simulplay: error: entry point 'clause' of simulplay-clause 0.3.1 (group simulplay.rules): failed to import "
        "(RuntimeError: no licence server) (expected a module importable from sys.path (my_rules, pkg.my_rules) or "
        "a path to a .py file (./my_rules.py))"]

    listed = install(tmp_path / "listed", extra='sentence = "simulplay_clause"\n')  # registers no 'sentence'
    done = simulplay("group", TRACE, "--rule", "sentence", "--out", "req.parquet", cwd=tmp_path, site=listed)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "simulplay: error: entry point 'sentence' of simulplay-clause 0.3.1 (group simulplay.rules): importing "
        "simulplay_clause does not register grouping rule 'sentence' (expected an entry point named after what its "
        "module registers (@register_…(\"sentence\")))"]
