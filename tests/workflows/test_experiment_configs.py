"""An experiment is parsed once, when it is loaded: its rules, backend configs, replay
variants, bootstrap and executor are config objects that rebuild themselves from
``to_dict()``, and the pipeline runs from them without parsing a string again."""

import dataclasses
import json

import pytest

from simulplay.analysis.bootstrap import Bootstrap
from simulplay.backends import BACKENDS, backend_from_dict
from simulplay.grouping.policies import Backlog, Pacer
from simulplay.grouping.registry import RULES
from simulplay.grouping.rules import Immediate, Punct, Timer, Words
from simulplay.sim.servers import Servers
from simulplay.sim.variants import (
    RELEASES,
    SERVICE_MODELS,
    ChunkRelease,
    Fit,
    Measured,
    ReplayVariant,
    RequestRelease,
    Scale,
    Zero,
    parse_variant,
    variant_from_dict,
)
from simulplay.synthesis.executors import ExecutorSpec, executor_from_dict
from simulplay.workflows.experiment import Experiment, load_experiment
from tests.support.factories import experiment_toml, small_trace
from tests.support.fakes import FakeSettings

TOML = experiment_toml(rules=["immediate", "punct", "timer:w=3"], executor="ray:auto", workers=3, worker_cpus=2,
                      retries=4, backend={"name": "fake-test", "delay": 0.5},
                      analysis={"draws": 200, "seed": 0, "bootstrap": "paper",
                                "variants": ["release=chunk", "service=scale=0.50", "silent=hold"]})


@pytest.fixture
def folder(tmp_path):
    small_trace(tmp_path / "trace.jsonl", n_streams=4, n_updates=6)
    return tmp_path


def test_an_experiment_file_loads_into_config_objects(folder):
    (folder / "exp.toml").write_text(TOML)
    exp = load_experiment(folder / "exp.toml")
    assert exp.rules == (Immediate(), Punct(cap=2, min_words=3), Timer(w=3))
    assert exp.backends == (FakeSettings(delay=0.5),)
    assert exp.variants == (ReplayVariant(ChunkRelease(), Measured()), ReplayVariant(RequestRelease(), Scale(0.5)),
                            ReplayVariant(RequestRelease(), Measured(), "hold"))
    assert exp.bootstrap == Bootstrap(draws=200, seed=0, method="order:int(nq)", rng="python")
    assert exp.executor == ExecutorSpec("ray", 3, "auto", 2.0, 0.0, 4)


def test_the_run_record_writes_each_config_as_the_file_does_and_as_its_to_dict(folder):
    (folder / "exp.toml").write_text(TOML)
    record = load_experiment(folder / "exp.toml").to_record()
    assert record["format"] == 1
    assert [r["written"] for r in record["rules"]] == ["immediate", "punct", "timer:w=3"]  # as written, not canonical
    assert record["rules"][2]["config"] == {"rule": "timer", "w": 3.0}
    assert [b["written"] for b in record["backends"]] == ["fake-test:delay=0.5"]
    assert record["backends"][0]["config"]["backend"] == "fake-test" and record["backends"][0]["config"]["delay"] == 0.5
    assert [v["written"] for v in record["variants"]] == ["release=chunk", "service=scale=0.50", "silent=hold"]
    assert record["variants"][1]["config"] == {"release": {"release": "request"},
                                               "service": {"service": "scale", "factor": 0.5}, "silent": None}
    assert record["executor"] == {"executor": "ray:auto", "workers": 3, "worker_cpus": 2.0, "worker_gpus": 0.0,
                                  "retries": 4}
    assert record["bootstrap"] == {"draws": 200, "seed": 0, "method": "order:int(nq)", "confidence": 0.95,
                                   "rng": "python", "talk_order": "sorted", "tie_tolerance": 1e-6}
    assert list(record)[:8] == ["format", "name", "source", "traces", "a", "f", "rules", "reference"]


