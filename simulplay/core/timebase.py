"""Exact time for simulation: integer nanoseconds (int64) behind every sum and comparison.

Conventions
-----------
* **Seconds to nanoseconds, once, at the edge.** A time or duration given in float
  seconds is taken to the nearest whole nanosecond of the float's exact binary value,
  ties to even (:func:`to_ns`; the product with 10⁹ is carried exactly, so a value like
  ``1/1024`` s, exactly 976 562.5 ns, goes to 976 562). That is the only rounding of a
  float input. From there on, sums, differences, maxima and comparisons are integer
  arithmetic: a part ready exactly when the previous one ends is a tie, never a sliver
  of idle, and no tolerance is needed anywhere.
* **Durations from sample counts.** ``n`` samples at ``sr`` Hz last exactly
  ``n·10⁹/sr`` ns; :func:`dur_ns` takes that to the nearest ns (ties to even) in
  integers. Rounding each part separately would let ``m`` parts drift by up to ``m/2`` ns,
  so :func:`part_dur_ns` rounds *running totals* instead: within an output of one sample
  rate, part ``j`` lasts ``dur_ns(N_j) − dur_ns(N_{j−1})`` with ``N_j`` the samples of
  parts ``0..j``. Every running total (the audio ``D`` and each ``Σ_{i≤j} d_i`` of the
  playback recurrence) is then within 0.5 ns of exact, however many parts; one part's
  duration within 1 ns. Exact sums of samples exist only within one rate, so an output
  mixing sample rates rounds each part (≤ 0.5 ns per part).
* **Float seconds that are summed** (a hand-written manifest's ``audio_s``, every
  ``service_s``) are values given per part, so each is taken to its nearest ns like any
  other time and the integer sums are exact sums of those: they differ from sums of the
  unrounded floats by at most ``m/2`` ns over ``m`` parts (hand-written values with at
  most nine decimals are whole nanoseconds and do not move at all; measured service
  times are noisy by microseconds).
* **Range.** int64 holds ±2⁶³ ns, about ±292.3 years; :func:`to_ns` and :func:`dur_ns`
  refuse anything beyond with :class:`TimeRangeError` (a ``ValueError``), which callers
  turn into an :class:`~simulplay.core.errors.InputError` naming the file and field.
* **Back to seconds only when writing tables** (:func:`from_ns`): the nearest float to
  ``ns/10⁹`` (exact for ``|ns| < 2⁵³``, about 104 days), so ``to_ns(from_ns(t)) == t``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

NS_PER_S = 1_000_000_000
#: The largest magnitude in seconds that int64 nanoseconds hold (2⁶³ ns, about 292.3 years).
MAX_S = 2.0**63 / NS_PER_S
#: A sample rate above this would make one sample shorter than 1 ns.
MAX_SAMPLE_RATE = NS_PER_S

_SPLIT = 134217729.0  # 2**27 + 1: Veltkamp's split of a double into two 26-bit halves
_NS_HI, _NS_LO = 1e9, 0.0  # 10⁹ has 21 significant bits: it is its own high half


class TimeRangeError(ValueError):
    """A time that int64 nanoseconds cannot hold (beyond about ±292 years, or not finite)."""


def to_ns(seconds) -> np.ndarray:
    """Float seconds (scalar or array) as int64 nanoseconds: the nearest whole nanosecond to
    the float's exact value, ties to even. Raises :class:`TimeRangeError` for a value that
    is not finite or lies beyond ±``MAX_S`` seconds.

    The product ``x·10⁹`` is formed exactly as ``p + e`` (Dekker's two-product: ``p`` the
    rounded product, ``e`` its exact error), so rounding decides on the true value, not on
    a product that a float rounding may have pushed across a half nanosecond.
    """
    x = np.asarray(seconds, dtype=np.float64)
    p = x * 1e9
    bad = ~(np.abs(p) < 2.0**63)  # NaN, ±inf and out-of-range in one test
    if bad.any():
        v = x[bad].flat[0] if x.ndim else float(x)
        raise TimeRangeError(f"{v:g} s is not a time within ±292 years")
    c = _SPLIT * x
    hi = c - (c - x)
    lo = x - hi
    e = ((hi * _NS_HI - p) + hi * _NS_LO + lo * _NS_HI) + lo * _NS_LO
    n = np.rint(p)  # half to even on p alone
    d = p - n  # exact (Sterbenz); |d| ≤ 0.5
    whole = n.astype(np.int64)
    # p's fraction is exactly ±0.5: the error e decides; e = 0 is a true tie and rint's even n stands
    step = (d == 0.5) & (e > 0)
    step = step.astype(np.int64) - ((d == -0.5) & (e < 0))
    # p is a whole number (always so beyond 2⁵²): round e itself, a tie to the even total
    low = np.floor(e)
    frac = e - low  # exact: e and its floor are close
    up = (frac > 0.5) | ((frac == 0.5) & ((whole + low.astype(np.int64)) % 2 != 0))
    rest = low.astype(np.int64) + up
    out = whole + np.where(d == 0, rest, step)
    return out if out.ndim else np.int64(out)


def scalar_ns(seconds: float) -> int:
    """:func:`to_ns` of one float in Python integers (the same nearest whole nanosecond to
    the float's exact value, ties to even; the same :class:`TimeRangeError`): the exact
    ratio ``x = p/q`` gives ``x·10⁹ = (p·10⁹)/q``, rounded by integer division."""
    x = float(seconds)
    if not abs(x) * 1e9 < 2.0**63:
        raise TimeRangeError(f"{x:g} s is not a time within ±292 years")
    p, q = x.as_integer_ratio()
    n, r = divmod(p * NS_PER_S, q)
    return n + (1 if 2 * r > q or (2 * r == q and n % 2) else 0)


def scalar_dur_ns(n_samples: int, sample_rate: int) -> int:
    """:func:`dur_ns` of one sample count in Python integers (the same rounding and checks)."""
    n, sr = int(n_samples), int(sample_rate)
    if n < 0:
        raise ValueError("sample counts must be ≥ 0")
    if n == 0:
        return 0
    if not 1 <= sr <= MAX_SAMPLE_RATE:
        raise ValueError(f"sample rates must be 1..{MAX_SAMPLE_RATE} Hz for audio")
    if n // sr >= int(MAX_S):
        raise TimeRangeError("a sample count beyond 292 years of audio")
    q, r = divmod(n * NS_PER_S, sr)
    return q + (1 if 2 * r > sr or (2 * r == sr and q % 2) else 0)


def from_ns(ns) -> np.ndarray | float:
    """Int64 nanoseconds as float64 seconds (the nearest float for ``|ns| < 2⁵³``)."""
    a = np.asarray(ns)
    out = a.astype(np.float64) / NS_PER_S
    return out if out.ndim else float(out)


def dur_ns(n_samples, sample_rate) -> np.ndarray:
    """The duration of ``n_samples`` samples at ``sample_rate`` Hz in int64 nanoseconds:
    the nearest ns to ``n·10⁹/sr``, ties to even, in exact integer arithmetic.

    ``n ≥ 0``; ``sr`` in 1..10⁹ where ``n > 0`` (a silent part needs no rate). Raises
    :class:`TimeRangeError` beyond ±292 years and ``ValueError`` for a bad count or rate.
    """
    n = np.asarray(n_samples, dtype=np.int64)
    sr = np.asarray(sample_rate, dtype=np.int64)
    n, sr = np.broadcast_arrays(n, sr)
    if (n < 0).any():
        raise ValueError("sample counts must be ≥ 0")
    sounding = n > 0
    if ((sr[sounding] < 1) | (sr[sounding] > MAX_SAMPLE_RATE)).any():
        raise ValueError(f"sample rates must be 1..{MAX_SAMPLE_RATE} Hz for audio")
    sr = np.where(sounding, sr, 1)
    whole_s, part = np.divmod(n, sr)  # n = whole_s·sr + part, part < sr ≤ 10⁹
    if (whole_s >= int(MAX_S)).any():
        raise TimeRangeError("a sample count beyond 292 years of audio")
    q, rem = np.divmod(part * NS_PER_S, sr)  # part·10⁹ < 10¹⁸ < 2⁶³
    up = (2 * rem > sr) | ((2 * rem == sr) & (q % 2 == 1))
    out = whole_s * NS_PER_S + q + up
    return out if out.ndim else np.int64(out)


def part_dur_ns(codes: np.ndarray, n_samples: np.ndarray, sample_rate: np.ndarray) -> np.ndarray:
    """Per-part durations (int64 ns) of parts sorted by output (``codes`` as in
    :mod:`simulplay.sim.segments`), from running totals of samples (module docstring).

    Within an output whose sounding parts share one rate, part ``j`` lasts
    ``dur_ns(N_j, sr) − dur_ns(N_{j−1}, sr)`` (``N``: running sample total), so every
    running sum of durations is within 0.5 ns of exact. An output mixing rates gets
    ``dur_ns(n_j, sr_j)`` per part. Silent parts (``n = 0``) last 0 and need no rate.
    """
    codes = np.asarray(codes)
    n = np.asarray(n_samples, dtype=np.int64)
    sr = np.asarray(sample_rate, dtype=np.int64)
    if len(n) == 0:
        return np.zeros(0, np.int64)
    rates = pd.Series(np.where(n > 0, sr, np.nan)).groupby(codes, sort=False)
    lo = rates.transform("min").fillna(1).to_numpy().astype(np.int64)
    one_rate = lo == rates.transform("max").fillna(1).to_numpy()
    total = pd.Series(n).groupby(codes, sort=False).cumsum().to_numpy(np.int64)
    ends, starts = dur_ns(total, lo), dur_ns(total - n, lo)
    if one_rate.all():
        return ends - starts
    per_part = dur_ns(n, sr)
    return np.where(one_rate, ends - starts, per_part)
