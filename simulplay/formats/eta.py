"""The η tables (``simulplay eta``, ``eta.parquet``/``.csv`` of a run): their columns.

The η table has one row per panel and condition other than the reference (the panel keys,
then :data:`ETA_COLUMNS`); the contrast table one per panel and pair ``p1``, ``p2``
(:data:`CONTRAST_COLUMNS`); the per-talk table one per panel, talk and condition
(:data:`PER_TALK_COLUMNS`, the seconds behind each η). Values in seconds, counts of talks.
"""

from __future__ import annotations

ETA_COLUMNS = ("condition", "n_talks", "delta_ref_s", "delta_s", "eta_s", "ci_low_s", "ci_high_s",
               "n_negative", "n_zero", "n_positive", "duration_part_s", "idle_part_s")
CONTRAST_COLUMNS = ("p1", "p2", "n_talks", "delta_p1_s", "delta_p2_s", "diff_s", "ci_low_s",
                    "ci_high_s", "n_negative", "n_zero", "n_positive", "duration_part_s", "idle_part_s")
PER_TALK_COLUMNS = ("talk_id", "condition", "delta_ref_s", "delta_s", "eta_s", "duration_part_s", "idle_part_s")
