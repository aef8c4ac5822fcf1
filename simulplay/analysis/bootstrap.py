"""Paired talk bootstrap (SPEC §5).

One seeded generator draws one index matrix of talks (``draws × n_talks``); every
condition and contrast of a panel is resampled with the same matrix, so all conditions
of a talk stay together. Intervals are quantiles of the resampled equal-talk means,
computed with any NumPy quantile ``method``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

QUANTILE_METHODS = (
    "inverted_cdf", "averaged_inverted_cdf", "closest_observation", "interpolated_inverted_cdf",
    "hazen", "weibull", "linear", "median_unbiased", "normal_unbiased",
    "lower", "higher", "midpoint", "nearest",
)


@dataclass(frozen=True)
class Bootstrap:
    """Settings of the paired talk bootstrap; recorded in every signature."""

    draws: int = 10_000
    seed: int = 1032026
    method: str = "linear"
    confidence: float = 0.95

    def __post_init__(self):
        if self.draws < 1:
            raise ValueError(f"draws must be ≥ 1, got {self.draws}")
        if self.seed < 0:
            raise ValueError(f"the bootstrap seed must be ≥ 0 (NumPy seeds are non-negative), got {self.seed}")
        if self.method not in QUANTILE_METHODS:
            raise ValueError(f"unknown quantile method '{self.method}'")
        if not 0 < self.confidence < 1:
            raise ValueError(f"confidence must be in (0, 1), got {self.confidence}")

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
        of ``idx``, in the values' own unit (seconds for η)."""
        means = np.asarray(per_talk, dtype=np.float64)[idx].mean(axis=1)
        alpha = round((1 - self.confidence) / 2, 12)  # 0.025, not 0.025000000000000022
        low, high = np.quantile(means, [alpha, 1 - alpha], method=self.method)
        return float(low), float(high)
