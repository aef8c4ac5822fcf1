"""The report says where its numbers were measured: machine and clock verdict, with the
machine's load while the requests were measured (never the load when the run or the report
was made), and when the report was made."""

from __future__ import annotations

import json
import re

import pytest

from simulplay.core.tables import read_table, write_table
from simulplay.report import build_report
from simulplay.report.build import markdown_report
from tests.support.report_runs import make_run

MACHINE = {"host": "h", "cpu": "Test CPU 9000", "cores": 2, "usable_cores": 2, "platform": "Linux",
           "load": [0.1, 0.2, 0.3], "load_at_end": [0.2, 0.2, 0.3]}
CLOCK = {"verdict": "clock: contended, 3 requests", "measured": 40, "unmeasured": 0, "contended": 3,
         "criterion": "wait", "probes": [{"service_s": 0.5}, {"service_s": 0.6}]}
# worked out by hand: 3 of 40 is 7.5 %; probe spread 0.6 / 0.5 = 1.2
SAID = ("Service times were measured on Test CPU 9000, 2 cores (2 usable), host h; "
        "clock: contended, 3 requests (3 of 40 measured requests contended (7.5 %); probe spread 1.200 over 2 "
        "probes). They feed readiness, idle time and η, so a run on another machine, or on a busy one, gives other "
        "numbers")


@pytest.fixture
def run(tmp_path):
    return make_run(tmp_path / "run", 3)


def overview(report) -> dict[str, str]:
    frame = report.table("table00_run").frame
    return dict(zip(frame["item"], frame["value"]))


@pytest.mark.slow


def test_the_report_names_the_machine_and_the_clock_verdict_from_run_json(run):
    record = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**record, "machine": MACHINE, "clock": CLOCK}))
    report = build_report(run)
    assert SAID in markdown_report(report)
    rows = overview(report)
    assert rows["machine"] == "Test CPU 9000, 2 cores (2 usable), host h"  # no load of when it was made
    assert rows["clock"].startswith("clock: contended, 3 requests (3 of 40")


@pytest.mark.slow


def test_without_run_json_fields_the_manifest_metadata_says_it(run):
    df, meta = read_table(run / "manifest.parquet")
    common = meta["signature"]
    write_table(df, run / "manifest.parquet", [{**common, "rule": c} for c in df["condition"]], kind="manifest",
                extra_meta={"signature": common, "machine": MACHINE, "clock": CLOCK})
    assert SAID in markdown_report(build_report(run))


@pytest.mark.slow


def test_a_run_that_recorded_neither_says_so(run):
    report = build_report(run)
    assert "do not record the machine or the clock check" in markdown_report(report)
    assert overview(report)["clock"] == "clock: not recorded"


@pytest.mark.slow
def test_the_load_shown_is_the_one_of_the_measurement_and_the_report_says_when_it_was_made(run):
    df, meta = read_table(run / "manifest.parquet")
    assert "audio_key" not in df  # a hand-made manifest: every row is its own request
    # by hand: loads [0.5, 3.0, 1.0, 1.0, …]: median 1.00, max 3.00
    df["load1"] = [0.5, 3.0] + [1.0] * (len(df) - 2)
    keys = df.index
    common = meta["signature"]
    write_table(df, run / "manifest.parquet", [{**common, "rule": c} for c in df["condition"]], kind="manifest",
                extra_meta={"signature": common})
    record = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**record, "machine": {**MACHINE, "load": [16.83, 14.79, 11.04]},
                                              "clock": CLOCK}))
    report = build_report(run)
    text = markdown_report(report)
    assert "16.83" not in text  # the load when this run (or report) was made
    want = f"median 1.00, max 3.00 ({len(keys)} requests)"
    assert overview(report)["machine"] == ("Test CPU 9000, 2 cores (2 usable), host h; 1-minute load while its "
                                           f"requests were measured: {want}")
    assert re.search(r"Made by simulplay \S+ at 20\d\d-\d\d-\d\d \d\d:\d\d UTC\.", text)
