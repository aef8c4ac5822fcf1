"""Paired talk bootstrap (docs/concepts.md#the-paired-talk-bootstrap).

One seeded generator draws one index matrix of talks (``draws × n_talks``); every
condition and contrast of a panel is resampled with the same matrix, so all conditions
of a talk stay together. Three settings fix the matrix:

* the generator (``rng``, :data:`RNGS`): ``numpy``, ``np.random.default_rng(seed)
  .integers(0, n_talks, size=(draws, n_talks))`` (PCG64); or ``python``, the standard
  library's ``random.Random(seed)`` (Mersenne Twister) with one ``randrange(n_talks)`` per
  cell, row by row (draw 1's talks first, then draw 2's, …);
* the seed (0 is a seed);
* the talk order (``talk_order``, :data:`TALK_ORDERS`): column ``j`` of the matrix is the
  ``j``-th talk, either of the talk ids ``sorted`` as text (code-point order: ``"1102"``
  before ``"792"``) or in the ``given`` order (first appearance in the input table).

Intervals are read off the ``n`` resampled equal-talk means (``n`` = draws) in one of two
ways, named by ``method``:

* a NumPy quantile method (``linear``, ``inverted_cdf``, … : :data:`NUMPY_METHODS`),
  ``np.quantile(means, [α, 1 − α], method=…)``;
* an order-statistic convention (:data:`ORDER_CONVENTIONS`): with the means sorted,
  ``X₍₁₎ ≤ … ≤ X₍ₙ₎``, and ``α = (1 − confidence) / 2``, the interval is
  ``[X₍ₗ₎, X₍ᵤ₎]`` with

  - ``order:floor((n+1)a)``: ``l = ⌊(n + 1)·α⌋``, ``u = n + 1 − l`` — the (n+1)α-th order
    statistic of the percentile interval (Davison & Hinkley 1997, §5.2), rounded down when
    (n + 1)α is not a whole number; 10,000 draws at 95 %: the 250th and 9,751st;
  - ``order:floor(na)+1``: ``l = ⌊n·α⌋ + 1``, ``u = n + 1 − l`` — drop the ``⌊n·α⌋``
    lowest and highest means and take the extremes of the rest (Koehn 2004); 1,000 draws
    at 95 %: the 26th and 975th, 10,000 draws: the 251st and 9,750th;
  - ``order:int(nq)`` (:data:`PAPER_METHOD`): the sorted means at 0-based positions
    ``int(n·q)`` for ``q = α`` and ``q = 1 − α`` (``sorted(means)[int(n * q)]``), i.e.
    ``l = ⌊n·α⌋ + 1``, ``u = ⌊n·(1 − α)⌋ + 1``; 10,000 draws at 95 %: the 251st and 9,751st
    (there the same ranks as NumPy's ``higher``; with few draws the two differ: 5 draws at
    80 %, the 1st and 5th here, the 2nd and 5th under ``higher``).

  ``α`` is taken as the exact decimal it prints as (0.025, not 0.025000000000000022), so
  ``(n + 1)·α`` is exact; ranks stay within 1…n: with too few draws for the level
  (``(n + 1)·α < 1``) ``order:floor((n+1)a)`` gives the smallest and largest mean.

Defaults (:class:`Bootstrap`): NumPy's generator, seed 1032026, sorted talk ids and
``order:floor((n+1)a)`` (:data:`ENDPOINT_METHOD`) for every full-talk endpoint interval;
the word-timing table NumPy's ``linear`` with seed 20261005 (Truong & Le (2026), Table
17, name both). That paper's full-talk intervals say only "seed 1032026 and the recorded
order-statistic convention"; the preset ``paper`` (:data:`PRESETS`: the ``python``
generator and :data:`PAPER_METHOD`) reproduces every interval end it prints for per-talk
values it prints (its Tables 2, 4 and 5 and Appendix C.4, with the talks in the order of
the table they come from; tests/analysis/test_bootstrap_paper.py).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from math import floor
from typing import Any

import numpy as np

NUMPY_METHODS = (
    "inverted_cdf", "averaged_inverted_cdf", "closest_observation", "interpolated_inverted_cdf",
    "hazen", "weibull", "linear", "median_unbiased", "normal_unbiased",
    "lower", "higher", "midpoint", "nearest",
)

#: Order-statistic conventions: name → the 1-based ranks ``(l, u)`` of the lower and upper
#: end for ``n`` sorted values and tail ``α`` (exact).
ORDER_CONVENTIONS: dict[str, Callable[[int, Fraction], tuple[int, int]]] = {
    "order:floor((n+1)a)": lambda n, a: (floor((n + 1) * a), n + 1 - floor((n + 1) * a)),
    "order:floor(na)+1": lambda n, a: (floor(n * a) + 1, n - floor(n * a)),
    "order:int(nq)": lambda n, a: (floor(n * a) + 1, floor(n * (1 - a)) + 1),
}
QUANTILE_METHODS = NUMPY_METHODS + tuple(ORDER_CONVENTIONS)
RNGS = ("numpy", "python")
TALK_ORDERS = ("sorted", "given")
ENDPOINT_METHOD = "order:floor((n+1)a)"  # full-talk η, contrasts, interactions, edges, blocks
ENDPOINT_SEED = 1032026
ENDPOINT_RNG = "numpy"
PAPER_METHOD = "order:int(nq)"
#: Named settings: preset → the Bootstrap fields it sets. ``paper``: the generator and
#: the ranks that reproduce Truong & Le (2026)'s printed intervals (module docstring).
PRESETS: dict[str, dict[str, str]] = {"paper": {"rng": "python", "method": PAPER_METHOD}}
#: Per-talk values whose magnitude is below this (in the values' unit: 1 µs for seconds)
#: are ties: they count as zero, neither negative nor positive, and are taken as 0.
TIE_TOLERANCE = 1e-6
WORD_TIMING_SEED = 20261005  # Truong & Le (2026), Table 17 (Appendix E.3), with NumPy's linear
WORD_TIMING_METHOD = "linear"


def snap_ties(values: Any, tolerance: float = TIE_TOLERANCE) -> np.ndarray:
    """``values`` as floats with every magnitude below ``tolerance`` set to exactly 0 (a
    float or nanosecond residue is no direction); NaN stays NaN."""
    v = np.array(values, dtype=np.float64)
    v[np.abs(v) < tolerance] = 0.0
    return v


def direction_counts(values: Any, tolerance: float = TIE_TOLERANCE) -> tuple[int, int, int]:
    """Values below ``-tolerance``, within it of zero (ties) and above ``+tolerance``: the
    talks moving each way and those that do not move (NaN counts in none)."""
    v = snap_ties(values, tolerance)
    return int((v < 0).sum()), int((v == 0).sum()), int((v > 0).sum())


def order_ranks(method: str, n: int, confidence: float) -> tuple[int, int]:
    """The 1-based ranks ``(l, u)`` of the interval ends under an order-statistic
    convention, for ``n`` sorted values at ``confidence``; each within 1…n."""
    alpha = Fraction(repr(round((1 - confidence) / 2, 12)))
    low, high = ORDER_CONVENTIONS[method](n, alpha)
    return min(max(1, low), n), min(max(1, high), n)


class PresetError(ValueError):
    """A bootstrap preset that is unknown, or that a given setting contradicts."""


def apply_preset(name: str, given: Mapping[str, Any], defaults: Mapping[str, Any],
                 names: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The fields of preset ``name`` (:data:`PRESETS`) over ``given`` (field → value); a
    given value that is neither its default nor the preset's is a :class:`PresetError`
    naming the field as ``names`` spells it (a flag, a TOML key)."""
    if name not in PRESETS:
        raise PresetError(f"unknown bootstrap preset '{name}' (known: {', '.join(PRESETS)})")
    out = dict(given)
    for key, value in PRESETS[name].items():
        if given.get(key, defaults.get(key)) not in (defaults.get(key), value):
            shown = (names or {}).get(key, key)
            raise PresetError(f"preset '{name}' sets {shown} {value}, not {given[key]}")
        out[key] = value
    return out


