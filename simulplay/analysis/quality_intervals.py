"""The interval table of ``simulplay quality``: every per-output score through the paired talk
bootstrap (:func:`simulplay.analysis.table_bootstrap.bootstrap_table`), per panel (system,
backend, realization): each condition's equal-talk mean, and each condition's Δ against the
reference (``condition − reference``), with intervals and direction counts. A talk without a
finite score under every condition of its panel (every request too short to embed, a
single-request output without joins) is left out of that score's rows and counted in
``n_talks_left_out``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from simulplay.analysis.bootstrap import Bootstrap
from simulplay.analysis.table_bootstrap import PAIR_SIGN, bootstrap_table
from simulplay.core.signature import merge
from simulplay.scorers import dnsmos

SIMILARITY_COLUMNS = ("similarity_output", "similarity_reference")
#: The scores that a quality run's ``conditions`` limits; joins are scored on every output.
LIMITED = (*dnsmos.SCORES, *SIMILARITY_COLUMNS, "similarity_whole_reference")
DELTA_COLUMNS = ("metric", "condition", "n_talks", "mean", "ci_low", "ci_high", "n_negative", "n_zero",
                 "n_positive", "n_talks_left_out")


def score_columns(outputs: pd.DataFrame, keys: Sequence[str]) -> list[str]:
    """The per-output score columns that get intervals: every numeric column but the keys and counts."""
    skip = {*keys, "audio_s", "n_requests", "n_embedded", "n_too_short", "dnsmos_windows", "n_words", "n_joins"}
    return [c for c in outputs.columns if c not in skip and pd.api.types.is_numeric_dtype(outputs[c])]


def interval_table(outputs: pd.DataFrame, keys: list[str], ref: str, boot: Bootstrap,
                   sig: Mapping[str, Any], limited: Sequence[str] = (),
                   upstream: Mapping[tuple, Mapping[str, Any]] | None = None,
                   ) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """Per panel and score: each condition's mean and its Δ against ``ref``, with paired
    talk-bootstrap intervals (module docstring); one signature per row, which starts from
    ``upstream[(panel values, condition)]`` (the replay's, as the η table's rows do; a Δ row:
    its condition's). The scores of :data:`LIMITED` compare only the ``limited`` conditions
    when given."""
    panel_keys = [k for k in keys if k not in ("talk_id", "condition")]
    rows, sigs = [], []
    panels = outputs.groupby(panel_keys, sort=False) if panel_keys else [((), outputs)]
    for panel, frame in panels:
        panel = panel if isinstance(panel, tuple) else (panel,)
        for col in score_columns(outputs, keys):
            df = frame[frame["condition"].isin(limited)] if limited and col in LIMITED else frame
            conditions = list(dict.fromkeys(df["condition"]))
            wide = df.pivot(index="talk_id", columns="condition", values=col)
            complete = wide.notna().all(axis=1) & np.isfinite(wide.astype(float)).all(axis=1)
            kept = df[df["talk_id"].isin(wide.index[complete])]
            if len(kept) == 0 or ref not in conditions:
                continue
            pairs = [f"{c},{ref}" for c in conditions if c != ref]
            res = bootstrap_table(kept, value=[col], by=["condition"], pairs=pairs, boot=boot, source="quality")
            for r in res.table.to_dict("records"):
                rows.append({**dict(zip(panel_keys, panel)), "metric": col, **r,
                             "n_talks_left_out": int((~complete).sum())})
                first = str(r["condition"]).partition(PAIR_SIGN)[0]
                sigs.append(merge((upstream or {}).get((panel, first)), sig, res.signature,
                                  {"table": "quality-intervals", "value": "metric"}))
    return pd.DataFrame(rows, columns=[*panel_keys, *DELTA_COLUMNS]), sigs
