"""The report's noise tables (issues 16 items 3–4, 18 item 2): η's spread across
realizations beside its bootstrap interval, each talk's η per realization, and η under the
modelled clock. Expected values are recomputed here with NumPy from the η tables the run
folder holds (the files, not the report's code)."""

import numpy as np
import pandas as pd
import pytest

from simulplay.report import build_report, write_report
from tests.support.report_runs import make_run

# a module fixture of real runs takes seconds: every test here counts as slow (make test-fast leaves them out)
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def run3(tmp_path_factory):
    return make_run(tmp_path_factory.mktemp("run3r"), 4, draws=40, realizations=3, services=("zero", "fit"))


@pytest.fixture(scope="module")
def report(run3):
    return build_report(run3)


def test_spread_across_realizations_beside_the_interval(report, run3):
    eta = pd.read_parquet(run3 / "eta.parquet")
    per_talk = pd.read_csv(run3 / "eta_per_talk.csv")
    t = report.table("realizations_eta").frame.set_index("condition")
    assert len(eta) == 3 * eta["condition"].nunique() > 0 and sorted(t.index) == sorted(eta["condition"].unique())
    for cond, g in eta.groupby("condition"):
        values = g["eta_s"].to_numpy()
        assert t.loc[cond, "n_realizations"] == 3
        assert t.loc[cond, "eta_range_s"] == pytest.approx(values.max() - values.min())
        assert t.loc[cond, "eta_mean_s"] == pytest.approx(values.mean())
        assert t.loc[cond, "ci_width_mean_s"] == pytest.approx(np.mean(g["ci_high_s"] - g["ci_low_s"]))
        talks = per_talk[per_talk["condition"] == cond].groupby("talk_id")["eta_s"]
        sds = {k: np.std(v.to_numpy(), ddof=1) for k, v in talks}
        ranges = {k: np.ptp(v.to_numpy()) for k, v in talks}
        assert t.loc[cond, "median_talk_sd_s"] == pytest.approx(np.median(list(sds.values())))
        assert t.loc[cond, "max_talk_sd_s"] == pytest.approx(max(sds.values()))
        assert t.loc[cond, "widest_talk"] == max(ranges, key=ranges.get)


def test_each_talk_per_realization(report, run3):
    per_talk = pd.read_csv(run3 / "eta_per_talk.csv")
    t = report.table("realizations_talks").frame
    row = t[(t["condition"] == "timer:w=4") & (t["talk_id"] == "talk01")].iloc[0]
    mine = per_talk[(per_talk["condition"] == "timer:w=4") & (per_talk["talk_id"] == "talk01")].sort_values(
        "realization")
    assert [row[f"eta_s[r={r}]"] for r in range(3)] == pytest.approx(mine["eta_s"].tolist())
    assert row["eta_sd_s"] == pytest.approx(np.std(mine["eta_s"].to_numpy(), ddof=1))


def test_modelled_clock_check_states_sign_and_size(report, run3):
    measured = pd.read_parquet(run3 / "eta.parquet")
    fit = pd.read_parquet(run3 / "eta.service-fit.parquet")
    both = measured.merge(fit, on=["backend", "realization", "condition"], suffixes=("", "_fit"))
    t = report.table("fitclock_eta")
    frame = t.frame.set_index(["realization", "condition"])
    for r in both.itertuples():
        assert frame.loc[(r.realization, r.condition), "same_sign"] == (np.sign(r.eta_s) == np.sign(r.eta_s_fit))
        assert frame.loc[(r.realization, r.condition), "size_ratio"] == pytest.approx(r.eta_s_fit / r.eta_s)
    kept = int((np.sign(both["eta_s"]) == np.sign(both["eta_s_fit"])).sum())
    assert t.notes[0].startswith(f"η keeps its sign under the modelled clock in {kept} of {len(both)} rows")
    assert "modelled clock" in t.title and all("fit:modelled clock: LAD on" in s for s in t.signatures)


def test_the_written_report_holds_the_noise_tables(report, tmp_path):
    write_report(report, tmp_path / "rep")
    md = (tmp_path / "rep" / "report.md").read_text()
    assert md.index("η across realizations beside its bootstrap interval") < md.index("Per-talk η in each realization")
    assert "η under a modelled clock (service=fit)" in md
    assert (tmp_path / "rep" / "tables" / "realizations_eta.csv").exists()


def test_one_realization_without_fit_leaves_them_out(tmp_path):
    rep = build_report(make_run(tmp_path / "one", 3, draws=20))
    keys = {t.key for t in rep.tables}
    assert not keys & {"realizations_eta", "realizations_talks", "fitclock_eta"}
