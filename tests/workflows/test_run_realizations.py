"""`simulplay run` with realizations in counterbalanced order and the modelled clock
(issues 16 items 3–5, 18 item 2), in process with the deterministic fake backend: every
table is written, printed and reported, each from what the run itself saved."""

import numpy as np
import pandas as pd
import pytest

from simulplay.cli.experiment import finish_run
from simulplay.workflows.experiment import experiment_from_dict
from simulplay.workflows.pipeline import run_experiment
from tests.support import fakes  # noqa: F401  (registers the fake backend)
from tests.support.factories import small_trace

# a module fixture of real runs takes seconds: every test here counts as slow (make test-fast leaves them out)
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("runr")
    small_trace(folder / "trace.jsonl", n_streams=6, n_updates=8)
    exp = experiment_from_dict({
        "traces": ["trace.jsonl"], "a": "A", "f": "F", "rules": ["immediate", "timer:w=3"], "reference": "immediate",
        "realizations": 2, "order": "counterbalanced", "out": "run",
        "backend": {"name": "fake-test", "reuse": "never"},
        "analysis": {"draws": 100, "seed": 0, "variants": ["service=fit"]}}, folder / "exp.toml")
    return exp, run_experiment(exp)


def test_run_writes_the_realization_tables_from_its_own_eta(run):
    exp, res = run
    per_talk = pd.read_csv(exp.out / "eta_per_talk.csv")
    spread = pd.read_csv(exp.out / "eta_talk_spread.csv")
    assert set(spread["talk_id"]) == set(per_talk["talk_id"]) and len(spread) == 3  # 3 talks, 1 grouped condition
    for row in spread.itertuples():
        mine = per_talk[per_talk["talk_id"] == row.talk_id].sort_values("realization")["eta_s"].to_numpy()
        assert row.eta_sd_s == pytest.approx(np.std(mine, ddof=1))
    assert "eta-talk-sd" in (exp.out / "eta_talk_sd.md").read_text()
    man = pd.read_parquet(exp.out / "manifest.parquet")
    assert {"synth_order", "order_id", "condition_pos"} <= set(man.columns)
    assert res.synth.signature["order"] == "counterbalanced"


def test_run_flags_its_small_panel_and_labels_the_modelled_clock(run, capsys):
    exp, res = run
    assert "Note: small panel (realization 0): 3 talks" in (exp.out / "eta.md").read_text()
    fit = pd.read_csv(exp.out / "eta.service-fit.csv")
    assert fit["signature"].str.contains("service:fit").all() and fit["signature"].str.contains(
        "fit:modelled clock: LAD on").all()
    finish_run(res, exp)
    out = " ".join(capsys.readouterr().out.split())
    assert "note: small panel (realization 0): 3 talks" in out
    assert "η across realizations, talk by talk" in out
    assert "sensitivity replay service=fit (a modelled clock, not a measurement)" in out


def test_run_report_has_the_noise_tables(run):
    exp, _ = run
    md = (exp.out / "report" / "report.md").read_text()
    for title in ("η across realizations beside its bootstrap interval", "Per-talk η in each realization",
                  "η under a modelled clock (service=fit)", "Small panel: 3 talk(s)",
                  "η service-fit, modelled clock (s)"):
        assert title in md, title
