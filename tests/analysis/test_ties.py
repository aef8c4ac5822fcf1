"""Direction counts count only real directions: a per-talk value whose magnitude is below
the tie tolerance (1e-6 in the values' unit by default: 1 µs for seconds) is a tie,
counted in ``n_zero``, taken as 0 and printed as 0; the tolerance is in every signature.

The per-talk tables are built by hand: five talks whose values are exactly 0, +1e-9,
−1e-9, +1e-3 and −1e-3 (a float residue, a nanosecond residue, a millisecond), so the
counts are (1 negative, 3 ties, 1 positive) under the default tolerance, (2, 1, 2) with
no tolerance and (0, 5, 0) with a tolerance of 0.01."""

import numpy as np
import pandas as pd
import pytest

from simulplay.analysis import Bootstrap, compute_eta
from simulplay.analysis.bootstrap import TIE_TOLERANCE, direction_counts, snap_ties
from simulplay.analysis.quality_table import quality_summary
from simulplay.analysis.small_panels import small_panel_notes
from simulplay.analysis.table_bootstrap import bootstrap_table
from simulplay.formats.eta import with_ties

VALUES = [0.0, 1e-9, -1e-9, 1e-3, -1e-3]


def test_default_tolerance_is_one_microsecond():
    assert TIE_TOLERANCE == 1e-6 and Bootstrap().tie_tolerance == 1e-6
    assert Bootstrap().signature()["tie_tolerance"] == 1e-6


@pytest.mark.parametrize(("tolerance", "counts"), [(1e-6, (1, 3, 1)), (0.0, (2, 1, 2)), (1e-2, (0, 5, 0))])
def test_counts_under_each_tolerance(tolerance, counts):
    assert direction_counts(VALUES, tolerance) == counts


def test_ties_are_taken_as_exact_zeros():
    snapped = snap_ties(VALUES + [float("nan")])
    assert snapped[:3].tolist() == [0.0, 0.0, 0.0] and snapped[3:5].tolist() == [1e-3, -1e-3]
    assert np.isnan(snapped[5])
    assert not any(np.signbit(snapped[:3]))  # prints as 0, not -0


def test_per_talk_table_counts_ties_and_prints_them_as_zero():
    df = pd.DataFrame({"talk_id": [f"t{i}" for i in range(5)], "v": VALUES, "w": [0.0] * 5})
    res = bootstrap_table(df, value=["v", "w"], pairs=["v,w"], boot=Bootstrap(draws=200))
    table = res.table.set_index("condition")
    assert table.loc["v", ["n_negative", "n_zero", "n_positive"]].tolist() == [1, 3, 1]
    assert table.loc["w", ["n_negative", "n_zero", "n_positive"]].tolist() == [0, 5, 0]
    assert table.loc["v − w", ["n_negative", "n_zero", "n_positive"]].tolist() == [1, 3, 1]
    assert table.loc["v", "mean"] == 0.0  # (0 + 0 + 0 + 1e-3 − 1e-3) / 5 exactly
    per_talk = res.per_talk[res.per_talk["condition"] == "v"].set_index("talk_id")["value"]
    assert per_talk.tolist() == [0.0, 0.0, 0.0, 1e-3, -1e-3]
    assert res.signature["tie_tolerance"] == 1e-6
    loose = bootstrap_table(df, value=["v"], boot=Bootstrap(draws=200, tie_tolerance=0.0)).table.iloc[0]
    assert (loose["n_negative"], loose["n_zero"], loose["n_positive"]) == (2, 1, 2)


def summary(etas_by_backend: dict[str, list[float]]) -> pd.DataFrame:
    """A playback summary whose talk t has η = etas[t] under timer:w=4 against immediate:
    A's audio 100 + η s and F's 100 s, no idle, so L(A) − L(F) = (100 + η) − 100 (the float
    subtraction leaves 1e-9 as 1.00000008e-09, the residue real summaries carry)."""
    rows = []
    for backend, etas in etas_by_backend.items():
        for t, eta in enumerate(etas):
            for cond, gap in (("immediate", 0.0), ("timer:w=4", eta)):
                for system, audio in (("A", 100.0 + gap), ("F", 100.0)):
                    rows.append({"talk_id": f"t{t}", "system": system, "condition": cond, "audio_s": audio,
                                 "idle_s": 0.0, "offset_s": audio - 100.0, "source_s": 100.0, "backend": backend})
    return pd.DataFrame(rows)


