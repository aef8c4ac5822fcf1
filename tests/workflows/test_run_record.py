"""``run.json``'s settings as objects and back: every experiment of examples/ and the demo
round-trip byte for byte, a real run's whole record too, and a record written before
records had a format is still read (and refused where objects are needed)."""

import json
import re
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from simulplay.core.errors import InputError
from simulplay.core.provenance import file_fingerprint
from simulplay.report.record import RECORD_FORMAT, RunRecord, RunSettings
from simulplay.workflows.experiment import Experiment, demo_experiment, load_experiment, written
from tests.support.factories import PIPER_BACKEND, write_experiment

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.toml"))


def experiments(tmp_path):
    yield from ((p.name, load_experiment(p)) for p in EXAMPLES)
    yield "demo", demo_experiment(tmp_path / "demo")
    yield "demo --backends piper,espeak", demo_experiment(tmp_path / "demo2", backends=("piper", "espeak"),
                                                           piper="durations=fixed", realizations=2)
    content = {"recognizer": "whisper:beam_size=2", "language": "en", "pairs": [["immediate", "timer:w=3"]],
               "timing": True}
    yield "[content]", load_experiment(write_experiment(tmp_path, backend=PIPER_BACKEND, tables={"content": content}))
    quality = {"metrics": ["joins", "dnsmos"], "dnsmos_windows": 2, "conditions": ["punct", "immediate"]}
    yield "[quality]", load_experiment(write_experiment(tmp_path, "quality.toml", backend=PIPER_BACKEND,
                                                        rules=["immediate", "punct"],
                                                        tables={"quality": quality}))


def test_every_example_and_the_demo_round_trip_byte_for_byte(tmp_path):
    assert EXAMPLES, "no experiment in examples/"
    for name, exp in experiments(tmp_path):
        text = json.dumps(exp.to_record(), indent=2)
        again = Experiment.from_record(json.loads(text))
        assert again == exp, name
        assert [written(again, c) for c in (*again.rules, *again.backends, *again.variants)] == \
            [written(exp, c) for c in (*exp.rules, *exp.backends, *exp.variants)], name
        assert json.dumps(again.to_record(), indent=2) == text, name
        assert json.loads(text)["format"] == RECORD_FORMAT


@pytest.mark.slow
def test_a_real_run_json_reads_back_to_the_same_bytes_and_the_same_experiment(tmp_path, monkeypatch):
    """… and the run hands its record and tables to the sweep, the explorer and the report in
    memory (run.json is not read back), with the same result as reading its folder."""
    import simulplay.workflows.sweep as sweep
    import tests.support.fakes  # noqa: F401 - registers fake-test
    from simulplay.report import build_report, write_report
    from simulplay.workflows.pipeline import run_experiment

    path = write_experiment(tmp_path, rules=["immediate", "punct", "timer:w=3"],
                            analysis={"draws": 50, "seed": 0, "variants": ["service=zero", "silent=hold"],
                                      "sweep": ["timer:w=1..2"]})
    exp = load_experiment(path)
    reads, read = [], RunRecord.read
    monkeypatch.setattr(RunRecord, "read", classmethod(lambda cls, p: (reads.append(p), read(p))[1]))
    monkeypatch.setattr(sweep, "read_run", lambda *a, **k: pytest.fail("the sweep read the run folder back"))
    tables, parquet, csv = [], pq.ParquetFile, pd.read_csv  # every table read goes through one of these
    monkeypatch.setattr(pq, "ParquetFile", lambda p, *a, **k: (tables.append(Path(p)), parquet(p, *a, **k))[1])
    monkeypatch.setattr(pd, "read_csv", lambda p, *a, **k: (tables.append(Path(p)), csv(p, *a, **k))[1])
    res = run_experiment(exp)
    assert reads == [] and [p for p in tables if tmp_path / "run" in p.parents] == []
    monkeypatch.undo()
    summary = res.tables[(tmp_path / "run" / "summary.parquet").resolve()]
    assert summary.sha256 == file_fingerprint(tmp_path / "run" / "summary.parquet")
    assert summary.meta["table"] == "playback-summary" and len(summary.frame) == len(res.replay.summary)
    run = tmp_path / "run"
    write_report(build_report(run), run / "report from the folder")
    stamp = lambda p: re.sub(r"at \d{4}-\d\d-\d\d \d\d:\d\d UTC", "", p.read_text(encoding="utf-8"))  # noqa: E731
    for name in ["report.md", *(f"tables/{p.name}" for p in (run / "report" / "tables").glob("*.csv"))]:
        assert stamp(run / "report" / name) == stamp(run / "report from the folder" / name), name
    sweep.sweep_run(run, ["timer:w=1..2"], out=tmp_path / "sweep from the folder")
    for name in ("sweep.csv", "sweep_check.csv"):
        assert (run / "sweep" / name).read_bytes() == (tmp_path / "sweep from the folder" / name).read_bytes(), name
    text = (tmp_path / "run" / "run.json").read_text(encoding="utf-8")
    record = RunRecord.read(tmp_path / "run" / "run.json")
    assert record.to_json() == text
    assert Experiment.from_record(json.loads(text)["experiment"]) == exp
    assert record.settings.rule_texts == ["immediate", "punct", "timer:w=3"]
    assert record.settings.variant_texts == ["service=zero", "silent=hold"]
    assert record.count("requests") > 0 and record.excluded_outputs == []
    assert record.settings.sweep == ("timer:w=1..2",) and (tmp_path / "run" / "sweep").is_dir()  # the parsed grid ran


