"""The η tables (``simulplay eta``, ``eta.parquet``/``.csv`` of a run): their columns.

The η table has one row per panel and condition other than the reference (the panel keys,
then :data:`ETA_COLUMNS`); the contrast table one per panel and pair ``p1``, ``p2``
(:data:`CONTRAST_COLUMNS`); the per-talk table one per panel, talk and condition
(:data:`PER_TALK_COLUMNS`, the seconds behind each η). Values in seconds, counts of talks.
A table written before ties were counted lacks ``n_zero``; :func:`with_ties` adds it.
"""

from __future__ import annotations

import pandas as pd

ETA_COLUMNS = ("condition", "n_talks", "delta_ref_s", "delta_s", "eta_s", "ci_low_s", "ci_high_s",
               "n_negative", "n_zero", "n_positive", "duration_part_s", "idle_part_s")
CONTRAST_COLUMNS = ("p1", "p2", "n_talks", "delta_p1_s", "delta_p2_s", "diff_s", "ci_low_s",
                    "ci_high_s", "n_negative", "n_zero", "n_positive", "duration_part_s", "idle_part_s")
PER_TALK_COLUMNS = ("talk_id", "condition", "delta_ref_s", "delta_s", "eta_s", "duration_part_s", "idle_part_s")


def with_ties(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with an ``n_zero`` column (talks neither below nor above zero) right after
    ``n_negative`` when a table written before ties were counted lacks it:
    ``n_talks − n_negative − n_positive``."""
    if "n_zero" in df or not {"n_talks", "n_negative", "n_positive"} <= set(df.columns):
        return df
    out = df.copy()
    zero = pd.to_numeric(out["n_talks"]) - pd.to_numeric(out["n_negative"]) - pd.to_numeric(out["n_positive"])
    out.insert(list(out.columns).index("n_negative") + 1, "n_zero", zero)
    return out


def without_ties(columns: tuple[str, ...]) -> tuple[str, ...]:
    """``columns`` less ``n_zero`` (what a table written before ties were counted has)."""
    return tuple(c for c in columns if c != "n_zero")
