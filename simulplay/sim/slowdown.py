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
ignored. This module never opens a file: the table is read and checked in its home,
:mod:`simulplay.formats.calibration`, by whoever takes the user's text (``--slowdown``, a
spec's ``slowdown=TABLE``: :mod:`simulplay.formats.service_spec`), and this module parses
the factor or the points. A bad value is refused in one line naming the source, the row and
the column.
"""

from __future__ import annotations

import numpy as np

from simulplay.core.errors import InputError
from simulplay.formats.calibration import ACCEPTED, checked_flight, flight_points


def parse_flight(text: str, source: str) -> str:
    """The canonical points of a factor or of points ``n:f;…``; ``""`` for an empty text. A
    calibration table is read before (:func:`simulplay.formats.service_spec.read_slowdown`)."""
    text = str(text).strip()
    if not text:
        return ""
    try:
        factor = float(text)
    except ValueError:
        factor = None
    if factor is not None:
        return flight_points(*checked_flight(np.array([1]), np.array([factor]), source))
    if ":" not in text:
        raise InputError.at(source, f"slowdown '{text}' is neither a factor nor n:f;… points (a calibration table "
                            "is read before the text is parsed: simulplay.formats.service_spec.read_slowdown)",
                            accepted=ACCEPTED)
    try:
        pairs = [item.split(":") for item in text.split(";")]
        levels, factors = [int(n) for n, _ in pairs], [float(f) for _, f in pairs]
    except ValueError as e:
        raise InputError.at(source, f"slowdown '{text}' is not n:f;… points", accepted=ACCEPTED) from e
    return flight_points(*checked_flight(np.array(levels), np.array(factors), source))


def flight_factors(points: str, n_max: int) -> list[float] | None:
    """``flight(n)`` for n = 0..n_max (index 0 unused): linear between listed numbers, flat
    beyond; ``None`` without points (slowdown 1 whatever is in flight)."""
    if not points:
        return None
    pairs = [item.split(":") for item in points.split(";")]
    levels, factors = np.array([int(n) for n, _ in pairs]), np.array([float(f) for _, f in pairs])
    n = np.arange(0, max(n_max, 1) + 1)
    return np.interp(n, levels, factors).tolist()
