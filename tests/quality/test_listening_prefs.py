"""The listening test's statistics and excerpt alignment on tiny hand-built tables.

The crossed bootstrap over excerpts and raters is checked against its exact distribution
enumerated by hand (2 excerpts × 2 raters: 16 equally likely resamples) and, with one rater,
against scipy.stats.bootstrap over excerpts; the excerpt spans against hand-placed requests."""

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from simulplay.analysis.bootstrap import Bootstrap
from simulplay.analysis.listening_excerpts import Requests, shared_spans, text_ends, words_of
from simulplay.analysis.listening_prefs import consistency, draw_indices, draw_means, preferences


def rating_rows(cells, repeat=0):
    """(excerpt, rater, condition_a, condition_b, rating) tuples as the page exports them."""
    return pd.DataFrame([{"excerpt": e, "rater": r, "condition_a": a, "condition_b": b, "rating": x,
                          "repeat": repeat} for e, r, a, b, x in cells])


def test_crossed_bootstrap_matches_the_enumerated_distribution():
    # score towards "T" (T played as B: the rating itself; as A: its negative)
    table = rating_rows([("e1", "r1", "I", "T", 2), ("e1", "r2", "T", "I", 0),
                         ("e2", "r1", "T", "I", 1), ("e2", "r2", "I", "T", -1)])
    s = {("e1", "r1"): 2, ("e1", "r2"): 0, ("e2", "r1"): -1, ("e2", "r2"): -1}
    exact = {}  # value → probability, from the 4 × 4 excerpt and rater resamples
    resamples = itertools.product(itertools.product(["e1", "e2"], repeat=2), itertools.product(["r1", "r2"], repeat=2))
    for es, rs in resamples:
        v = float(np.mean([s[(e, r)] for e in es for r in rs]))
        exact[round(v, 9)] = exact.get(round(v, 9), 0) + 1 / 16
    boot = Bootstrap(draws=40_000, seed=7, method="inverted_cdf")
    idx_e, idx_r = draw_indices(boot, 2, 2)
    grid = np.array([[2.0, 0.0], [-1.0, -1.0]])
    means = draw_means(grid, idx_e, idx_r)
    values, counts = np.unique(np.round(means, 9), return_counts=True)
    assert set(values.tolist()) == set(exact)
    for v, c in zip(values.tolist(), counts):
        assert c / len(means) == pytest.approx(exact[v], abs=0.01)
    row = preferences(table, [("T", "I")], boot).iloc[0]
    assert row["mean"] == pytest.approx(0.0)  # (2 + 0 − 1 − 1) / 4
    assert (row["n_prefer"], row["n_prefer_versus"], row["n_equal"]) == (1, 2, 1)
    cdf = np.cumsum([exact[k] for k in sorted(exact)])
    ordered = sorted(exact)
    # inverted_cdf: the smallest value whose cumulative probability reaches 2.5 % (97.5 %)
    assert row["ci_low"] == pytest.approx(ordered[int(np.searchsorted(cdf, 0.025))])
    assert row["ci_high"] == pytest.approx(ordered[int(np.searchsorted(cdf, 0.975))])


def test_one_rater_is_the_ordinary_bootstrap_over_excerpts():
    scores = np.array([2, 1, 1, 0, -1, 2, 1, 0, 1, 2, -2, 1], float)
    table = rating_rows([(f"e{i:02d}", "solo", "I", "T", int(x)) for i, x in enumerate(scores)])
    row = preferences(table, [("T", "I")], Bootstrap(draws=20_000, seed=3, method="linear")).iloc[0]
    ref = stats.bootstrap((scores,), np.mean, n_resamples=20_000, method="percentile", confidence_level=0.95,
                          random_state=np.random.default_rng(11)).confidence_interval
    assert row["mean"] == pytest.approx(scores.mean())
    assert row["ci_low"] == pytest.approx(ref.low, abs=0.06) and row["ci_high"] == pytest.approx(ref.high, abs=0.06)


def test_ratings_are_turned_towards_the_condition_and_repeats_do_not_count():
    table = pd.concat([rating_rows([("e1", "r", "T", "I", -2), ("e2", "r", "I", "T", 1)]),
                       rating_rows([("e1", "r", "I", "T", 2)], repeat=1)])
    row = preferences(table, [("T", "I")], Bootstrap(draws=200, seed=0)).iloc[0]
    assert row["mean"] == 1.5 and row["n_ratings"] == 2 and row["n_prefer"] == 2  # (2 + 1) / 2


def test_consistency_compares_each_repeat_with_its_first_showing():
    first = rating_rows([("e1", "r", "I", "T", 2), ("e2", "r", "I", "T", -1), ("e1", "q", "T", "I", 0)])
    again = rating_rows([("e1", "r", "T", "I", -1), ("e2", "r", "T", "I", -1), ("e1", "q", "I", "T", 0)], repeat=1)
    c = consistency(pd.concat([first, again])).set_index("rater")
    # r: e1 2 then 1 (turned: −(−1)) → same sign, |2 − 1| = 1; e2 −1 then +1 → differs, 2; q: 0 and 0 → same, 0
    assert c.loc["r", "n_repeats"] == 2 and c.loc["r", "n_same"] == 1 and c.loc["r", "mean_abs_diff"] == 1.5
    assert c.loc["q", "share_same"] == 1 and c.loc["all", "n_same"] == 2 and c.loc["all", "n_repeats"] == 3


def test_text_ends_follow_the_traces_joining_rule():
    text, ends = text_ends(["Hello", "wor", "ld again"], [False, False, True])
    assert text == "Hello world again" and ends.tolist() == [5, 9, 17]


def test_excerpts_end_where_both_conditions_end_a_request():
    rate = 10
    text = "a b c d"
    # immediate: one request per word, 1 s each, with a 1 s wait before "c"; timer: "a b" and "c d"
    imm = Requests(text, np.array([1, 3, 5, 7]), np.array([0, 10, 30, 40]), np.array([10, 20, 40, 50]))
    tim = Requests(text, np.array([3, 7]), np.array([5, 25]), np.array([25, 45]))
    spans, too_long = shared_spans([imm, tim], rate, excerpt_s=2.5)
    assert [(s.char_start, s.char_stop) for s in spans] == [(0, 3), (3, 7)] and too_long == 0
    assert spans[0].samples == ((0, 20), (5, 25)) and spans[1].samples == ((30, 50), (25, 45))
    assert words_of(text, spans[1]) == "c d"
    whole, _ = shared_spans([imm, tim], rate, excerpt_s=5)
    assert [(s.char_start, s.char_stop) for s in whole] == [(0, 7)]  # 5 s under immediate (waits included)
    none, skipped = shared_spans([imm, tim], rate, excerpt_s=1.5)
    assert none == [] and skipped == 2
