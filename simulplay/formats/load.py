"""The load table (``simulplay load``) and the load curve it gives shared-server replay.

The load table has one row per level of ``--concurrency`` (:data:`LOAD_COLUMNS`). Its columns
``concurrency`` (whole numbers ≥ 1, distinct, 1 among them) and ``service_p50_s`` (the median
service seconds at that level, > 0) make it a load curve that ``replay --load-curve`` reads as
it is (other columns are ignored); the curve is kept as canonical text ``c:p50;…`` (each p50
as Python's ``repr``, levels ascending), so one curve read from CSV or Parquet has one text.
:func:`read_level_table` reads any table of whole-number levels and a value per level (the
load curve here, the calibration table in :mod:`simulplay.formats.calibration`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from simulplay.core.errors import InputError

#: Columns of the load table, in order (``concurrency`` and ``service_p50_s`` make it a load
#: curve that ``replay --load-curve`` reads as it is).
LOAD_COLUMNS = (
    "concurrency", "requests", "ok", "failed", "failures", "warm_failed",
    "ttfa_p50_s", "ttfa_p95_s", "ttfa_p99_s", "first_byte_p50_s", "first_byte_p95_s", "first_byte_p99_s",
    "service_p50_s", "service_p95_s", "rtf_p50", "rtf_p95", "underran", "audio_s", "wall_s", "audio_per_s",
    "lateness_p50_ms", "lateness_p99_ms", "lateness_max_ms",
)
CURVE_ACCEPTED = ("a table with columns concurrency (whole numbers ≥ 1, distinct, 1 among them) and "
                  "service_p50_s (median service seconds > 0)")


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


def curve_points(levels, p50s) -> str:
    """The canonical text ``c:p50;…`` (levels ascending) of a checked curve."""
    pairs = sorted(zip((int(c) for c in levels), (float(p) for p in p50s)))
    return ";".join(f"{c}:{p!r}" for c, p in pairs)


def read_load_curve(path: str | Path) -> str:
    """A load table's canonical curve points (module docstring), every row checked; errors
    are one line naming the file, the row and the column (exit code 2)."""
    levels, p50s = read_level_table(path, "concurrency", "service_p50_s", CURVE_ACCEPTED)
    return curve_points(*checked_curve(levels, p50s, str(path)))


def checked_curve(levels: np.ndarray, p50s: np.ndarray, source: str) -> tuple[np.ndarray, np.ndarray]:
    """A curve's levels and p50 seconds, checked row by row (levels ≥ 1, distinct, 1 among
    them; p50 > 0) and sorted by level; errors name ``source``, the row and the column."""
    def refuse(i: int, field: str, message: str):
        raise InputError.at(source, message, row=i + 1, field=field, accepted=CURVE_ACCEPTED)

    for i, (c, p) in enumerate(zip(levels, p50s)):
        if c < 1:
            refuse(i, "concurrency", f"concurrency {c} is not ≥ 1")
        if not (np.isfinite(p) and p > 0):
            refuse(i, "service_p50_s", f"service_p50_s '{p}' is not a number > 0")
    seen = pd.Index(levels).duplicated()
    if seen.any():
        i = int(np.flatnonzero(seen)[0])
        refuse(i, "concurrency", f"concurrency {levels[i]} repeats")
    if 1 not in set(levels.tolist()):
        raise InputError.at(source, "has no row at concurrency 1 (the isolated service slowdowns divide by)",
                            field="concurrency", accepted=CURVE_ACCEPTED)
    order = np.argsort(levels)
    return levels[order], p50s[order]
