"""Paired talk bootstrap (docs/concepts.md#the-paired-talk-bootstrap).

One seeded generator draws one index matrix of talks (``draws × n_talks``); every
condition and contrast of a panel is resampled with the same matrix, so all conditions
of a talk stay together. Intervals are read off the ``n`` resampled equal-talk means
(``n`` = draws) in one of two ways, named by ``method``:

* a NumPy quantile method (``linear``, ``inverted_cdf``, … : :data:`NUMPY_METHODS`),
  ``np.quantile(means, [α, 1 − α], method=…)``;
* an order-statistic convention (:data:`ORDER_CONVENTIONS`): with the means sorted,
  ``X₍₁₎ ≤ … ≤ X₍ₙ₎``, and ``α = (1 − confidence) / 2``, the interval is
  ``[X₍ₖ₎, X₍ₙ₊₁₋ₖ₎]`` with

  - ``order:floor((n+1)a)``: ``k = ⌊(n + 1)·α⌋`` — the (n+1)α-th order statistic of the
    percentile interval (Davison & Hinkley 1997, §5.2), rounded down when (n + 1)α is not
    a whole number; 10,000 draws at 95 %: the 250th and 9,751st;
  - ``order:floor(na)+1``: ``k = ⌊n·α⌋ + 1`` — drop the ``⌊n·α⌋`` lowest and highest
    means and take the extremes of the rest (Koehn 2004); 1,000 draws at 95 %: the 26th
    and 975th, 10,000 draws: the 251st and 9,750th.

  ``α`` is taken as the exact decimal it prints as (0.025, not 0.025000000000000022), so
  ``(n + 1)·α`` is exact; ``k`` is at least 1: with too few draws for the level
  (``(n + 1)·α < 1``) the interval is the smallest and largest mean.

The full-talk endpoint intervals default to ``order:floor((n+1)a)`` (:data:`ENDPOINT_METHOD`,
the paper's "order-statistic convention"); the word-timing table to NumPy's ``linear``
with seed 20261005 (the paper's Appendix E.3).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from math import floor

import numpy as np

NUMPY_METHODS = (
    "inverted_cdf", "averaged_inverted_cdf", "closest_observation", "interpolated_inverted_cdf",
    "hazen", "weibull", "linear", "median_unbiased", "normal_unbiased",
    "lower", "higher", "midpoint", "nearest",
)

#: Order-statistic conventions: name → the 1-based rank ``k`` of the lower end for ``n``
#: sorted values and tail ``α`` (exact); the upper end is the ``(n + 1 − k)``-th.
ORDER_CONVENTIONS: dict[str, Callable[[int, Fraction], int]] = {
    "order:floor((n+1)a)": lambda n, a: floor((n + 1) * a),
    "order:floor(na)+1": lambda n, a: floor(n * a) + 1,
}
QUANTILE_METHODS = NUMPY_METHODS + tuple(ORDER_CONVENTIONS)
ENDPOINT_METHOD = "order:floor((n+1)a)"  # full-talk η, contrasts, interactions, edges, blocks
ENDPOINT_SEED = 1032026
WORD_TIMING_SEED = 20261005  # the paper's Table 17 (Appendix E.3), with NumPy's linear
WORD_TIMING_METHOD = "linear"


def order_ranks(method: str, n: int, confidence: float) -> tuple[int, int]:
    """The 1-based ranks ``(k, n + 1 − k)`` of the interval ends under an order-statistic
    convention, for ``n`` sorted values at ``confidence``."""
    alpha = Fraction(repr(round((1 - confidence) / 2, 12)))
    k = min(max(1, ORDER_CONVENTIONS[method](n, alpha)), n)
    return k, n + 1 - k


@dataclass(frozen=True)
class Bootstrap:
    """Settings of the paired talk bootstrap; recorded in every signature."""

    draws: int = 10_000
    seed: int = ENDPOINT_SEED
    method: str = ENDPOINT_METHOD
    confidence: float = 0.95

    def __post_init__(self):
        if self.draws < 1:
            raise ValueError(f"draws must be ≥ 1, got {self.draws}")
        if self.seed < 0:
            raise ValueError(f"the bootstrap seed must be ≥ 0 (NumPy seeds are non-negative), got {self.seed}")
        if self.method not in QUANTILE_METHODS:
            raise ValueError(f"unknown quantile method '{self.method}' (a NumPy quantile method, or one of "
                             f"{', '.join(ORDER_CONVENTIONS)})")
        if not 0 < self.confidence < 1:
            raise ValueError(f"confidence must be in (0, 1), got {self.confidence}")

    @property
    def is_order_statistic(self) -> bool:
        """Whether the interval ends are order statistics (``order:…``), not NumPy quantiles."""
        return self.method in ORDER_CONVENTIONS

    def signature(self) -> dict:
        """The settings as signature keys: ``draws``, ``boot_seed``, ``quantile``, ``confidence``."""
        return {"draws": self.draws, "boot_seed": self.seed, "quantile": self.method,
                "confidence": self.confidence}

    def indices(self, n_talks: int) -> np.ndarray:
        """The shared ``draws × n_talks`` index matrix."""
        rng = np.random.default_rng(self.seed)
        return rng.integers(0, n_talks, size=(self.draws, n_talks))

    def interval(self, per_talk: np.ndarray, idx: np.ndarray) -> tuple[float, float]:
        """Percentile interval (low, high) of the mean of ``per_talk`` values over the draws
        of ``idx``, in the values' own unit (seconds for η): a NumPy quantile method or an
        order statistic of the sorted means (module docstring)."""
        means = np.asarray(per_talk, dtype=np.float64)[idx].mean(axis=1)
        if self.is_order_statistic:
            lo, hi = order_ranks(self.method, len(means), self.confidence)
            ends = np.partition(means, [lo - 1, hi - 1])
            return float(ends[lo - 1]), float(ends[hi - 1])
        alpha = round((1 - self.confidence) / 2, 12)  # 0.025, not 0.025000000000000022
        low, high = np.quantile(means, [alpha, 1 - alpha], method=self.method)
        return float(low), float(high)