def test_eta_contrast_and_interaction_count_ties():
    df = summary({"b1": VALUES, "b2": [0.0, 0.0, 0.0, 0.0, 2e-3]})
    res = compute_eta(df, a="A", f="F", reference="immediate", boot=Bootstrap(draws=200),
                      contrasts=[("timer:w=4", "immediate")], interactions=[("b1", "b2")])
    b1 = res.table[res.table["backend"] == "b1"].iloc[0]
    assert (b1["n_negative"], b1["n_zero"], b1["n_positive"]) == (1, 3, 1)
    assert b1["ci_low_s"] <= 0 <= b1["ci_high_s"]
    b2 = res.table[res.table["backend"] == "b2"].iloc[0]
    assert (b2["n_negative"], b2["n_zero"], b2["n_positive"]) == (0, 4, 1)
    talks = res.per_talk[res.per_talk["backend"] == "b1"].set_index("talk_id")
    assert talks["eta_s"].tolist() == [0.0, 0.0, 0.0, pytest.approx(1e-3), pytest.approx(-1e-3)]
    assert talks.loc["t1", "delta_s"] == 0.0 and talks.loc["t1", "duration_part_s"] == 0.0
    c = res.contrasts[res.contrasts["backend"] == "b1"].iloc[0]
    assert (c["n_negative"], c["n_zero"], c["n_positive"]) == (1, 3, 1)
    # interaction b1 − b2 per talk: 0, 0, 0, 1e-3, −1e-3 − 2e-3 → 1 negative, 3 ties, 1 positive
    inter = res.interactions[0].table.iloc[0]
    assert (inter["n_negative"], inter["n_zero"], inter["n_positive"]) == (1, 3, 1)
    assert res.interactions[0].per_talk["interaction_s"].tolist()[:3] == [0.0, 0.0, 0.0]
    assert all(s["tie_tolerance"] == 1e-6 for s in res.table_signatures + res.contrast_signatures)
    assert "timer:w=4 η<0 in 1/5, η=0 in 3/5, η>0 in 1/5" in res.notes[0]


def test_a_talk_at_a_nanosecond_is_no_direction():
    """The residue the issue met: η = +1.0e-9 s for every talk gives no positive talk and a
    zero interval, not "η>0 in 2/2" with ci_high 1.00000008e-09."""
    res = compute_eta(summary({"b": [1e-9, -1e-9]}), a="A", f="F", reference="immediate", boot=Bootstrap(draws=100))
    row = res.table.iloc[0]
    assert (row["n_negative"], row["n_zero"], row["n_positive"]) == (0, 2, 0)
    assert (row["eta_s"], row["ci_low_s"], row["ci_high_s"]) == (0.0, 0.0, 0.0)
    assert "η<0 in 0/2, η=0 in 2/2, η>0 in 0/2" in res.notes[0]
    exact = compute_eta(summary({"b": [1e-9, -1e-9]}), a="A", f="F", reference="immediate",
                        boot=Bootstrap(draws=100, tie_tolerance=0.0)).table.iloc[0]
    assert (exact["n_negative"], exact["n_zero"], exact["n_positive"]) == (1, 0, 1)


def test_eta_command_prints_and_records_the_ties(cli, tmp_path):
    path, out = tmp_path / "summary.csv", tmp_path / "eta.csv"
    summary({"b": VALUES}).drop(columns="backend").to_csv(path, index=False)
    proc = cli("eta", path, "--a", "A", "--f", "F", "--reference", "immediate", "--draws", "100", "--out", out,
               "--per-talk", tmp_path / "talks.csv", check=True)
    eta = pd.read_csv(out)
    assert eta.loc[0, ["n_negative", "n_zero", "n_positive"]].tolist() == [1, 3, 1]
    assert "tie_tolerance:1e-06" in eta.loc[0, "signature"]
    assert "n_zero" in proc.stdout and "η=0 in 3/5" in proc.stdout
    talks = pd.read_csv(tmp_path / "talks.csv").set_index("talk_id")
    assert talks.loc[["t0", "t1", "t2"], "eta_s"].tolist() == [0.0, 0.0, 0.0]
    proc = cli("eta", path, "--a", "A", "--f", "F", "--reference", "immediate", "--draws", "100", "--out", out,
               "--tie-tolerance", "0", check=True)
    eta = pd.read_csv(out)
    assert eta.loc[0, ["n_negative", "n_zero", "n_positive"]].tolist() == [2, 1, 2]
    assert "tie_tolerance:0.0" in eta.loc[0, "signature"]


def test_quality_delta_carries_ties_and_old_tables_get_them():
    rows = [{"metric": "dnsmos_ovrl", "condition": "immediate", "n_talks": 5, "mean": 3.0, "ci_low": 2.9,
             "ci_high": 3.1, "n_negative": 0, "n_zero": 0, "n_positive": 5, "n_talks_left_out": 0},
            {"metric": "dnsmos_ovrl", "condition": "punct − immediate", "n_talks": 5, "mean": 0.0, "ci_low": -0.1,
             "ci_high": 0.1, "n_negative": 1, "n_zero": 3, "n_positive": 1, "n_talks_left_out": 0}]
    table, _ = quality_summary(pd.DataFrame(rows), "immediate")
    assert table.loc[0, ["n_negative", "n_zero", "n_positive"]].tolist() == [1, 3, 1]
    old = pd.DataFrame(rows).drop(columns="n_zero")
    table, _ = quality_summary(old, "immediate")
    assert table.loc[0, "n_zero"] == 3  # 5 talks − 1 below − 1 above
    filled = with_ties(old)
    assert list(filled.columns).index("n_zero") == list(filled.columns).index("n_negative") + 1
    assert filled["n_zero"].tolist() == [0, 3]


def test_small_panel_note_reads_ties_of_an_old_table():
    old = pd.DataFrame([{"condition": "punct", "n_talks": 4, "ci_low_s": -0.1, "ci_high_s": 0.2, "n_negative": 1,
                         "n_positive": 1}])
    assert "punct η<0 in 1/4, η=0 in 2/4, η>0 in 1/4" in small_panel_notes(old)[0]
