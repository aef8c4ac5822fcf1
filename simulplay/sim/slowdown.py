"""The calibrated slowdown of shared servers (docs/many-listeners.md, "The calibrated
slowdown"): a factor by which a server works more slowly than the isolated synthesis
measured, per number of requests **in flight** at the group's servers when a request
starts (queued or in service, the request itself included).

Where a load curve's ``slowdown(c)`` is keyed by the requests *in service* (at most K, so
with one worker always 1), this one is keyed by the requests in flight, which a serial
server also meets: ``flight(n)`` is linear between listed numbers and flat beyond the
first and the last; one factor ``F`` alone is ``1:F``, the same factor at every number.

Given as a factor (``1.21``), as canonical points ``n:f;…`` (each factor as Python's
``repr``, numbers ascending) or as a calibration table (CSV or Parquet, the
``calibration.parquet`` that ``simulplay live --predict`` writes) with columns
``in_flight`` (whole numbers ≥ 1, distinct) and ``slowdown`` (> 0); other columns are
ignored. A bad value is refused in one line naming the source, the row and the column.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from simulplay.core.errors import InputError

ACCEPTED = ("a factor > 0 (1.2), points n:f;… (1:1.05;4:1.3) or a calibration table with columns in_flight "
            "(whole numbers ≥ 1, distinct) and slowdown (> 0)")


def flight_points(levels, factors) -> str:
    """The canonical text ``n:f;…`` (numbers ascending) of checked levels and factors."""
    pairs = sorted(zip((int(n) for n in levels), (float(f) for f in factors)))
    return ";".join(f"{n}:{f!r}" for n, f in pairs)


def parse_flight(text: str, source: str) -> str:
    """The canonical points of a factor, of points ``n:f;…`` or of a calibration table's
    path; ``""`` for an empty text."""
    text = str(text).strip()
    if not text:
        return ""
    try:
        factor = float(text)
    except ValueError:
        factor = None
    if factor is not None:
        return flight_points(*_checked(np.array([1]), np.array([factor]), source))
    if ":" in text and not Path(text).exists():
        try:
            pairs = [item.split(":") for item in text.split(";")]
            levels, factors = [int(n) for n, _ in pairs], [float(f) for _, f in pairs]
        except ValueError as e:
            raise InputError.at(source, f"slowdown '{text}' is not n:f;… points", accepted=ACCEPTED) from e
        return flight_points(*_checked(np.array(levels), np.array(factors), source))
    return read_calibration(text)


def read_calibration(path: str | Path) -> str:
    """A calibration table's canonical points, every row checked."""
    if not Path(path).exists():
        raise InputError.at(path, "no such file (a slowdown is a factor, n:f;… points or a table)",
                            accepted=ACCEPTED)
    levels, factors = read_level_table(path, "in_flight", "slowdown", ACCEPTED)
    return flight_points(*_checked(levels, factors, str(path)))


def read_level_table(path: str | Path, level: str, value: str, accepted: str) -> tuple[np.ndarray, np.ndarray]:
    """A table of whole-number levels ≥ 1 (column ``level``: requests in flight or in service)
    and a value per level (column ``value``, as floats, checked by the caller); errors are one
    line naming the file, the row and the column (exit code 2)."""
    from simulplay.core.tables import read_table

    df, _ = read_table(path)
    for col in (level, value):
        if col not in df:
            raise InputError.at(path, f"has no column '{col}'", field=col, accepted=accepted)
    if df.empty:
        raise InputError.at(path, "has no rows", accepted=accepted)
    levels = pd.to_numeric(df[level], errors="coerce").to_numpy(float)
    bad = ~(np.isfinite(levels) & (levels >= 1) & (levels == np.floor(levels)))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError.at(path, f"{level} '{df[level].iloc[i]}' is not a whole number ≥ 1", row=i + 1,
                            field=level, accepted=accepted)
    return levels.astype(np.int64), pd.to_numeric(df[value], errors="coerce").to_numpy(float)


def _checked(levels: np.ndarray, factors: np.ndarray, source: str) -> tuple[np.ndarray, np.ndarray]:
    for i, (n, f) in enumerate(zip(levels, factors)):
        if n < 1:
            raise InputError.at(source, f"in_flight {n} is not ≥ 1", row=i + 1, field="in_flight", accepted=ACCEPTED)
        if not (np.isfinite(f) and f > 0):
            raise InputError.at(source, f"slowdown '{f}' is not a number > 0", row=i + 1, field="slowdown",
                                accepted=ACCEPTED)
    seen = pd.Index(levels).duplicated()
    if seen.any():
        i = int(np.flatnonzero(seen)[0])
        raise InputError.at(source, f"in_flight {levels[i]} repeats", row=i + 1, field="in_flight",
                            accepted=ACCEPTED)
    order = np.argsort(levels)
    return levels[order], factors[order]


def flight_factors(points: str, n_max: int) -> list[float] | None:
    """``flight(n)`` for n = 0..n_max (index 0 unused): linear between listed numbers, flat
    beyond; ``None`` without points (slowdown 1 whatever is in flight)."""
    if not points:
        return None
    pairs = [item.split(":") for item in points.split(";")]
    levels, factors = np.array([int(n) for n, _ in pairs]), np.array([float(f) for _, f in pairs])
    n = np.arange(0, max(n_max, 1) + 1)
    return np.interp(n, levels, factors).tolist()
