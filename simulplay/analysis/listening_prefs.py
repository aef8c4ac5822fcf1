"""Listening-test results: the preference between conditions with a paired bootstrap over
excerpts and raters, and each rater's consistency on the repeated pairs
(docs/quality.md#listening-tests).

A rating is on −2 … +2: −2 A much better, −1 A better, 0 no preference, +1 B better, +2 B
much better. For a pair of conditions ``(condition, versus)`` a rating is turned towards
``condition``: the rating itself when ``condition`` was played as B, its negative when it was
A. Only each trial's first showing counts (its repeat is for consistency).

The bootstrap resamples excerpts and raters together (a crossed bootstrap): one seeded NumPy
generator draws an index matrix of excerpts (``draws × n_excerpts``), then one of raters
(``draws × n_raters``); every comparison is resampled with the same two matrices. A draw's
value is the mean of the turned ratings over every (excerpt, rater) cell of its resample, each
counted as often as its excerpt times its rater was drawn (cells without a rating left out).
The interval ends are read off the draws' values with the settings of
:class:`~simulplay.analysis.bootstrap.Bootstrap` (quantile method or order statistic).

Consistency: for every trial shown twice to one rater (sides swapped the second time), whether
both ratings, turned towards one condition, have the same sign (−, 0, +), and their absolute
difference.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from simulplay.analysis.bootstrap import Bootstrap, order_ranks

PREFERENCE_COLUMNS = ("condition", "versus", "n_excerpts", "n_raters", "n_ratings", "mean", "ci_low", "ci_high",
                      "n_prefer", "n_prefer_versus", "n_equal", "share_prefer")
CONSISTENCY_COLUMNS = ("rater", "n_repeats", "n_same", "share_same", "mean_abs_diff")


def turned(ratings: pd.DataFrame, condition: str, versus: str) -> pd.DataFrame:
    """The first showings of the trials that compare ``condition`` with ``versus``, with
    ``score``: the rating turned towards ``condition`` (module docstring)."""
    first = ratings[ratings["repeat"] == 0]
    b_is = (first["condition_b"] == condition) & (first["condition_a"] == versus)
    a_is = (first["condition_a"] == condition) & (first["condition_b"] == versus)
    out = first[b_is | a_is].copy()
    out["score"] = np.where(b_is[b_is | a_is], out["rating"], -out["rating"]).astype(float)
    return out


def draw_indices(boot: Bootstrap, n_excerpts: int, n_raters: int) -> tuple[np.ndarray, np.ndarray]:
    """The two index matrices (module docstring): excerpts, then raters, from one generator."""
    rng = np.random.default_rng(boot.seed)
    return (rng.integers(0, n_excerpts, size=(boot.draws, n_excerpts)),
            rng.integers(0, n_raters, size=(boot.draws, n_raters)))


def draw_means(scores: np.ndarray, idx_e: np.ndarray, idx_r: np.ndarray) -> np.ndarray:
    """Each draw's mean of an ``excerpts × raters`` matrix (NaN: no rating) over its resample."""
    present = np.isfinite(scores)
    s = np.where(present, scores, 0.0)
    w_e = np.stack([np.bincount(row, minlength=scores.shape[0]) for row in idx_e]).astype(float)
    w_r = np.stack([np.bincount(row, minlength=scores.shape[1]) for row in idx_r]).astype(float)
    num = np.einsum("be,er,br->b", w_e, s, w_r)
    den = np.einsum("be,er,br->b", w_e, present.astype(float), w_r)
    with np.errstate(invalid="ignore", divide="ignore"):
        return num / den


def interval(means: np.ndarray, boot: Bootstrap) -> tuple[float, float]:
    """Interval ends of the draws' values (draws without any rating left out), by ``boot``'s method."""
    m = means[np.isfinite(means)]
    if len(m) == 0:
        return float("nan"), float("nan")
    if boot.is_order_statistic:
        lo, hi = order_ranks(boot.method, len(m), boot.confidence)
        ends = np.partition(m, [lo - 1, hi - 1])
        return float(ends[lo - 1]), float(ends[hi - 1])
    alpha = round((1 - boot.confidence) / 2, 12)
    low, high = np.quantile(m, [alpha, 1 - alpha], method=boot.method)
    return float(low), float(high)


def preferences(ratings: pd.DataFrame, comparisons: Sequence[tuple[str, str]], boot: Bootstrap) -> pd.DataFrame:
    """One row per comparison ``(condition, versus)``: the mean turned rating (positive:
    ``condition`` preferred) with its interval, and the counts (:data:`PREFERENCE_COLUMNS`)."""
    excerpts = sorted(set(ratings["excerpt"]))
    raters = sorted(set(ratings["rater"]))
    idx_e, idx_r = draw_indices(boot, len(excerpts), len(raters))
    rows = []
    for condition, versus in comparisons:
        t = turned(ratings, condition, versus)
        grid = t.pivot_table(index="excerpt", columns="rater", values="score", aggfunc="mean")
        grid = grid.reindex(index=excerpts, columns=raters)
        low, high = interval(draw_means(grid.to_numpy(float), idx_e, idx_r), boot)
        s = t["score"].to_numpy()
        rows.append({"condition": condition, "versus": versus, "n_excerpts": int(t["excerpt"].nunique()),
                     "n_raters": int(t["rater"].nunique()), "n_ratings": len(s),
                     "mean": float(s.mean()) if len(s) else float("nan"), "ci_low": low, "ci_high": high,
                     "n_prefer": int((s > 0).sum()), "n_prefer_versus": int((s < 0).sum()),
                     "n_equal": int((s == 0).sum()), "share_prefer": float((s > 0).mean()) if len(s) else float("nan")})
    return pd.DataFrame(rows, columns=list(PREFERENCE_COLUMNS))


def consistency(ratings: pd.DataFrame) -> pd.DataFrame:
    """Per rater and for all raters (``rater`` = ``all``): the repeated trials, how many were
    rated the same way both times, that share, and the mean absolute difference of the two
    ratings turned towards one condition (module docstring)."""
    rows, every = [], []
    for rater, df in ratings.groupby("rater", sort=True):
        pairs = []
        for rep in df[df["repeat"] == 1].itertuples(index=False):
            same = df[(df["repeat"] == 0) & (df["excerpt"] == rep.excerpt)
                      & (df["condition_a"].isin([rep.condition_a, rep.condition_b]))
                      & (df["condition_b"].isin([rep.condition_a, rep.condition_b]))]
            if len(same):
                first = same.iloc[0]
                a = float(first["rating"]) if first["condition_b"] == rep.condition_b else -float(first["rating"])
                pairs.append((a, float(rep.rating)))
        every += pairs
        rows.append(_consistency_row(str(rater), pairs))
    rows.append(_consistency_row("all", every))
    return pd.DataFrame(rows, columns=list(CONSISTENCY_COLUMNS))


def _consistency_row(rater: str, pairs: list[tuple[float, float]]) -> dict:
    n = len(pairs)
    same = sum(np.sign(a) == np.sign(b) for a, b in pairs)
    return {"rater": rater, "n_repeats": n, "n_same": int(same), "share_same": same / n if n else float("nan"),
            "mean_abs_diff": float(np.mean([abs(a - b) for a, b in pairs])) if n else float("nan")}
