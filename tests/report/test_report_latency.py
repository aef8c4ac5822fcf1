"""SimulEval speech metrics and text latency in `simulplay run` and in the report."""

import pandas as pd
import pytest

from simulplay.analysis.latency_table import LATENCY_COLUMNS, latency_table
from simulplay.core.tables import read_table, write_table
from simulplay.manifest import read_manifest
from simulplay.report import build_report, write_report
from tests.support import fakes  # noqa: F401  (registers the fake backend)
from tests.support.factories import experiment_toml, small_trace
from tests.support.report_runs import make_run

EXPERIMENT = experiment_toml(analysis={"draws": 50})


@pytest.mark.slow


def test_run_writes_the_latency_table_and_the_report_shows_its_means(tmp_path):
    from simulplay.workflows.experiment import load_experiment
    from simulplay.workflows.pipeline import run_experiment

    small_trace(tmp_path / "trace.jsonl", n_streams=4, n_updates=6)
    (tmp_path / "exp.toml").write_text(EXPERIMENT)
    run_experiment(load_experiment(tmp_path / "exp.toml"))
    out = tmp_path / "run"
    table, meta = read_table(out / "latency.parquet")
    man, _ = read_manifest(out / "manifest.parquet")
    want = latency_table(man)
    pd.testing.assert_frame_equal(table, want.table)
    assert meta["table"] == "latency"
    assert "service:zero,_ca=measured" in pd.read_csv(out / "latency.csv")["signature"][0]
    shown = pd.read_csv(out / "report" / "tables" / "table01b_simuleval.csv")
    row = shown[(shown["system"] == "A") & (shown["condition"] == "timer:w=3")].iloc[0]
    mine = want.table[(want.table["system"] == "A") & (want.table["condition"] == "timer:w=3")]
    assert row["end_offset_ms_ca"] == pytest.approx(mine["end_offset_ms_ca"].mean())
    assert row["n_talks"] == 2
    summary = pd.read_parquet(out / "summary.parquet")
    s = summary[(summary["system"] == "A") & (summary["condition"] == "timer:w=3")]
    # CA EndOffset is L in ms (up to float): the table puts the two side by side
    assert row["offset_s"] == pytest.approx(s["offset_s"].mean()) == pytest.approx(row["end_offset_ms_ca"] / 1000)
    assert "Table 1b" in (out / "report" / "report.md").read_text()


@pytest.mark.slow


def test_step_by_step_report_recognises_latency_and_text_latency_tables(tmp_path):
    run = make_run(tmp_path / "run", 3)
    steps = tmp_path / "steps"
    steps.mkdir()
    for name in ("manifest.parquet", "summary.parquet", "eta.parquet"):
        (steps / name).write_bytes((run / name).read_bytes())
    man, meta = read_manifest(run / "manifest.parquet")
    lat = latency_table(man, upstream=meta.get("signature"))
    for ext in (".parquet", ".csv"):  # the CSV is the Parquet table's copy, and not used
        write_table(lat.table, steps / f"whatever-name{ext}", lat.signatures, kind="latency")
    compare = pd.DataFrame([{"condition": c, "measure": "offset_s", "n_talks": 3, "mean_a": 1.0, "mean_f": 2.0,
                             "mean_a_minus_f": -1.0, "n_a_lower": 3, "n_a_higher": 0}
                            for c in ("immediate", "timer:w=4")])
    write_table(compare, steps / "tl.parquet", [{"table": "text-latency-compare"}] * 2, kind="text-latency-compare")
    report = build_report(steps)
    keys = [t.key for t in report.tables]
    assert "table01b_simuleval" in keys and "table01c_text_latency" in keys
    assert keys.index("table01b_simuleval") < keys.index("table02_eta")
    uses = {t.path.name: t.use for t in report.run.files}
    assert uses["whatever-name.parquet"] == "Table 1b" and uses["tl.parquet"] == "Table 1c"
    assert uses["whatever-name.csv"] == f"not used: the same table as {steps / 'whatever-name.parquet'}"
    b = report.table("table01b_simuleval").frame
    assert list(b.columns[:7]) == ["backend", "realization", "system", "condition", "n_talks", "audio_s", "idle_s"]
    assert set(LATENCY_COLUMNS) <= set(b.columns)
    write_report(report, tmp_path / "r")
    html = (tmp_path / "r" / "report.html").read_text()
    assert "StartOffset CA (ms)" in html and "Text latency beside speech completion" in html
