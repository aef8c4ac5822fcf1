"""The order of a report's rows: panels first, conditions in the run's rule order, the
translators A and F before other systems."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from simulplay.core.keys import RUN_PANEL_KEYS, present
from simulplay.grouping import canonical_condition
from simulplay.report.read_run import RunData


def panels(df: pd.DataFrame) -> list[str]:
    """The panel columns (backend, realization) the table has."""
    return present(RUN_PANEL_KEYS, df)


def condition_order(run: RunData) -> list[str]:
    """The run's conditions in the order of its rules (canonical strings)."""
    return [canonical_condition(r) for r in run.rules]


def system_order(run: RunData, systems: Sequence[str]) -> list[str]:
    """``systems`` with A and F first, the rest sorted."""
    return [s for s in (run.a, run.f) if s in systems] + sorted(set(systems) - {run.a, run.f})


def sort_rows(df: pd.DataFrame, run: RunData, by: Sequence[str]) -> pd.DataFrame:
    """Sort by panel, then ``by``; conditions in rule order, systems A, F first."""
    ranks = {}
    conds = {c: i for i, c in enumerate(condition_order(run))}
    systems = {s: i for i, s in enumerate(system_order(run, df["system"].unique() if "system" in df else []))}
    for col in by:
        if col in ("condition", "p1", "p2"):
            ranks[col] = df[col].map(lambda c: conds.get(c, len(conds)))
        elif col == "system":
            ranks[col] = df[col].map(systems)
    order = panels(df) + list(by)
    key = pd.DataFrame({c: ranks.get(c, df[c]) for c in order})
    return df.loc[key.sort_values(order, kind="stable").index]
