"""How much of η is synthesis noise: η's spread across realizations and the
duration noise, on hand-made tables and on real runs of a small experiment.

Every `simulplay run` below is an independent run, though all run in this test's process:
each Piper load draws its own noise seed from the OS
(docs/synthesis.md#pipers-noise-and-reproducible-durations), so two runs differ under the
paper's noises wherever they run, and agree exactly under durations=fixed.
"""

import math

import pandas as pd
import pytest

from simulplay.analysis import EtaResult
from simulplay.analysis.noise import duration_noise, eta_spread, noise_check
from tests.support.factories import PIPER_BACKEND, experiment_toml, small_trace

# a module fixture of real runs takes seconds: every test here counts as slow (make test-fast leaves them out)
pytestmark = pytest.mark.slow


def eta_result(rows: list[tuple[str, str, float]]) -> EtaResult:
    """An η table of (realization, condition, eta_s) rows with one signature per row."""
    table = pd.DataFrame([{"backend": "piper:x", "realization": r, "condition": c, "eta_s": e} for r, c, e in rows])
    sigs = [{"table": "eta", "rule": c, "realization": r, "service": "zero"} for r, c, _ in rows]
    return EtaResult(table, sigs, pd.DataFrame(), [], pd.DataFrame(), [])


def test_eta_spread_puts_realizations_side_by_side():
    # worked out by hand: timer 0.105 and 0.007 → mean 0.056, range 0.098, sd 0.098/√2;
    # punct −0.20 and −0.26 → mean −0.23, range 0.06, sd 0.06/√2
    eta = eta_result([("0", "timer:w=2", 0.105), ("0", "punct", -0.20), ("1", "timer:w=2", 0.007),
                      ("1", "punct", -0.26)])
    table, sigs = eta_spread(eta)
    assert list(table["condition"]) == ["timer:w=2", "punct"] and set(table["backend"]) == {"piper:x"}
    timer, punct = table.iloc[0], table.iloc[1]
    assert timer["n_realizations"] == 2 and timer["eta_mean_s"] == pytest.approx(0.056)
    assert (timer["eta_min_s"], timer["eta_max_s"]) == (0.007, 0.105)
    assert timer["eta_range_s"] == pytest.approx(0.098) and timer["eta_sd_s"] == pytest.approx(0.098 / math.sqrt(2))
    assert punct["eta_mean_s"] == pytest.approx(-0.23) and punct["eta_range_s"] == pytest.approx(0.06)
    assert sigs[0] == {"table": "eta-spread", "rule": "timer:w=2", "service": "zero", "realizations": 2}


def test_one_realization_has_no_spread():
    table, sigs = eta_spread(eta_result([("0", "timer:w=2", 0.1)]))
    assert table.empty and sigs == []


def manifest(rows: list[tuple[int, str, int, bool]]) -> pd.DataFrame:
    """(realization, text, n_samples, reused) rows at 1000 Hz."""
    return pd.DataFrame([{"realization": r, "text": t, "n_samples": n, "sample_rate": 1000, "reused": u, "error": ""}
                         for r, t, n, u in rows])


def test_duration_noise_compares_each_text_with_the_first_realization():
    # by hand at 1000 Hz: "a" 1000 vs 1050 samples → 0.05 s; "b" 500 vs 500 → 0; median 0.025 s
    m = manifest([(0, "a", 1000, False), (0, "a", 1000, True), (0, "b", 500, False),
                  (1, "a", 1050, False), (1, "a", 1050, True), (1, "b", 500, False)])
    d = duration_noise(m).iloc[0]
    assert (d["realization"], d["vs_realization"], d["n_texts"], d["n_fresh"], d["n_same_samples"]) == (1, 0, 2, 2, 1)
    assert d["median_abs_diff_s"] == pytest.approx(0.025) and d["max_abs_diff_s"] == pytest.approx(0.05)


def test_realizations_that_reuse_the_first_are_named_zero_by_construction():
    m = manifest([(0, "a", 1000, False), (1, "a", 1000, True)])
    check = noise_check(m, {"reuse": "always"}, {"": eta_result([("0", "timer:w=2", 0.1), ("1", "timer:w=2", 0.1)])})
    assert check.durations["n_fresh"].tolist() == [0]
    assert len(check.notes) == 1 and "0 by construction" in check.notes[0] and "reuse=always" in check.notes[0]