@lru_cache(maxsize=32)
def _python_indices(seed: int, draws: int, n_talks: int) -> np.ndarray:
    """``random.Random(seed)``: one ``randrange(n_talks)`` per cell, row-major; read-only."""
    gen = random.Random(seed)
    cells = [gen.randrange(n_talks) for _ in range(draws * n_talks)]
    idx = np.array(cells, dtype=np.int64).reshape(draws, n_talks)
    idx.setflags(write=False)
    return idx


@dataclass(frozen=True)
class Bootstrap:
    """Settings of the paired talk bootstrap; recorded in every signature."""

    draws: int = 10_000
    seed: int = ENDPOINT_SEED
    method: str = ENDPOINT_METHOD
    confidence: float = 0.95
    rng: str = ENDPOINT_RNG
    talk_order: str = "sorted"
    tie_tolerance: float = TIE_TOLERANCE

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
        if self.rng not in RNGS:
            raise ValueError(f"unknown bootstrap generator '{self.rng}' (one of {', '.join(RNGS)})")
        if self.talk_order not in TALK_ORDERS:
            raise ValueError(f"unknown talk order '{self.talk_order}' (one of {', '.join(TALK_ORDERS)})")
        if not self.tie_tolerance >= 0:
            raise ValueError(f"the tie tolerance must be ≥ 0, got {self.tie_tolerance}")

    @classmethod
    def preset(cls, name: str | None, *, names: Mapping[str, str] | None = None, **fields: Any) -> Bootstrap:
        """The one builder of a bootstrap from what a user gave (the command line's flags, the
        API's keywords, an experiment's ``[analysis]`` keys): ``fields`` the settings given
        (one left out keeps its default) under preset ``name`` (:data:`PRESETS`; ``None``: no
        preset), which sets ``rng`` and ``method``: given as well, they must be the preset's.
        A :class:`PresetError` names such a field as ``names`` spells it (a flag, a keyword,
        a TOML key); any other bad value is a ValueError. Each caller locates the errors."""
        if name is not None:
            fields = apply_preset(name, fields, {}, names=names)
        return cls(**fields)

    def to_dict(self) -> dict[str, Any]:
        """Every setting by field name (``draws``, ``seed``, ``method``, ``confidence``,
        ``rng``, ``talk_order``, ``tie_tolerance``); :meth:`from_dict` rebuilds the settings."""
        return {"draws": self.draws, "seed": self.seed, "method": self.method, "confidence": self.confidence,
                "rng": self.rng, "talk_order": self.talk_order, "tie_tolerance": self.tie_tolerance}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Bootstrap:
        """The settings of :meth:`to_dict`'s output (a ValueError names a bad one)."""
        return cls(**data)

    @classmethod
    def from_signature(cls, sig: Mapping[str, Any]) -> Bootstrap:
        """The settings a signature records (:meth:`signature`); a signature written before
        the generator, the talk order and the tie tolerance were recorded means NumPy's,
        sorted talks and no tolerance (only exact zeros were ties)."""
        return cls(draws=int(sig["draws"]), seed=int(sig["boot_seed"]), method=str(sig["quantile"]),
                   confidence=float(sig["confidence"]), rng=str(sig.get("boot_rng", "numpy")),
                   talk_order=str(sig.get("talk_order", "sorted")), tie_tolerance=float(sig.get("tie_tolerance", 0)))

    @property
    def is_order_statistic(self) -> bool:
        """Whether the interval ends are order statistics (``order:…``), not NumPy quantiles."""
        return self.method in ORDER_CONVENTIONS

    def signature(self) -> dict:
        """The settings as signature keys: ``draws``, ``boot_seed``, ``quantile``,
        ``confidence``, ``boot_rng``, ``talk_order`` and ``tie_tolerance``."""
        return {"draws": self.draws, "boot_seed": self.seed, "quantile": self.method,
                "confidence": self.confidence, "boot_rng": self.rng, "talk_order": self.talk_order,
                "tie_tolerance": self.tie_tolerance}

    def ties(self, values: Any) -> np.ndarray:
        """``values`` as floats with those within :attr:`tie_tolerance` of zero set to 0."""
        return snap_ties(values, self.tie_tolerance)

    def order_talks(self, talks: Iterable[str]) -> list[str]:
        """The talks as the index matrix's columns: ``sorted`` (as text) or as ``given``
        (first appearance; repeats dropped)."""
        unique = list(dict.fromkeys(talks))
        return sorted(unique) if self.talk_order == "sorted" else unique

    def indices(self, n_talks: int) -> np.ndarray:
        """The shared ``draws × n_talks`` index matrix (module docstring: the generators)."""
        if self.rng == "python":
            return _python_indices(self.seed, self.draws, n_talks)
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
