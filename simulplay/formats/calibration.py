"""The calibration table (``calibration.parquet``, written by ``simulplay live --predict``):
the calibrated slowdown of shared servers per number of requests in flight.

Columns :data:`CAL_COLUMNS`; a reader needs ``in_flight`` (whole numbers ≥ 1, distinct) and
``slowdown`` (> 0) and ignores the others. The slowdown is kept as canonical points ``n:f;…``
(each factor as Python's ``repr``, numbers ascending). A bad value is refused in one line
naming the source, the row and the column.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from simulplay.core.errors import InputError
from simulplay.formats.load import read_level_table

#: Columns of the calibration table, in order.
CAL_COLUMNS = ("in_flight", "requests", "busy_s", "isolated_s", "slowdown")
ACCEPTED = ("a factor > 0 (1.2), points n:f;… (1:1.05;4:1.3) or a calibration table with columns in_flight "
            "(whole numbers ≥ 1, distinct) and slowdown (> 0)")


def flight_points(levels, factors) -> str:
    """The canonical text ``n:f;…`` (numbers ascending) of checked levels and factors."""
    pairs = sorted(zip((int(n) for n in levels), (float(f) for f in factors)))
    return ";".join(f"{n}:{f!r}" for n, f in pairs)


def read_calibration(path: str | Path) -> str:
    """A calibration table's canonical points, every row checked."""
    if not Path(path).exists():
        raise InputError.at(path, "no such file (a slowdown is a factor, n:f;… points or a table)",
                            accepted=ACCEPTED)
    levels, factors = read_level_table(path, "in_flight", "slowdown", ACCEPTED)
    return flight_points(*checked_flight(levels, factors, str(path)))


def checked_flight(levels: np.ndarray, factors: np.ndarray, source: str) -> tuple[np.ndarray, np.ndarray]:
    """Numbers in flight and factors, checked row by row (numbers ≥ 1, distinct; factors > 0)
    and sorted by number; errors name ``source``, the row and the column."""
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