def test_a_variant_listed_twice_is_refused(folder, cli):
    (folder / "exp.toml").write_text(TOML.replace('"silent=hold"', '"service=scale=0.5"'))
    proc = cli("run", folder / "exp.toml", "--quiet")
    assert proc.returncode != 0 and "key 'analysis.variants'" in proc.stderr
    assert "'service=scale=0.5' repeats a variant listed before it" in proc.stderr


# ---- every config rebuilds itself from to_dict() ----------------------------------

RULE_EXAMPLES = [Immediate(), Timer(w=2.5), Punct(cap=3, min_words=1, unit="char"), Words(n=5, cap=1.5),
                 Backlog(below=0.5, max_chars=120, min_words=2), Pacer(min_audio_buffer=3, max_text_length=200),
                 *(RULES.get(name, "test")() for name in ("livekit", "livekit-pacer", "pipecat", "realtimetts"))]
#: settings that the backends without usable defaults require (never loaded: nothing is read)
BACKEND_SETTINGS = {"cosyvoice": {"prompt_text": "hello", "prompt_wav": "/p.wav", "speed": 1.25},
                    "http": {"base_url": "http://127.0.0.1:8000/v1", "voice": "alloy", "retries": 2},
                    "xtts": {"model_dir": "/xtts", "language": "en", "temperature": 0.5},
                    "piper": {"length_scale": 1.1, "deterministic": True, "intra_op_threads": 2},
                    "espeak": {"voice": "de", "rate": 150}, "fake-test": {"delay": 0.25, "gate_n": 3}}


def test_the_examples_cover_every_registered_rule_and_backend():
    assert sorted(r.name for r in RULE_EXAMPLES) == RULES.names()
    assert set(BACKENDS.names()) <= set(BACKEND_SETTINGS)


@pytest.mark.parametrize("rule", RULE_EXAMPLES, ids=lambda r: r.name)
def test_a_rule_rebuilds_from_its_dict(rule):
    again = RULES.from_dict(rule.to_dict(), key="rule")
    assert again == rule and type(again) is type(rule) and again.to_dict()["rule"] == rule.name


@pytest.mark.parametrize("name", sorted(BACKEND_SETTINGS))
def test_a_backend_config_rebuilds_from_its_dict(name):
    config = BACKENDS.get(name, "test")(**BACKEND_SETTINGS[name])
    data = config.to_dict()
    again = backend_from_dict(json.loads(json.dumps(data)))  # through JSON, as a saved config travels
    assert data["backend"] == name and again == config and type(again) is type(config)


VARIANTS = [ReplayVariant(RELEASES.get(r, "test")(), Measured()) for r in RELEASES.names()] + \
    [ReplayVariant(RequestRelease(), m) for m in (Measured(), Zero(), Scale(0.5), Fit(), Servers(2, "talk"),
                                                  Servers(3, "panel", curve="1:0.5;4:1.0"))] + \
    [ReplayVariant(RequestRelease(), Measured(), s) for s in ("hold", "skip")]


def test_the_variants_cover_every_registered_release_and_service_model():
    assert {v.release.name for v in VARIANTS} == set(RELEASES.names())
    assert {v.service.name for v in VARIANTS} == set(SERVICE_MODELS.names())


@pytest.mark.parametrize("variant", VARIANTS, ids=repr)
def test_a_replay_variant_rebuilds_from_its_dict_and_its_text(variant):
    again = variant_from_dict(json.loads(json.dumps(variant.to_dict())))
    assert again == variant and type(again.service) is type(variant.service)
    assert parse_variant(variant.spec(), source="test") == variant


def test_a_variant_that_changes_two_things_has_no_text():
    with pytest.raises(ValueError, match="more than one"):
        ReplayVariant(ChunkRelease(), Zero()).spec()


@pytest.mark.parametrize("boot", [Bootstrap(), Bootstrap(draws=7, seed=0, method="linear", confidence=0.9,
                                                         rng="python", talk_order="given")])
