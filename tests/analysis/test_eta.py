"""δ, η, decomposition, paired talk bootstrap and direction counts (docs/concepts.md#the-comparison)."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from simulplay.analysis import Bootstrap, compute_eta
from simulplay.core.errors import IncompleteError, InputError


def summary_frame(values):
    """values: {(talk, system, condition): (audio, idle)}; source 100 s everywhere."""
    rows = []
    for (talk, system, cond), (d, i) in values.items():
        rows.append({"talk_id": talk, "system": system, "condition": cond, "audio_s": d, "idle_s": i,
                     "offset_s": d + i - 100.0, "source_s": 100.0})
    return pd.DataFrame(rows)


def random_summary(rng, n_talks, conds=("immediate", "timer:w=4", "punct:cap=2,min_words=3")):
    values = {}
    for t in range(n_talks):
        for s in ("A", "F"):
            for c in conds:
                values[(f"t{t}", s, c)] = (rng.uniform(50, 150), rng.uniform(0, 60))
    return summary_frame(values)


def talk_indices(draws, n_talks, seed=1032026):
    """The documented bootstrap convention, drawn here with NumPy alone: one
    ``default_rng(seed)``, one ``integers(0, n_talks, (draws, n_talks))`` matrix over the
    talks in sorted order (1032026 is the default seed)."""
    return np.random.default_rng(seed).integers(0, n_talks, size=(draws, n_talks))


def eta_by_hand(df, condition, reference="immediate"):
    """η per talk (sorted talk order): δ = L_A − L_F, η = δ(condition) − δ(reference)."""
    offset = df.set_index(["talk_id", "system", "condition"])["offset_s"]
    delta = {c: offset.xs("A", level="system").xs(c, level="condition")
             - offset.xs("F", level="system").xs(c, level="condition") for c in (condition, reference)}
    return (delta[condition] - delta[reference]).sort_index().to_numpy()


def test_hand_computed_eta_and_parts():
    df = summary_frame({
        ("t1", "A", "immediate"): (100, 10), ("t1", "F", "immediate"): (120, 5),
        ("t1", "A", "timer:w=4"): (80, 20), ("t1", "F", "timer:w=4"): (110, 6),
        ("t2", "A", "immediate"): (90, 0), ("t2", "F", "immediate"): (90, 0),
        ("t2", "A", "timer:w=4"): (95, 0), ("t2", "F", "timer:w=4"): (80, 10),
    })
    res = compute_eta(df, a="A", f="F", reference="immediate", boot=Bootstrap(draws=100))
    pt = res.per_talk.set_index("talk_id")
    # t1: δ(0) = 110 − 125 = −15; δ(4) = 100 − 116 = −16; η = −1; D part −20+10 = −10; I part 10−1 = 9
    assert pt.loc["t1", ["delta_ref_s", "delta_s", "eta_s", "duration_part_s", "idle_part_s"]].tolist() == \
        [-15, -16, -1, -10, 9]
    # t2: δ(0) = 0; δ(4) = 95 − 90 = 5; η = 5; D part 5 + 10 = 15; I part 0 − 10 = −10
    assert pt.loc["t2", ["eta_s", "duration_part_s", "idle_part_s"]].tolist() == [5, 15, -10]
    row = res.table.iloc[0]
    assert row["eta_s"] == 2 and row["delta_ref_s"] == -7.5 and row["delta_s"] == -5.5
    assert (row["n_negative"], row["n_positive"], row["n_talks"]) == (1, 1, 2)
    assert list(res.table.columns) == ["condition", "n_talks", "delta_ref_s", "delta_s", "eta_s", "ci_low_s",
                                       "ci_high_s", "n_negative", "n_zero", "n_positive", "duration_part_s",
                                       "idle_part_s"]


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 12), st.integers(0, 2**31))
@pytest.mark.slow
def test_eta_equals_duration_part_plus_idle_part(n, seed):
    res = compute_eta(random_summary(np.random.default_rng(seed), n), a="A", f="F",
                      reference="immediate", boot=Bootstrap(draws=50))
    pt = res.per_talk
    assert np.allclose(pt["eta_s"], pt["duration_part_s"] + pt["idle_part_s"], atol=1e-9)
    assert np.allclose(res.table["eta_s"], res.table["duration_part_s"] + res.table["idle_part_s"])


def test_bootstrap_agrees_with_scipy_percentile_interval():
    rng = np.random.default_rng(7)
    df = random_summary(rng, 20)
    boot = Bootstrap(draws=20_000, seed=11)
    res = compute_eta(df, a="A", f="F", reference="immediate", boot=boot)
    assert sorted(res.table["condition"]) == ["punct:cap=2,min_words=3", "timer:w=4"]  # both non-reference rules
    for cond, row in res.table.set_index("condition").iterrows():
        eta = eta_by_hand(df, cond)
        ref = stats.bootstrap((eta,), np.mean, n_resamples=20_000, method="percentile",
                              confidence_level=0.95, rng=np.random.default_rng(5))
        se = eta.std(ddof=1) / np.sqrt(len(eta))
        assert row["ci_low_s"] == pytest.approx(ref.confidence_interval.low, abs=0.08 * se)
        assert row["ci_high_s"] == pytest.approx(ref.confidence_interval.high, abs=0.08 * se)


def test_same_seed_gives_identical_output_and_another_seed_differs():
    df = random_summary(np.random.default_rng(1), 8)
    a = compute_eta(df, a="A", f="F", reference="immediate", boot=Bootstrap(draws=500, seed=0))
    b = compute_eta(df, a="A", f="F", reference="immediate", boot=Bootstrap(draws=500, seed=0))
    c = compute_eta(df, a="A", f="F", reference="immediate", boot=Bootstrap(draws=500, seed=1))
    pd.testing.assert_frame_equal(a.table, b.table)
    assert not np.allclose(a.table["ci_low_s"], c.table["ci_low_s"])
    assert a.table_signatures[0]["boot_seed"] == 0


def test_one_index_matrix_is_shared_by_all_conditions():
    # two conditions with identical per-talk η must get identical intervals
    df = random_summary(np.random.default_rng(2), 10, conds=("immediate", "x", "y"))
    y = df["condition"] == "y"
    x = df[df["condition"] == "x"].set_index(["talk_id", "system"])
    df.loc[y, ["audio_s", "idle_s", "offset_s"]] = x.loc[list(zip(df.loc[y, "talk_id"], df.loc[y, "system"])),
                                                         ["audio_s", "idle_s", "offset_s"]].to_numpy()
    t = compute_eta(df, a="A", f="F", reference="immediate", boot=Bootstrap(draws=300)).table
    assert t.iloc[0]["ci_low_s"] == t.iloc[1]["ci_low_s"]


@pytest.mark.parametrize("method", ["linear", "inverted_cdf", "nearest", "median_unbiased"])
def test_quantile_method_is_used_and_recorded(method):
    df = random_summary(np.random.default_rng(3), 6)
    res = compute_eta(df, a="A", f="F", reference="immediate", boot=Bootstrap(draws=101, method=method))
    eta = eta_by_hand(df, "timer:w=4")
    want = np.quantile(eta[talk_indices(101, 6)].mean(axis=1), [0.025, 0.975], method=method)
    row = res.table.set_index("condition").loc["timer:w=4"]
    assert [row["ci_low_s"], row["ci_high_s"]] == pytest.approx(list(want), rel=1e-12)
    assert res.table_signatures[0]["quantile"] == method


def test_buffered_policy_contrast_uses_delta_difference():
    df = random_summary(np.random.default_rng(4), 9)
    res = compute_eta(df, a="A", f="F", reference="immediate", boot=Bootstrap(draws=200),
                      contrasts=[("punct", "timer:w=4")])
    offset = df.set_index(["talk_id", "system", "condition"])["offset_s"]
    delta = offset.xs("A", level="system") - offset.xs("F", level="system")  # δ = L_A − L_F per talk
    diff = delta.xs("punct:cap=2,min_words=3", level="condition") - delta.xs("timer:w=4", level="condition")
    row = res.contrasts.iloc[0]
    assert row["diff_s"] == pytest.approx(diff.mean())
    assert row["n_positive"] == (diff > 0).sum() and row["p1"] == "punct:cap=2,min_words=3"


def test_missing_output_fails_closed_unless_allowed():
    df = random_summary(np.random.default_rng(5), 4)
    df = df[~((df["talk_id"] == "t2") & (df["system"] == "F") & (df["condition"] == "timer:w=4"))]
    with pytest.raises(IncompleteError, match=r"talk_id=t2, system=F, condition=timer:w=4"):
        compute_eta(df, a="A", f="F", reference="immediate", boot=Bootstrap(draws=10))
    res = compute_eta(df, a="A", f="F", reference="immediate", boot=Bootstrap(draws=10), allow_incomplete=True)
    assert set(res.table["n_talks"]) == {3}
    assert all(s["excluded"] == 1 for s in res.table_signatures)


def test_panels_are_never_pooled():
    a = random_summary(np.random.default_rng(6), 3).assign(backend="piper")
    b = random_summary(np.random.default_rng(7), 3).assign(backend="xtts")
    res = compute_eta(pd.concat([a, b]), a="A", f="F", reference="immediate", boot=Bootstrap(draws=10))
    assert list(res.table["backend"]) == ["piper", "piper", "xtts", "xtts"]
    only_a = compute_eta(a, a="A", f="F", reference="immediate", boot=Bootstrap(draws=10))
    assert np.allclose(res.table["eta_s"].iloc[:2], only_a.table["eta_s"])


def test_unknown_names_list_what_exists():
    df = random_summary(np.random.default_rng(8), 2)
    with pytest.raises(InputError, match="no system 'B'.*expected A, F"):
        compute_eta(df, a="B", f="F", reference="immediate")
    with pytest.raises(InputError, match="no condition 'timer:w=9'"):
        compute_eta(df, a="A", f="F", reference="timer:w=9")


def test_a_duplicated_output_is_refused_not_collapsed():
    df = random_summary(np.random.default_rng(9), 3)
    df = pd.concat([df, df.iloc[[4]]], ignore_index=True)
    with pytest.raises(InputError, match=r"row 19: output \(t0, F, timer:w=4\) appears more than once"):
        compute_eta(df, a="A", f="F", reference="immediate", boot=Bootstrap(draws=10))


def test_a_panel_mixing_replay_settings_is_refused():
    df = random_summary(np.random.default_rng(10), 3)
    sigs = [{"release": "request", "service": "zero" if c == "timer:w=4" else "measured", "rule": c}
            for c in df["condition"]]
    with pytest.raises(InputError, match="differ in 'service' \\(measured vs zero\\)"):
        compute_eta(df, a="A", f="F", reference="immediate", boot=Bootstrap(draws=10), upstream=sigs)
    same = [{**s, "service": "measured"} for s in sigs]
    res = compute_eta(df, a="A", f="F", reference="immediate", boot=Bootstrap(draws=10), upstream=same)
    assert all(s["service"] == "measured" for s in res.table_signatures)


def test_a_panel_without_the_reference_fails_closed():
    a = random_summary(np.random.default_rng(11), 2).assign(backend="x")
    b = random_summary(np.random.default_rng(12), 2).assign(backend="y")
    b = b[b["condition"] != "immediate"]
    with pytest.raises(IncompleteError, match="no output under the reference condition 'immediate' in panel "
                       "backend:y"):
        compute_eta(pd.concat([a, b]), a="A", f="F", reference="immediate", boot=Bootstrap(draws=10))