def experiment(out: str, backend: dict) -> str:
    return experiment_toml(name="noise", realizations=2, out=out, backend={**PIPER_BACKEND, **backend},
                           analysis={"draws": 200, "seed": 0, "variants": ["service=zero"]})


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two independent runs under durations=fixed (fresh realizations) and two under the paper's noises."""
    from tests.support.cli import run_cli

    folder = tmp_path_factory.mktemp("noise")
    small_trace(folder / "trace.jsonl", n_streams=4, n_updates=4)
    backends = {"fixed": {"durations": "fixed", "reuse": "same-realization"}, "paper": {}}
    out = {}
    for name, backend in backends.items():
        for k in (1, 2):
            toml = folder / f"{name}{k}.toml"
            toml.write_text(experiment(f"{name}{k}", backend))
            out[name, k] = (folder / f"{name}{k}", run_cli("run", toml, "--quiet", check=True).stdout)
    return out


def spread(run_dir, replay):
    s = pd.read_csv(run_dir / "eta_spread.csv")
    return s[s["replay"] == replay]


def test_durations_fixed_zero_service_runs_give_byte_identical_eta(runs):
    (one, _), (two, _) = runs["fixed", 1], runs["fixed", 2]
    for name in ("eta.service-zero.csv", "eta.service-zero.md"):
        assert (one / name).read_bytes() == (two / name).read_bytes(), name
    assert "preset:durations=fixed" in (one / "eta.service-zero.md").read_text()
    assert "waveforms:may differ" in (one / "eta.service-zero.md").read_text()
    for run in (one, two):  # and within a run the two freshly synthesized realizations agree exactly
        assert (spread(run, "service=zero")["eta_range_s"] == 0).all()
        d = pd.read_csv(run / "duration_noise.csv").iloc[0]
        assert d["n_same_samples"] == d["n_texts"] == d["n_fresh"] > 0 and d["max_abs_diff_s"] == 0


def test_paper_settings_runs_disagree(runs):
    (one, out), (two, _) = runs["paper", 1], runs["paper", 2]
    assert (one / "eta.service-zero.csv").read_bytes() != (two / "eta.service-zero.csv").read_bytes()
    for run in (one, two):
        assert (spread(run, "service=zero")["eta_range_s"] > 0).all()
        d = pd.read_csv(run / "duration_noise.csv").iloc[0]
        assert d["n_same_samples"] < d["n_texts"] == d["n_fresh"] and d["max_abs_diff_s"] > 0
    assert "η across realizations (synthesis noise)" in out and "Same text, another realization" in out
    assert "by construction" not in out


def test_spread_table_carries_signatures_and_both_replays(runs):
    run, _ = runs["paper", 1]
    s = pd.read_csv(run / "eta_spread.csv")
    assert set(s["replay"]) == {"primary", "service=zero"} and (s["n_realizations"] == 2).all()
    zero = s[s["replay"] == "service=zero"]["signature"].iloc[0]
    assert "table:eta-spread" in zero and "service:zero" in zero and "realizations:2" in zero
    assert "realization:" not in zero.replace("realizations:", "")
    eta = pd.read_csv(run / "eta.service-zero.csv")
    by_hand = eta.groupby("condition")["eta_s"].agg(lambda v: v.max() - v.min())
    assert s.set_index("replay").loc["service=zero", "eta_range_s"] == pytest.approx(by_hand.iloc[0])


def printed_rows(stdout: str, title: str) -> tuple[list[str], list[list[str]]]:
    """Header and body cells of the rich table printed under ``title``."""
    section = stdout.split(title, 1)[1].split("signature:", 1)[0]
    lines = [ln for ln in section.splitlines() if ln.startswith(("┃", "│"))]
    cells = [[c.strip() for c in ln.strip("┃│").split("┃" if ln.startswith("┃") else "│")] for ln in lines]
    return cells[0], cells[1:]


def test_sensitivity_replay_table_shows_the_realization_of_each_row(runs):
    # two realizations × one condition (timer:w=3; the reference has no row of its own):
    # without the realization column the two rows would look duplicated
    run, out = runs["paper", 1]
    header, rows = printed_rows(out, "sensitivity replay service=zero")
    assert header[:2] == ["realization", "condition"]
    eta = pd.read_csv(run / "eta.service-zero.csv", dtype={"realization": str})
    assert sorted((r[0], r[1]) for r in rows) == sorted(zip(eta["realization"], eta["condition"]))
    assert len(set(map(tuple, rows))) == len(rows) == len(eta) == 2
