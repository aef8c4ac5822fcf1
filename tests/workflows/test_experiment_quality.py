"""An experiment file's ``[quality]`` table: parsed once into the run's quality settings,
each bad value refused on one line naming its key, and a run that scores with it."""

from __future__ import annotations

import pandas as pd
import pytest

import tests.support.fakes  # noqa: F401 - registers fake-test
from simulplay.core.errors import InputError
from simulplay.workflows.experiment import load_experiment
from simulplay.workflows.quality import QualitySettings
from tests.support.factories import write_experiment


@pytest.mark.parametrize("table,expected", [
    ({"metrics": ["joins", "dnsmos"], "dnsmos_windows": 1, "conditions": ["timer:w=3", "immediate"]},
     QualitySettings(metrics=("dnsmos", "joins"), dnsmos_windows=1, conditions=("timer:w=3", "immediate"))),
    ({}, QualitySettings(metrics=("dnsmos", "similarity", "joins"), dnsmos_windows=None, conditions=())),
    ({"metrics": ["joins"]}, QualitySettings(metrics=("joins",), dnsmos_windows=None, conditions=())),
])
def test_the_quality_table_becomes_the_runs_quality_settings(tmp_path, table, expected):
    exp = load_experiment(write_experiment(tmp_path, tables={"quality": table}))
    assert exp.quality == expected
    assert load_experiment(write_experiment(tmp_path)).quality is None  # no table: not scored


@pytest.mark.parametrize("table,fragments", [
    ({"metrics": ["dnsmos", "mos"]}, ["key 'quality.metrics'", "names no metric mos", '"dnsmos", "similarity"']),
    ({"metrics": []}, ["key 'quality.metrics'", "is empty"]),
    ({"metrics": "joins"}, ["key 'quality.metrics'", "'joins' is not a list of strings"]),
    ({"dnsmos_windows": 0}, ["key 'quality.dnsmos_windows'", "0 is not ≥ 1", "an integer ≥ 1"]),
    ({"dnsmos_windows": 1.5}, ["key 'quality.dnsmos_windows'", "1.5 is not an integer"]),
    ({"metrics": ["joins"], "dnsmos_windows": 1}, ["key 'quality.dnsmos_windows'", "leave out dnsmos"]),
    ({"conditions": ["immediate", "punct"]}, ["key 'quality.conditions'", "is not a condition of",
                                              "expected immediate, timer:w=3"]),
    ({"conditions": ["timer:w=3"]}, ["key 'quality.conditions'", "leave out the reference immediate"]),
    ({"conditions": [3]}, ["key 'quality.conditions'", "[3] is not a list of strings"]),
    ({"metric": ["joins"]}, ["key 'quality.metric'", "is not a known key", "quality.metrics, quality.dnsmos_windows"]),
])
def test_a_bad_quality_value_is_one_line_naming_the_key(tmp_path, table, fragments):
    path = write_experiment(tmp_path, tables={"quality": table})
    with pytest.raises(InputError) as e:
        load_experiment(path)
    lines = str(e.value).splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{path}, key 'quality."), lines
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def test_a_run_scores_the_joins_its_file_asks_for_and_reports_table_19(tmp_path):
    from simulplay.core.tables import read_table
    from simulplay.workflows.pipeline import run_experiment

    exp = load_experiment(write_experiment(tmp_path, tables={"quality": {"metrics": ["joins"]}}))
    res = run_experiment(exp)
    run = tmp_path / "run"
    assert res.quality is not None and (run / "quality.intervals.parquet").is_file()
    outputs, _ = read_table(run / "quality.parquet")
    assert len(outputs) == 8 and outputs["n_joins"].notna().all()  # 4 streams × 2 rules, joins on each
    assert "dnsmos_ovrl" not in outputs
    intervals = pd.read_csv(run / "quality.intervals.csv")
    assert "timer:w=3 − immediate" in set(intervals.loc[intervals["metric"] == "joins_per_min", "condition"])
    report = (run / "report" / "report.md").read_text(encoding="utf-8")
    assert "### Table 19." in report and "joins_per_min" in report[report.index("### Table 19."):]