FLAT = {"name": "old", "traces": ["t.jsonl"], "a": "A", "f": "F", "rules": ["immediate", "punct"],
        "reference": "immediate", "backend": "piper:intra_op_threads=2", "extra_backends": ["espeak:voice=en-us"],
        "store": "runs/store", "realizations": 2, "draws": 300, "seed": 5, "quantile_method": "linear",
        "confidence": 0.9, "variants": ["service=zero"]}


def test_a_record_without_a_format_is_read_from_its_texts():
    s = RunSettings.from_record(FLAT)
    assert s.format == 0 and s.rule_texts == ["immediate", "punct"] and s.variant_texts == ["service=zero"]
    assert s.backend == "piper:intra_op_threads=2" and [b.text for b in s.backends][1] == "espeak:voice=en-us"
    assert (s.bootstrap.draws, s.bootstrap.seed, s.bootstrap.method, s.bootstrap.confidence) == (300, 5, "linear", 0.9)
    assert s.store == Path("runs/store") and s.realizations == 2
    assert s.backend_config().intra_op_threads == 2  # parsed from its text when asked
    with pytest.raises(InputError, match="key 'experiment.format'.*before run records had a format"):
        Experiment.from_record(FLAT)


@pytest.mark.parametrize("data, fragment", [
    ({**FLAT, "format": 99}, "format 99 is not one this version reads"),
    ({k: v for k, v in FLAT.items() if k != "reference"}, "key 'experiment.reference': is missing"),
    ({**FLAT, "format": 1}, "is not a run record this version reads"),
])
def test_a_record_this_version_cannot_read_is_one_line(data, fragment):
    with pytest.raises(InputError) as e:
        RunSettings.from_record(data, source="r/run.json")
    assert len(str(e.value).splitlines()) == 1 and fragment in str(e.value) and "r/run.json" in str(e.value)


def test_the_recognizer_is_parsed_once_when_the_experiment_loads(tmp_path):
    from simulplay.recognizers import parse_recognizer

    content = {"recognizer": "whisper:beam_size=2", "language": "en"}
    exp = load_experiment(write_experiment(tmp_path, backend=PIPER_BACKEND, tables={"content": content}))
    assert exp.content.config == parse_recognizer("whisper:beam_size=2") and exp.content.config.beam_size == 2
    assert exp.content.recognizer_config("exp.toml") is exp.content.config  # not parsed again
    record = exp.to_record()["content"]["recognizer"]
    assert record["written"] == "whisper:beam_size=2" and record["config"]["beam_size"] == 2


def test_a_plugin_config_this_process_does_not_know_is_read_as_its_text(tmp_path):
    """A report made without the plugin a run used reads the run's settings as written; an
    experiment rebuilt from it needs the plugin loaded first."""
    record = json.loads(json.dumps(load_experiment(write_experiment(tmp_path, backend=PIPER_BACKEND)).to_record()))
    record["rules"][1] = {"written": "clause:n=2", "config": {"rule": "clause", "n": 2}}  # a plugin's rule
    settings = RunSettings.from_record(record)
    assert settings.rule_texts == ["immediate", "clause:n=2"] and settings.rules[1].config is None
    assert json.dumps(settings.to_record()) == json.dumps(record)  # written back as it was recorded
    with pytest.raises(InputError, match="names clause:n=2, which no loaded module registers"):
        Experiment.from_record(record)


def test_the_sweeps_commit_families_round_trip_and_need_a_sweep(tmp_path):
    exp = load_experiment(write_experiment(tmp_path, backend=PIPER_BACKEND, analysis={"sweep": ["timer:w=1..2"],
                                                               "sweep_commit": ["stable:k=1..4", "mask:k=0..6"]}))
    assert [g.text for g in exp.sweep_commit] == ["stable:k=1..4", "mask:k=0..6"]
    assert [len(g.points) for g in exp.sweep_commit] == [4, 7]
    text = json.dumps(exp.to_record(), indent=2)
    assert json.loads(text)["sweep_commit"] == ["stable:k=1..4", "mask:k=0..6"]
    assert Experiment.from_record(json.loads(text)) == exp
    with pytest.raises(InputError, match="key 'analysis.sweep_commit'.*needs a sweep"):
        load_experiment(write_experiment(tmp_path, backend=PIPER_BACKEND, analysis={"sweep_commit": ["stable:k=1"]}))
