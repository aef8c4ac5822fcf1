"""The modelled sweep: its η is `eta` on the predicted manifest, its L the replay's, its
measured points the run's own replay, and its self-check names what disagrees."""

import numpy as np
import pandas as pd
import pytest

from simulplay.analysis.sweep import replay_eta, run_sweep, sweep_service
from simulplay.analysis.sweep_check import check_sweep
from simulplay.core.errors import InputError
from simulplay.grouping.grid import parse_grids
from simulplay.workflows.sweep import read_run
from tests.support.cli import run_cli
from tests.support.sweep_runs import synthetic_run

GRID = ["timer:w=1..5", "words:n=3,6,cap=3"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return read_run(synthetic_run(tmp_path_factory.mktemp("run")))


@pytest.fixture(scope="module")
def swept(run):
    return run_sweep(run.streams, run.manifest, parse_grids(GRID), a="A", f="F", reference="immediate",
                     boot=run.boot)


cli = run_cli


@pytest.mark.slow


def test_sweep_eta_is_eta_on_the_predicted_manifest(run, swept, tmp_path):
    """One grid point the run never synthesized, through `simulplay replay` and
    `simulplay eta` as files: every η column equals the sweep's row exactly."""
    point = "timer:w=3"
    m = swept.modelled.manifest
    m[m["condition"].isin(["immediate", point])].to_parquet(tmp_path / "predicted.parquet")
    done = cli("replay", tmp_path / "predicted.parquet", "--out", tmp_path / "summary.parquet")
    assert done.returncode == 0, done.stderr
    done = cli("eta", tmp_path / "summary.parquet", "--a", "A", "--f", "F", "--reference", "immediate",
               "--draws", run.boot.draws, "--out", tmp_path / "eta.parquet")
    assert done.returncode == 0, done.stderr
    eta = pd.read_parquet(tmp_path / "eta.parquet").set_index("condition").loc[point]
    row = swept.table.set_index("rule").loc[point]
    for col in ("eta_s", "ci_low_s", "ci_high_s", "duration_part_s", "idle_part_s", "delta_s", "n_negative",
                "n_positive"):
        assert row[f"modelled_{col}"] == eta[col], col
    summary = pd.read_parquet(tmp_path / "summary.parquet")
    ends = summary[summary["condition"] == point].groupby("system")["offset_s"].mean()
    # the mean over talks, summed here in pandas' order: equal up to the last bits
    assert row["modelled_L_a_s"] == pytest.approx(ends["A"], abs=1e-12)
    assert row["modelled_L_f_s"] == pytest.approx(ends["F"], abs=1e-12)
    assert row["n_requests_a"] == summary.loc[(summary["condition"] == point) & (summary["system"] == "A"),
                                              "n_parts"].sum()


def test_every_row_is_signed_as_modelled(swept):
    assert len(swept.table) == 5 + 2 and len(swept.signatures) == len(swept.table)
    assert all("modelled" in s["model"] and s["table"] == "sweep" for s in swept.signatures)
    assert [s["rule"] for s in swept.signatures] == swept.table["rule"].tolist()
    assert swept.table.loc[swept.table["rule"] == "timer:w=2", "measured"].item()
    assert not swept.table.loc[swept.table["rule"] == "timer:w=3", "measured"].item()


def test_the_model_reproduces_the_measured_conditions_of_a_linear_run(run, swept):
    """Durations here are linear in characters and punctuation with 0.03 s of noise: the
    model is right, and the modelled η and L of every measured condition agree with the
    measured ones within a few hundredths of a second (per talk within 0.2 s)."""
    measured = replay_eta(run.manifest, a="A", f="F", reference="immediate", boot=run.boot)
    check = check_sweep(swept.modelled, measured, a="A", f="F", sig={})
    assert set(check.table["condition"]) == {"immediate", "timer:w=2", "timer:w=4"}
    assert check.table["eta_diff_s"].abs().max() < 0.05
    assert check.table[["L_a_diff_s", "L_f_diff_s"]].abs().max().max() < 0.05
    assert check.per_talk["eta_diff_s"].abs().max() < 0.2
    assert check.warnings == []
    assert check.summary.startswith("modelled vs measured at 3 measured condition(s): largest η disagreement")
    model = swept.models[0].durations
    assert model.coefficients()["chars"] == pytest.approx(0.06, abs=0.005)


def test_a_model_that_misses_says_so_in_one_line(run):
    measured = replay_eta(run.manifest, a="A", f="F", reference="immediate", boot=run.boot)
    slow = run.manifest.copy()
    f_slow = (slow["system"] == "F") & (slow["condition"] == "timer:w=4")
    slow.loc[f_slow, "n_samples"] *= 2  # F's audio under timer:w=4 twice as long
    slow["audio_s"] = slow["n_samples"] / slow["sample_rate"]
    wrong = replay_eta(slow, a="A", f="F", reference="immediate", boot=run.boot)
    check = check_sweep(wrong, measured, a="A", f="F", sig={})
    worst = check.table.set_index("condition").loc["timer:w=4"]
    assert worst["outside"] and worst["eta_diff_s"] < -worst["half_width_s"]
    assert len(check.warnings) == 1 and "timer:w=4" in check.warnings[0]
    assert "beyond the measured interval's half-width" in check.warnings[0]
    assert "largest η disagreement" in check.summary and "timer:w=4" in check.summary


def test_service_zero_replays_both_sides_without_service(run):
    res = run_sweep(run.streams, run.manifest, parse_grids(["timer:w=2"]), a="A", f="F", reference="immediate",
                    boot=run.boot, service="zero")
    assert res.signatures[0]["service"] == "zero"
    summary = res.modelled.summary
    assert (summary["idle_s"] >= 0).all()
    with pytest.raises(InputError, match="modelled requests have no measured service time"):
        sweep_service("measured")


def test_training_on_some_conditions_only(run):
    res = run_sweep(run.streams, run.manifest, parse_grids(["timer:w=2"]), a="A", f="F", reference="immediate",
                    boot=run.boot, train=["immediate"])
    n_immediate = int((run.manifest["condition"] == "immediate").sum())
    assert res.models[0].durations.n == n_immediate
    assert [h.over for h in res.models[0].durations.held_out] == ["talks"]  # one condition: no hold-out of it


def test_a_manifest_that_is_not_its_traces_grouping_is_refused(run):
    bad = run.manifest.copy()
    bad.loc[bad["condition"] == "timer:w=2", "n_updates"] += 1
    with pytest.raises(InputError, match="are not the groups its trace gives"):
        run_sweep(run.streams, bad, parse_grids(["timer:w=2"]), a="A", f="F", reference="immediate", boot=run.boot)


def test_modelled_durations_are_whole_samples(swept):
    m = swept.modelled.manifest
    assert np.array_equal(m["audio_s"].to_numpy(), m["n_samples"].to_numpy() / m["sample_rate"].to_numpy())


def test_each_realization_is_a_panel_of_its_own(tmp_path):
    run = read_run(synthetic_run(tmp_path / "run", realizations=2))
    res = run_sweep(run.streams, run.manifest, parse_grids(["timer:w=1..3"]), a="A", f="F", reference="immediate",
                    boot=run.boot)
    assert [m.label() for m in res.models] == ["backend=synthetic, realization=0", "backend=synthetic, realization=1"]
    assert res.models[0].durations.coef != res.models[1].durations.coef  # each fitted on its own requests
    assert res.table.groupby("realization").size().to_dict() == {"0": 3, "1": 3}
    assert [s["realization"] for s in res.signatures] == res.table["realization"].tolist()
    measured = replay_eta(run.manifest, a="A", f="F", reference="immediate", boot=run.boot)
    check = check_sweep(res.modelled, measured, a="A", f="F", sig={})
    assert len(check.table) == 2 * 3 and check.table["eta_diff_s"].abs().max() < 0.1


def test_a_run_with_a_framework_rule_fits_on_its_whole_update_conditions(tmp_path, run):
    # pipecat's groups are character spans: its requests are left out of the fit, which is
    # then the fit of the same run without them; its spans are modelled from their text, beside
    # its measurement, and a framework rule's grid is modelled
    mixed = read_run(synthetic_run(tmp_path / "mixed", rules=("immediate", "timer:w=2", "timer:w=4", "pipecat")))
    assert (mixed.manifest["condition"] == "pipecat").sum() > 0
    kw = dict(a="A", f="F", reference="immediate", boot=run.boot)
    with_it = run_sweep(mixed.streams, mixed.manifest, parse_grids(["timer:w=3"]), **kw)
    without = run_sweep(run.streams, run.manifest, parse_grids(["timer:w=3"]), **kw)
    assert with_it.models[0].durations.n == without.models[0].durations.n
    assert with_it.models[0].durations.coef == without.models[0].durations.coef
    modelled = with_it.modelled.manifest
    assert (modelled["condition"] == "pipecat").sum() == (mixed.manifest["condition"] == "pipecat").sum()
    swept = run_sweep(mixed.streams, mixed.manifest, parse_grids(["livekit:min_sentence_len=5..40:35"]), **kw)
    assert swept.table["rule"].tolist() == ["livekit:min_sentence_len=5,stream_context_len=10",
                                            "livekit:min_sentence_len=40,stream_context_len=10"]
    assert swept.table["modelled_eta_s"].notna().all()