def test_a_bootstrap_rebuilds_from_its_dict(boot):
    assert Bootstrap.from_dict(json.loads(json.dumps(boot.to_dict()))) == boot


@pytest.mark.parametrize("spec", [ExecutorSpec(), ExecutorSpec("serial", None, None, 2.0, 0.0, 5),
                                  ExecutorSpec("process", 3, None, 1.0, 0.0, 2),
                                  ExecutorSpec("ray", 4, "auto", 0.5, 1.0, 1), ExecutorSpec("ray", None, None)])
def test_an_executor_spec_rebuilds_from_its_dict(spec):
    assert executor_from_dict(json.loads(json.dumps(spec.to_dict()))) == spec


# ---- the pipeline parses nothing --------------------------------------------------

def test_the_pipeline_runs_from_config_objects_and_parses_no_spec(tmp_path, monkeypatch):
    import simulplay.report.build
    import simulplay.report.explore  # noqa: F401 - imported before the patch below, which a module imported
    import simulplay.sim.variants  # during it would keep (it binds the parsers by name) for later tests
    import simulplay.synthesis.executors
    from simulplay.workflows.pipeline import run_experiment

    def refuse(*args, **kwargs):
        raise AssertionError(f"parsed again: {args}")

    monkeypatch.setattr(BACKENDS, "parse", refuse)
    monkeypatch.setattr(simulplay.sim.variants, "parse_variant", refuse)
    monkeypatch.setattr(simulplay.sim.variants, "parse_service", refuse)
    monkeypatch.setattr(simulplay.synthesis.executors, "parse_executor", refuse)
    small_trace(tmp_path / "trace.jsonl", n_streams=4, n_updates=6)
    exp = Experiment(name="tiny", traces=(tmp_path / "trace.jsonl",), a="A", f="F",
                     rules=(Immediate(), Punct(cap=2, min_words=3)), reference="immediate",
                     backends=(FakeSettings(delay=0.0),), out=tmp_path / "run", store=tmp_path / "store",
                     bootstrap=Bootstrap(draws=50, seed=3), variants=(ReplayVariant(RequestRelease(), Scale(2.0)),))
    res = run_experiment(exp)
    assert list(res.variants) == ["service=scale=2"] and (tmp_path / "run" / "eta.service-scale-2.csv").is_file()
    assert "boot_seed:3|" in (tmp_path / "run" / "eta.csv").read_text()
    record = json.loads((tmp_path / "run" / "run.json").read_text())["experiment"]
    assert [r["written"] for r in record["rules"]] == ["immediate", "punct:cap=2,min_words=3"]  # canonical: no text
    assert record["backends"][0]["written"].startswith("fake-test:") and record["bootstrap"]["draws"] == 50
    assert record["executor"]["executor"] == "serial"
    assert dataclasses.replace(exp, source="elsewhere") == exp  # where it came from is no part of it


def test_the_sweep_grids_are_parsed_once_when_the_experiment_loads(folder, monkeypatch):
    import simulplay.grouping.grid as grid
    from simulplay.workflows.sweep import check_sweep_args

    (folder / "exp.toml").write_text(TOML.replace('seed = 0', 'seed = 0\nsweep = ["timer:w=1..3", "words:n=4,8"]'))
    exp = load_experiment(folder / "exp.toml")
    assert [g.text for g in exp.sweep] == ["timer:w=1..3", "words:n=4,8"]
    assert [len(g.points) for g in exp.sweep] == [3, 2]  # w = 1, 2, 3; n = 4, 8

    def refuse(*args, **kwargs):
        raise AssertionError(f"parsed again: {args}")

    monkeypatch.setattr(grid, "parse_grids", refuse)
    monkeypatch.setattr("simulplay.workflows.sweep.parse_grids", refuse)
    assert check_sweep_args(list(exp.sweep), by="L", confirm=0) == list(exp.sweep)
    assert [s for s in exp.to_record()["sweep"]] == ["timer:w=1..3", "words:n=4,8"]
