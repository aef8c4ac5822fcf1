"""An experiment with commit policies (the key ``commit``): outputs keyed POLICY+RULE, η per
condition, the listener's table, and a run record that reads back."""

import json

import pandas as pd
import pytest

from simulplay.grouping import parse_rule
from simulplay.grouping.registry import rule_from_dict
from simulplay.report.record import RunSettings
from simulplay.workflows.experiment import experiment_from_dict
from simulplay.workflows.pipeline import run_experiment
from tests.grouping.test_commit_factor import REVISING
from tests.support import fakes  # noqa: F401  (registers the fake backend)

pytestmark = pytest.mark.slow  # a real run with the fake backend: a few seconds


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("runc")
    second = [{**s, "talk_id": "t2"} for s in REVISING]
    (folder / "t.jsonl").write_text("".join(json.dumps(s) + "\n" for s in REVISING + second), encoding="utf-8")
    exp = experiment_from_dict({
        "traces": ["t.jsonl"], "a": "A", "f": "F", "rules": ["immediate"], "commit": ["eager", "stable:k=2"],
        "reference": "immediate", "out": "run", "backend": {"name": "fake-test"},
        "analysis": {"draws": 100, "seed": 0, "sweep": ["immediate"], "sweep_commit": ["mask:k=0..1"]}},
        folder / "exp.toml")
    return exp, run_experiment(exp)


def test_conditions_are_policy_then_rule_and_eta_compares_under_each(run):
    exp, _ = run
    assert [r.canonical() for r in exp.rules] == ["immediate", "stable:k=2+immediate"]
    eta = pd.read_csv(exp.out / "eta.csv")
    assert set(eta["condition"]) == {"stable:k=2+immediate"}  # against the reference, eager+immediate


def test_the_run_writes_what_the_listener_got(run):
    exp, _ = run
    spoken = pd.read_csv(exp.out / "spoken.csv")
    a = spoken[spoken["system"] == "A"].set_index(["commit", "talk_id"])
    # eager speaks "Das ist gut." and ", weil" that the translator takes back ("." cut into, ", weil")
    assert a.loc[("eager", "t1"), "spoken_then_retracted"] == 3
    assert a.loc[("stable:k=2", "t1"), "spoken_then_retracted"] == 0


def test_the_run_record_reads_back_with_its_policies(run):
    exp, _ = run
    record = json.loads((exp.out / "run.json").read_text(encoding="utf-8"))["experiment"]
    settings = RunSettings.from_record(record, source="run.json")
    assert [w.config.canonical() for w in settings.rules] == ["immediate", "stable:k=2+immediate"]
    assert settings.commit == ("eager", "stable:k=2")


def test_a_saved_rule_after_a_policy_rebuilds():
    r = parse_rule("hold:t=0.5+punct:min_words=2")
    assert rule_from_dict(r.to_dict()) == r and rule_from_dict(parse_rule("punct").to_dict()) == parse_rule("punct")


def test_the_report_shows_what_the_listener_got(run):
    exp, _ = run
    report = (exp.out / "report" / "report.md").read_text(encoding="utf-8")
    assert "Table 8c" in report and "What the listener got under each commit policy" in report


def test_the_runs_sweep_crosses_its_commit_families(run):
    exp, _ = run
    sweep = pd.read_csv(exp.out / "sweep" / "sweep.csv", comment="#")
    assert sweep["rule"].tolist() == ["mask:k=0+immediate", "mask:k=1+immediate"]
    # mask:k=0 speaks everything as it comes: t1's A takes back 3 spoken words, as eager does (twice: two talks)
    assert sweep["spoken_then_retracted_a"].tolist()[0] == 6
