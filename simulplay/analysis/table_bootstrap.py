"""Paired talk-bootstrap intervals for any per-talk table (``simulplay bootstrap``).

A per-talk table holds one number per talk and condition, computed anywhere (by
``simulplay eta --per-talk``, by another pipeline, or typed from a paper's appendix), in
one of two shapes:

* wide: one row per talk; each value column is a condition (``--value eta2,eta4``);
* long: one row per talk and condition, the condition named by one or more columns
  (``--by backend``), one value column (``--value eta_s``).

For every condition the result gives the equal-talk mean, its paired talk-bootstrap
interval and the talks below, at and above zero (a value within the bootstrap's tie
tolerance of zero, 1e-6 in the values' unit by default, is a tie and taken as 0); for
every pair ``A,B`` the same for the per-talk difference ``A − B``. One index matrix
(:class:`~simulplay.analysis.bootstrap.Bootstrap`: generator, seed, draws, talk order)
resamples the talks of every condition and pair together, as ``eta`` does within a panel,
so the same settings give ``eta``'s intervals from its per-talk table. Values keep the
table's own unit. Every talk needs a value under every condition: a gap, a repeated talk
or a cell that is no number is refused with its row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from simulplay.analysis.bootstrap import Bootstrap, direction_counts
from simulplay.analysis.small_panels import small_panel_notes
from simulplay.core.errors import InputError
from simulplay.core.fields import Checker
from simulplay.core.signature import base_signature, merge

COLUMNS = ("condition", "n_talks", "mean", "ci_low", "ci_high", "n_negative", "n_zero", "n_positive")
PAIR_SIGN = " − "  # U+2212, as η(B1) − η(B2)


@dataclass
class TableBootstrap:
    """One row per condition, then per pair (:data:`COLUMNS`; means and ends in the
    values' unit), one signature for all rows, the per-talk values behind them (columns
    ``talk_id``, ``condition``, ``value``; pairs as ``A − B``), the talks in the index
    matrix's column order and the small-panel notes."""

    table: pd.DataFrame
    signature: dict[str, Any]
    per_talk: pd.DataFrame
    talks: list[str]
    notes: list[str] = field(default_factory=list)


def bootstrap_table(df: pd.DataFrame, *, value: Sequence[str], by: Sequence[str] = (),
                    pairs: Sequence[str] = (), talk: str = "talk_id", boot: Bootstrap | None = None,
                    source: str = "table") -> TableBootstrap:
    """Intervals for the per-talk table ``df`` (cells may be text, as CSV is read):
    ``value`` names the value column(s) (several: wide; one with ``by``: long), ``by`` the
    condition column(s) of a long table, ``pairs`` the differences (``"A,B"``: conditions,
    i.e. value columns of a wide table or conditions of a long one; a condition holding a
    comma is found by trying each split), ``talk`` the talk id column. Bad input is an
    :class:`InputError` naming the file (``source``), row and column."""
    boot = boot or Bootstrap()
    values, conditions, talk_ids = _values(df, list(value), list(by), talk, source)
    talks = boot.order_talks(talk_ids)
    series = {c: boot.ties(values[c].loc[talks].to_numpy(np.float64)) for c in conditions}
    for text in pairs:
        a, b = parse_condition_pair(text, conditions, source)
        series[f"{a}{PAIR_SIGN}{b}"] = boot.ties(series[a] - series[b])
    idx = boot.indices(len(talks))
    rows = []
    for name, v in series.items():
        low, high = boot.interval(v, idx)
        neg, zero, pos = direction_counts(v, boot.tie_tolerance)
        rows.append({"condition": name, "n_talks": len(talks), "mean": float(v.mean()), "ci_low": low,
                     "ci_high": high, "n_negative": neg, "n_zero": zero, "n_positive": pos})
    table = pd.DataFrame(rows, columns=list(COLUMNS))
    per_talk = pd.DataFrame([{"talk_id": t, "condition": name, "value": float(x)}
                             for name, v in series.items() for t, x in zip(talks, v)],
                            columns=["talk_id", "condition", "value"])
    sig = merge({"table": "bootstrap", "value": ",".join(value), "by": ",".join(by) or None},
                boot.signature(), base_signature())
    renamed = table.rename(columns={"ci_low": "ci_low_s", "ci_high": "ci_high_s"})
    notes = small_panel_notes(renamed, per_talk, value="value", symbol="", unit="")
    return TableBootstrap(table, sig, per_talk, talks, notes)


def parse_condition_pair(text: str, conditions: Sequence[str], source: str = "table",
                         flag: str = "--pair") -> tuple[str, str]:
    """``A,B``: two different known conditions; with commas inside the names, the one
    split whose halves are both conditions."""
    parts = text.split(",")
    splits = [(",".join(parts[:i]).strip(), ",".join(parts[i:]).strip()) for i in range(1, len(parts))]
    known = [(a, b) for a, b in splits if a in conditions and b in conditions and a != b]
    if len(known) == 1:
        return known[0]
    why = "is ambiguous" if known else "is not a pair of two different conditions"
    raise InputError.at(source, f"'{text}' {why}", field=flag,
                        accepted="A,B with A and B among " + ", ".join(conditions))


def _values(df: pd.DataFrame, value: list[str], by: list[str], talk: str,
            source: str) -> tuple[dict[str, pd.Series], list[str], list[str]]:
    """Condition → values indexed by talk id, the conditions and the talk ids in the
    table's order; every problem located."""
    if len(df) == 0:
        raise InputError.at(source, "has no rows", accepted="a per-talk table: one row per talk (and condition)")
    if by and len(value) != 1:
        raise InputError.at(source, f"--by with {len(value)} value columns", field="--value",
                            accepted="one --value column in a long table (one row per talk and condition)")
    check = Checker(source, df)
    wanted = list(dict.fromkeys([talk, *by, *value]))
    check.require_columns(wanted, "per-talk table")
    talks = check.strings(talk)
    keys = [check.strings(c) for c in by]
    numbers = {c: check.numbers(c, accepted="a finite number") for c in value}
    check.raise_if_any()
    labels = ["/".join(k) for k in zip(*keys)] if by else [""] * len(df)
    seen: dict[tuple[str, str], int] = {}
    for i, key in enumerate(zip(talks, labels)):
        if key in seen:
            what = f"talk '{key[0]}'" + (f" under condition '{key[1]}'" if by else "")
            check.add_at(i, f"{what} appears again (first at row {check.rows[seen[key]]})", talk,
                         "one row per talk" + (" and condition" if by else ""))
        seen.setdefault(key, i)
    check.raise_if_any()
    if not by:
        return ({c: pd.Series(numbers[c], index=talks) for c in value}, list(value), talks)
    conditions = list(dict.fromkeys(labels))
    frame = pd.DataFrame({"talk": talks, "condition": labels, "value": numbers[value[0]]})
    wide = frame.pivot(index="talk", columns="condition", values="value")
    order = list(dict.fromkeys(talks))
    missing = [(t, c) for t in order for c in conditions if pd.isna(wide.at[t, c])]
    if missing:
        shown = "; ".join(f"talk '{t}' under '{c}'" for t, c in missing[:3])
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        raise InputError.at(source, f"{len(missing)} value(s) missing: {shown}{more}", field=",".join(by),
                            accepted="every talk under every condition (a paired bootstrap keeps a talk's "
                            "conditions together)")
    return ({c: wide[c] for c in conditions}, conditions, order)
