"""Paired block comparison of continuing sessions (Truong & Le (2026), Appendix F, Table 18).

For every block of a system, ``ΔB = B(condition) − B(reference)`` with
``B = C_last − a_last`` (seconds). Rows give the mean over blocks (each block weighs
equally), a paired source bootstrap interval (blocks resampled with replacement, both
conditions of a block together: one seeded index matrix per system), the counts of
blocks finishing later / earlier, how many pairs produced identical samples, and the
duration and idle parts of ΔB (they sum to it, because ``a_last`` is the same in a pair).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from simulplay.analysis.bootstrap import Bootstrap
from simulplay.core.errors import IncompleteError

KEYS = ["talk_id", "system", "block_first_seq"]
COMPARE_ORDER = ("system", "condition", "reference", "n_blocks", "b_ref_s", "b_s", "delta_b_s", "ci_low_s",
                 "ci_high_s", "n_later", "n_earlier", "identical_audio", "duration_part_s", "idle_part_s", "excluded")


def compare_blocks(summary: pd.DataFrame, *, reference: str, boot: Bootstrap,
                   allow_incomplete: bool = False) -> pd.DataFrame:
    """One row per (system, condition ≠ reference)."""
    failed = summary[(summary["error"] != "") | summary["b_s"].isna()]
    if len(failed) and not allow_incomplete:
        first = failed.iloc[0]
        raise IncompleteError(f"{len(failed)} session(s) failed, e.g. talk_id={first['talk_id']}, "
                              f"system={first['system']}, block {first['block_first_seq']}, "
                              f"condition={first['condition']}: {first['error'] or 'no audio'} "
                              "(pass --allow-incomplete to exclude their blocks and count them)")
    bad_blocks = set(map(tuple, failed[KEYS].to_numpy().tolist()))
    ok = summary[[tuple(k) not in bad_blocks for k in summary[KEYS].to_numpy().tolist()]]
    ref = ok[ok["condition"] == reference].set_index(KEYS)
    rows = []
    for (system, condition), g in ok[ok["condition"] != reference].groupby(["system", "condition"], sort=True):
        g = g.set_index(KEYS)
        r = ref.loc[g.index]
        delta = boot.ties(g["b_s"] - r["b_s"])  # within the tie tolerance of 0: neither later nor earlier
        idx = boot.indices(len(delta))
        low, high = boot.interval(delta, idx)
        n_excluded = len({k for k in bad_blocks if k[1] == system})
        rows.append({
            "system": system, "condition": condition, "reference": reference, "n_blocks": len(delta),
            "b_ref_s": float(r["b_s"].mean()), "b_s": float(g["b_s"].mean()), "delta_b_s": float(delta.mean()),
            "ci_low_s": low, "ci_high_s": high, "n_later": int((delta > 0).sum()),
            "n_earlier": int((delta < 0).sum()),
            "identical_audio": int((g["audio_key"].to_numpy() == r["audio_key"].to_numpy()).sum()),
            "duration_part_s": float((g["audio_s"] - r["audio_s"]).mean()),
            "idle_part_s": float((g["idle_s"] - r["idle_s"]).mean()), "excluded": n_excluded,
        })
    if not rows:
        raise IncompleteError(f"no complete block pairs against the reference condition '{reference}'")
    return pd.DataFrame(rows, columns=list(COMPARE_ORDER)).astype({"n_blocks": np.int64})
