"""One row of a paired talk-bootstrap table: the equal-talk mean of per-talk values, its
interval from the panel's index matrix, the direction counts and the mean duration and
idle parts. The η table, the buffered-policy contrasts and the cross-backend interaction
are all built from it, so their columns mean the same thing everywhere."""

from __future__ import annotations

from typing import Any

import numpy as np

from simulplay.analysis.bootstrap import Bootstrap, direction_counts


def paired_row(value: str, values: Any, duration_part: Any, idle_part: Any, boot: Bootstrap,
               indices: np.ndarray) -> dict[str, Any]:
    """``{value: mean, ci_low_s, ci_high_s, n_negative, n_zero, n_positive, duration_part_s,
    idle_part_s}`` for one panel's per-talk ``values`` (seconds, talks in the order of the
    index matrix ``indices``, ``draws × n_talks``); the parts are the per-talk duration and
    idle parts of the same values (they sum to them), averaged with equal talk weights.
    Values within ``boot.tie_tolerance`` of zero are ties: taken as 0 and counted in
    ``n_zero``."""
    v = boot.ties(values)
    low, high = boot.interval(v, indices)
    neg, zero, pos = direction_counts(v, boot.tie_tolerance)
    return {value: v.mean(), "ci_low_s": low, "ci_high_s": high, "n_negative": neg, "n_zero": zero,
            "n_positive": pos,
            "duration_part_s": np.asarray(duration_part, dtype=float).mean(),
            "idle_part_s": np.asarray(idle_part, dtype=float).mean()}
