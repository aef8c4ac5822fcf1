"""Repeated realizations talk by talk (the paper's C.4): per-talk η in each
realization, its sample SD across realizations, the median and maximum SD and the talk
with the largest range — checked against NumPy applied by hand to a hand-made summary.

Each talk's η is a chosen number: δ(immediate) = 0 and δ(timer:w=4) = η (A's audio
100 + η s, F's 100 s, no idle)."""

import numpy as np
import pandas as pd
import pytest

from simulplay.analysis import Bootstrap, compute_eta
from simulplay.analysis.realizations import realization_tables, talk_sd_summary, talk_spread

# η per talk in realizations 0, 1, 2
ETA = {"t0": [1.0, 2.0, 4.0], "t1": [-1.0, -1.0, -1.0], "t2": [0.0, 3.5, 2.0]}


def summary():
    rows = []
    for talk, etas in ETA.items():
        for r, eta in enumerate(etas):
            for cond, gap in (("immediate", 0.0), ("timer:w=4", eta)):
                for system, audio in (("A", 100.0 + gap), ("F", 100.0)):
                    rows.append({"talk_id": talk, "system": system, "condition": cond, "realization": str(r),
                                 "audio_s": audio, "idle_s": 0.0, "offset_s": audio - 100.0, "source_s": 100.0})
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def eta():
    return compute_eta(summary(), a="A", f="F", reference="immediate", boot=Bootstrap(draws=50, seed=2))


def test_per_talk_eta_in_each_realization_and_its_sample_sd(eta):
    spread, sigs = talk_spread(eta.per_talk, eta.per_talk_signatures)
    s = spread.set_index("talk_id")
    for talk, etas in ETA.items():
        assert s.loc[talk, ["eta_s[r=0]", "eta_s[r=1]", "eta_s[r=2]"]].tolist() == pytest.approx(etas)
        assert s.loc[talk, "n_realizations"] == 3
        assert s.loc[talk, "eta_mean_s"] == pytest.approx(np.mean(etas))
        assert s.loc[talk, "eta_sd_s"] == pytest.approx(np.std(etas, ddof=1))  # sample SD
        assert s.loc[talk, "eta_range_s"] == pytest.approx(max(etas) - min(etas))
    assert s.loc["t1", "eta_sd_s"] == 0.0
    assert all(sig["table"] == "eta-talk-spread" and sig["realizations"] == 3 and "realization" not in sig
               for sig in sigs)


def test_median_and_maximum_sd_and_the_widest_talk(eta):
    tables = realization_tables(eta)
    row = tables.summary.iloc[0]
    sds = {t: np.std(v, ddof=1) for t, v in ETA.items()}  # t0 1.528, t1 0, t2 1.756
    assert row["condition"] == "timer:w=4" and row["n_talks"] == 3 and row["n_realizations"] == 3
    assert row["median_talk_sd_s"] == pytest.approx(np.median(list(sds.values())))
    assert row["max_talk_sd_s"] == pytest.approx(sds["t2"]) and row["max_sd_talk"] == "t2"
    # ranges: t0 3.0, t1 0, t2 3.5 → t2, from 0.0 to 3.5
    assert (row["widest_talk"], row["widest_low_s"], row["widest_high_s"], row["widest_range_s"]) == \
        ("t2", 0.0, 3.5, 3.5)
    assert tables.summary_signatures[0]["table"] == "eta-talk-sd"


def test_a_range_tie_goes_to_the_first_talk_in_sorted_order():
    spread = pd.DataFrame({"condition": ["c"] * 2, "talk_id": ["b", "a"], "n_realizations": [2, 2],
                           "eta_min_s": [0.0, 1.0], "eta_max_s": [2.0, 3.0], "eta_range_s": [2.0, 2.0],
                           "eta_sd_s": [1.4, 1.4]})
    row = talk_sd_summary(spread)[0].iloc[0]
    assert row["widest_talk"] == "a" and row["max_sd_talk"] == "a"


def test_one_realization_gives_no_tables(eta):
    one = summary()
    one = one[one["realization"] == "0"]
    res = compute_eta(one, a="A", f="F", reference="immediate", boot=Bootstrap(draws=20))
    assert realization_tables(res) is None
    assert talk_spread(res.per_talk)[0].empty


def test_a_talk_missing_from_a_realization_counts_what_it_has(eta):
    pt = eta.per_talk[~((eta.per_talk["talk_id"] == "t0") & (eta.per_talk["realization"] == "2"))]
    s = talk_spread(pt)[0].set_index("talk_id")
    assert s.loc["t0", "n_realizations"] == 2 and np.isnan(s.loc["t0", "eta_s[r=2]"])
    assert s.loc["t0", "eta_sd_s"] == pytest.approx(np.std([1.0, 2.0], ddof=1))


def test_eta_cli_writes_the_talk_spread_and_its_summary(tmp_path, cli):
    summary().to_csv(tmp_path / "s.csv", index=False)
    args = ["eta", tmp_path / "s.csv", "--a", "A", "--f", "F", "--reference", "immediate", "--draws", "50",
            "--out", tmp_path / "e.csv"]
    proc = cli(*args, "--talk-spread", tmp_path / "spread.csv", check=True)
    assert "η across realizations, talk by talk" in proc.stdout
    spread = pd.read_csv(tmp_path / "spread.csv").set_index("talk_id")
    assert spread.loc["t2", "eta_sd_s"] == pytest.approx(np.std(ETA["t2"], ddof=1))
    top = pd.read_csv(tmp_path / "spread.summary.csv").iloc[0]
    assert top["widest_talk"] == "t2" and top["max_sd_talk"] == "t2" and "table:eta-talk-sd" in top["signature"]


def test_eta_cli_refuses_a_talk_spread_of_one_realization_before_writing(tmp_path, cli):
    from tests.support.checks import assert_one_line_error

    one = summary()
    one[one["realization"] == "0"].to_csv(tmp_path / "s.csv", index=False)
    proc = cli("eta", tmp_path / "s.csv", "--a", "A", "--f", "F", "--reference", "immediate", "--out",
               tmp_path / "e.csv", "--talk-spread", tmp_path / "spread.csv")
    assert_one_line_error(proc, "s.csv", "field 'realization'", "has one realization", "two realizations or more")
    assert not (tmp_path / "e.csv").exists() and not (tmp_path / "spread.csv").exists()
