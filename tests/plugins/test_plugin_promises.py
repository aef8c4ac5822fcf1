"""What docs/plugins.md promises, in real processes: a plugin rule that raises is one line
naming the rule, the plugin's file and line and the exception (exit code 2, nothing
written); a manifest made with a plugin names it in the signatures of `replay`, `eta` and
`report` run without `--plugin`; `--plugin MODULE` finds a module in the current folder
from the `simulplay` console script too (whose own path starts at its bin/ folder)."""

from __future__ import annotations

import os
import shutil
import subprocess as sp
import sys
from pathlib import Path

import pytest

from tests.plugins.test_plugins import MODULE, SHA, TRACE, plugin_entries, simulplay
from tests.support.cli import ROOT

BOOM = '''from dataclasses import dataclass

from simulplay.grouping import Rule, register_rule


@register_rule("boom")
@dataclass(frozen=True)
class Boom(Rule):
    def group(self, stream):
        words = {}
        return words["clause"]
'''


def written(folder):
    """The folder's entries, less the bytecode Python caches for the imported plugin."""
    return sorted(p for p in folder.iterdir() if p.name != "__pycache__")


def test_a_plugin_rule_that_raises_is_one_line_naming_rule_file_and_line(tmp_path):
    plugin = tmp_path / "boom_rules.py"
    plugin.write_text(BOOM)
    before = written(tmp_path)
    done = simulplay("group", TRACE, "--rule", "boom", "--out", "req.parquet", "--plugin", plugin, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"simulplay: error: rule 'boom' ({plugin}, line 11): group() of talk walkable-city, system eager raised "
        "KeyError: 'clause' (expected a rule whose group(stream) returns the stream's groups)"]
    assert written(tmp_path) == before  # nothing written
    done = simulplay("synth", TRACE, "--rule", "immediate", "--rule", "boom", "--backend", "espeak", "--store",
                     "store", "--out", "man.parquet", "--plugin", plugin, cwd=tmp_path)
    assert done.returncode == 2 and "rule 'boom' (" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "man.parquet").exists() and not list((tmp_path / "store").rglob("*.flac"))


@pytest.mark.slow  # group, synth (a tone backend), replay, eta and report in five processes (≈ 15 s)
def test_a_manifest_made_with_a_plugin_names_it_downstream_without_the_plugin(tmp_path):
    mine = f"clause_plugin@0.1.0/sha256:{SHA}"  # the module's name and __version__, its file's SHA-256
    done = simulplay("synth", TRACE, "--rule", "clause:cap=2", "--rule", "immediate", "--backend", "tone",
                     "--store", "store", "--out", "man.parquet", "--plugin", MODULE, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert plugin_entries(tmp_path / "man.parquet", "clause:cap=2") == [f"clause={mine}", f"tone={mine}"]
    done = simulplay("replay", "man.parquet", "--out", "summary.parquet", cwd=tmp_path)  # no --plugin from here on
    assert done.returncode == 0, done.stderr
    assert f"clause={mine}" in plugin_entries(tmp_path / "summary.parquet", "clause:cap=2")
    assert f"clause={mine}" not in plugin_entries(tmp_path / "summary.parquet", "immediate")
    done = simulplay("eta", "summary.parquet", "--a", "eager", "--f", "batched", "--reference", "immediate",
                     "--out", "eta.parquet", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"clause={mine}" in plugin_entries(tmp_path / "eta.parquet", "clause:cap=2")
    done = simulplay("report", "man.parquet", "summary.parquet", "eta.parquet", "--out", "rep", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"clause={mine}" in (tmp_path / "rep" / "report.md").read_text(encoding="utf-8")


def test_plugin_by_module_name_from_its_own_folder_with_the_console_script(tmp_path):
    shutil.copy(MODULE, tmp_path / "clause_plugin.py")
    script = Path(sys.executable).with_name("simulplay")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # this checkout's code; the current folder is not on it
    done = sp.run([str(script), "--plugin", "clause_plugin", "group", str(TRACE), "--rule", "clause:cap=2",
                   "--out", "req.parquet"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert plugin_entries(tmp_path / "req.parquet", "clause:cap=2") == [f"clause=clause_plugin@0.1.0/sha256:{SHA}"]
