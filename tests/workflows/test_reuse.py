"""A run's derived folders (explore/, report/, sweep/) are reused when their inputs have not
changed, and made again when a table, a setting, the version or one of their files did."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import tests.support.fakes  # noqa: F401 - registers fake-test
from simulplay.core.tables import write_table
from simulplay.workflows import reuse
from simulplay.workflows.experiment import load_experiment
from simulplay.workflows.pipeline import run_experiment
from tests.support.factories import PIPER_BACKEND, experiment_toml, small_trace


def experiment(draws: int, backend: dict | None = None) -> str:
    return experiment_toml(name="reuse", backend=backend,
                           analysis={"draws": draws, "seed": 0, "variants": ["service=zero"]})


def files(folder):
    """Every file of ``folder``: its bytes and its modification time (ns)."""
    return {p.relative_to(folder).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def run(folder, draws=200):
    (folder / "exp.toml").write_text(experiment(draws))
    return run_experiment(load_experiment(folder / "exp.toml"))


@pytest.fixture
def folder(tmp_path):
    small_trace(tmp_path / "trace.jsonl", n_streams=4, n_updates=6)
    return tmp_path


@pytest.mark.slow


def test_a_second_run_keeps_the_explorer_and_the_report_untouched(folder):
    first = run(folder)
    assert first.reused == []
    before = {name: files(folder / "run" / name) for name in ("explore", "report")}
    second = run(folder)
    assert second.synth.stats.synthesized == 0 and second.reused == ["explore/", "report/"]
    for name, old in before.items():  # not rewritten: same bytes, same modification times
        assert files(folder / "run" / name) == old, name


@pytest.mark.slow


def test_a_changed_table_makes_both_again(folder):
    run(folder)
    old = (folder / "run" / "report" / "report.md").read_text()
    assert "draws:200" in old
    again = run(folder, draws=300)  # η's intervals and signatures change
    assert again.reused == []
    assert "draws:300" in (folder / "run" / "report" / "report.md").read_text()


@pytest.mark.slow


def test_a_changed_or_removed_file_of_a_folder_makes_that_folder_again(folder):
    run(folder)
    figure = next((folder / "run" / "report" / "figures").glob("*.png"))
    data = figure.read_bytes()
    figure.write_bytes(data[:-10])  # damaged
    again = run(folder)
    assert again.reused == ["explore/"] and figure.read_bytes() == data
    figure.unlink()
    assert run(folder).reused == ["explore/"] and figure.read_bytes() == data


@pytest.mark.slow


def test_another_version_makes_them_again(folder, monkeypatch):
    run(folder)
    monkeypatch.setattr(reuse, "__version__", "0.0.0-other")
    assert run(folder).reused == []


@pytest.mark.slow


def test_the_command_says_what_it_reused(cli, folder):
    """The `run` command itself (a subprocess can load the fake backend only through the
    tests' plugin, so this uses Piper on two short streams)."""
    small_trace(folder / "trace.jsonl", n_streams=2, n_updates=3)
    (folder / "exp.toml").write_text(experiment(100, {**PIPER_BACKEND, "noise_scale": 0, "noise_w_scale": 0}))
    first = cli("run", folder / "exp.toml", "--quiet", check=True)
    assert "reused" not in first.stdout
    second = cli("run", folder / "exp.toml", "--quiet", check=True)
    assert "reused explore/ and report/ as they were: their inputs (tables, manifests, settings, version) " \
           "are unchanged" in second.stdout


# ---- the digests ------------------------------------------------------------------------

def test_run_json_digest_ignores_the_load_the_timings_and_what_the_run_found_done_only(tmp_path):
    vad = {"variant": "onnx", "inferred": 49, "cached": 0, "inference_s": 2.6}
    record = {"requests": 10, "synthesized": 10, "already_in_store": 0, "failed": 0, "retries": 1,
              "timings_s": {"analysis_s": 1.5}, "machine": {"cpu": "x", "load": [1.0, 0.5, 0.2]},
              "edges_vad": vad, "backends": [{"spec": "piper", "synthesized": 10, "already_in_store": 0}]}
    path = tmp_path / "run.json"
    digests = []
    for change in ({}, {"timings_s": {"analysis_s": 9.0}}, {"machine": {"cpu": "x", "load": [3.0, 2.0, 1.0]}},
                   # the rerun found everything done: in the store, in the VAD cache
                   {"synthesized": 0, "already_in_store": 10, "retries": 0,
                    "backends": [{"spec": "piper", "synthesized": 0, "already_in_store": 10}],
                    "edges_vad": {**vad, "inferred": 0, "cached": 49, "inference_s": 0.0}},
                   {"requests": 11}, {"machine": {"cpu": "y", "load": [1.0, 0.5, 0.2]}}, {"failed": 1},
                   {"edges_vad": {**vad, "variant": "sequence"}}, {"backends": [{"spec": "espeak"}]}):
        path.write_text(json.dumps({**record, **change}))
        digests.append(reuse.digest(path))
    assert digests[0] == digests[1] == digests[2] == digests[3]
    assert len({digests[0], *digests[4:]}) == 6


def test_parquet_digest_ignores_the_machines_load_in_the_metadata_only(tmp_path):
    frame = pd.DataFrame({"talk_id": ["t1", "t2"], "eta_s": [0.5, -0.25]})
    path = tmp_path / "t.parquet"

    def digest(df, load, sig="x"):
        write_table(df, path, [{"table": "t", "rule": sig}] * len(df), kind="t",
                    extra_meta={"machine": {"cpu": "c", "load": load}})
        return reuse.digest(path)

    same = digest(frame, [1.0, 1.0, 1.0])
    assert digest(frame, [2.5, 0.1, 0.0]) == same
    assert digest(frame.assign(eta_s=[0.5, -0.26]), [1.0, 1.0, 1.0]) != same  # one number
    assert digest(frame, [1.0, 1.0, 1.0], sig="y") != same  # the signature
