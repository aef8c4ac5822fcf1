"""Small panels: the note every η (and contrast) table carries when a panel has fewer
than :data:`SMALL_PANEL_TALKS` talks.

With n talks the paired talk bootstrap can only resample those n values, so its
percentile interval is close to the range of the per-talk values (with 3 talks a 95 %
interval reaches nearly from the smallest to the largest): it describes the talks at
hand, not a population. The note says so once per small panel, puts the direction counts
first (talks below / at / above zero of n, per condition; ties shown only when there are
any) and, when the per-talk values are at hand, shows each condition's per-talk range beside its interval.

The note is not part of any signature (it changes no number); it is a line printed under
the table (``note: …``), written under Markdown tables and kept in Parquet metadata
(``notes``), and shown under the report's tables.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from simulplay.core.keys import PANEL_KEYS

#: Panels with fewer talks than this get the note.
SMALL_PANEL_TALKS = 10


def small_panel_notes(table: pd.DataFrame, per_talk: pd.DataFrame | None = None, *, value: str = "eta_s",
                      name: str = "condition", symbol: str = "η", brief: bool = False, unit: str = "s") -> list[str]:
    """One note per panel of ``table`` (an η or contrast table: ``n_talks``, ``ci_low_s``,
    ``ci_high_s``, ``n_negative``, ``n_zero``, ``n_positive``) with fewer than
    :data:`SMALL_PANEL_TALKS` talks; ``per_talk`` (columns panel keys, ``name`` and
    ``value``) adds each condition's per-talk range. ``name`` is the column naming a row
    (``condition``; ``p1`` for contrasts), ``symbol`` what the counts count, ``unit`` the
    values' unit (empty: none shown). ``brief`` leaves the counts to the table's own
    ``n_negative`` / ``n_zero`` / ``n_positive`` columns."""
    if table is None or table.empty or "n_talks" not in table:
        return []
    keys = [k for k in PANEL_KEYS if k in table]
    groups = table.groupby(keys, sort=False) if keys else [((), table)]
    notes = []
    for key, panel in groups:
        key = key if isinstance(key, tuple) else (key,)
        n = int(panel["n_talks"].max())
        if n >= SMALL_PANEL_TALKS:
            continue
        named = [(k, v) for k, v in zip(keys, key) if table[k].nunique() > 1]  # keys that tell panels apart
        where = " (" + ", ".join(f"{k} {v}" for k, v in named) + ")" if named else ""
        head = (f"small panel{where}: {n} talks, fewer than {SMALL_PANEL_TALKS}, so the bootstrap interval is close "
                "to the range of the per-talk values")
        if brief:
            notes.append(f"{head}; read the direction counts (n_negative / n_zero / n_positive of n_talks) first")
            continue
        unit_s = f" {unit}" if unit else ""
        counts = "; ".join(_counts(row, name, symbol, _range(per_talk, keys, key, row[name], name, value, unit_s),
                                   unit_s)
                           for row in panel.to_dict("records"))
        notes.append(f"{head}; read the direction counts first: {counts}")
    return notes


def _counts(row: dict, name: str, symbol: str, talk_range: str, unit_s: str = " s") -> str:
    label = row[name] if name != "p1" else f"{row['p1']} − {row['p2']}"
    n = int(row["n_talks"])
    zero = tie_count(row)
    ties = f", {symbol}=0 in {zero}/{n}" if zero else ""
    text = f"{label} {symbol}<0 in {int(row['n_negative'])}/{n}{ties}, {symbol}>0 in {int(row['n_positive'])}/{n}"
    interval = f"interval {row['ci_low_s']:.3f} to {row['ci_high_s']:.3f}{unit_s}"
    return f"{text} ({interval}{talk_range})" if pd.notna(row["ci_low_s"]) else text


def tie_count(row) -> int:
    """A row's ``n_zero`` (ties: talks within the tolerance of zero); a row written before
    ties were counted: ``n_talks − n_negative − n_positive``."""
    zero = row.get("n_zero") if hasattr(row, "get") else getattr(row, "n_zero", None)
    if zero is not None and pd.notna(zero):
        return int(zero)
    get = row.get if hasattr(row, "get") else lambda k: getattr(row, k)
    return int(get("n_talks")) - int(get("n_negative")) - int(get("n_positive"))


def _range(per_talk: pd.DataFrame | None, keys: Sequence[str], key: tuple, cond: str, name: str, value: str,
           unit_s: str = " s") -> str:
    """``, per-talk −0.41 to 0.80 s`` for the panel's condition, or nothing."""
    if per_talk is None or per_talk.empty or value not in per_talk or name not in per_talk:
        return ""
    rows = per_talk[per_talk[name] == cond]
    for k, v in zip(keys, key):
        if k in rows:
            rows = rows[rows[k].astype(str) == str(v)]
    vals = pd.to_numeric(rows[value], errors="coerce").dropna()
    return f", per-talk {vals.min():.3f} to {vals.max():.3f}{unit_s}" if len(vals) else ""


def counts_first(frame: pd.DataFrame, after: str = "eta_s") -> pd.DataFrame:
    """``frame`` with ``n_negative``, ``n_zero`` and ``n_positive`` moved right after
    ``after`` (the order of a small panel's table: the direction counts before the interval)."""
    counts = [c for c in ("n_negative", "n_zero", "n_positive") if c in frame]
    if after not in frame or not counts:
        return frame
    cols = [c for c in frame.columns if c not in counts]
    at = cols.index(after) + 1
    return frame[cols[:at] + counts + cols[at:]]


def report_note(n_talks: int) -> list[str]:
    """The report-wide note for a run of ``n_talks`` talks (none for 10 or more)."""
    if n_talks >= SMALL_PANEL_TALKS:
        return []
    return [f"Small panel: {n_talks} talk(s), fewer than {SMALL_PANEL_TALKS}. Every interval here resamples only "
            "these talks, so it is close to the range of the per-talk values and says little beyond them; the "
            "direction counts (talks with η < 0 / η = 0 / η > 0 of n) come first in Table 2 and are the sturdier "
            "reading."]
