"""Segmented array operations: running sums and maxima that restart at each output.

Parts of many outputs live in one flat array sorted by output; ``codes`` gives each
part's output number (0..n-1, contiguous). The loops run in pandas' compiled groupby
kernels, which accumulate sequentially within each segment, so results do not depend on
what precedes the segment (no global cumulative sum to subtract). Integer input stays
integer (int64 nanoseconds in playback), so sums and maxima are exact.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def seg_cumsum(values: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Running sum of ``values`` restarting at each segment (same length, same dtype kind)."""
    return pd.Series(values).groupby(codes, sort=False).cumsum().to_numpy()


def seg_cummax(values: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Running maximum of ``values`` restarting at each segment (same length)."""
    return pd.Series(values).groupby(codes, sort=False).cummax().to_numpy()


def seg_shift(values: np.ndarray, codes: np.ndarray, fill: float) -> np.ndarray:
    """The previous element within the segment (``fill`` at each segment start)."""
    out = np.empty_like(values)
    out[1:] = values[:-1]
    starts = segment_starts(codes)
    out[starts] = fill
    return out


def segment_starts(codes: np.ndarray) -> np.ndarray:
    """Positions (into the flat array) where each segment starts, in order (empty for no codes)."""
    if len(codes) == 0:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])


def seg_sum(values: np.ndarray, codes: np.ndarray, n: int) -> np.ndarray:
    """Sum per segment (length ``n``; 0 for a segment without elements). Integers are
    summed exactly in int64, floats in float64."""
    values = np.asarray(values)
    if values.dtype.kind not in "iu":
        return np.bincount(codes, weights=values, minlength=n) if len(codes) else np.zeros(n)
    out = np.zeros(n, np.int64)
    if len(codes):
        starts = segment_starts(codes)
        out[codes[starts]] = np.add.reduceat(values.astype(np.int64), starts)
    return out


def seg_first(values: np.ndarray, codes: np.ndarray, n: int, fill=np.nan) -> np.ndarray:
    """The first value of each segment (length ``n``; ``fill`` for a segment without elements)."""
    out = np.full(n, fill, dtype=np.result_type(values.dtype, type(fill)))
    starts = segment_starts(codes)
    out[codes[starts]] = values[starts]
    return out


def seg_last(values: np.ndarray, codes: np.ndarray, n: int, fill=np.nan) -> np.ndarray:
    """The last value of each segment (length ``n``; ``fill`` for a segment without elements)."""
    out = np.full(n, fill, dtype=np.result_type(values.dtype, type(fill)))
    if len(codes):
        ends = np.r_[segment_starts(codes)[1:] - 1, len(codes) - 1]
        out[codes[ends]] = values[ends]
    return out


def seg_argmax_last(values: np.ndarray, codes: np.ndarray, n: int) -> np.ndarray:
    """Position (into the flat array) of the last maximum of each segment (equal values
    tie; the last wins); -1 if empty."""
    out = np.full(n, -1, dtype=np.int64)
    if len(codes) == 0:
        return out
    seg_max = pd.Series(values).groupby(codes, sort=False).transform("max").to_numpy()
    hits = np.flatnonzero(values == seg_max)
    out[codes[hits]] = hits  # later positions overwrite earlier ones: the last maximum
    return out
