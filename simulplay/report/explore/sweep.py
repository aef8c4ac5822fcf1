"""The explorer's sweep view: a run folder's modelled sweep (``sweep/sweep.parquet``, written
by ``simulplay sweep`` or a run's ``[analysis] sweep``), as the page draws it — per rule
family, modelled η and modelled L of A and F against the family's parameter with their
intervals, and the points synthesized for real on top with their measured intervals.

JSON-ready (:func:`sweep_payload`): every row of the table with every column but its
``signature`` (seconds for ``_s`` columns; ``None`` where missing), its panel (an index
into ``panels``: backend, realization) and its signature (an index into the distinct
display strings); per family the x axis (its first key with several values, else none: the
grid order), the other varying keys and its lines — one per panel and value of the other
keys, the rows in axis order — with the family's compact signature lines. A run folder
without a sweep (and step-by-step tables) has none: no view.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from simulplay.core.errors import InputError
from simulplay.core.fields import Checker
from simulplay.core.tables import stored_signatures
from simulplay.grouping import canonical_condition
from simulplay.grouping.grid import parse_family
from simulplay.report.explore.panel import json_value, panel_index, panels_of
from simulplay.report.explore.variants import shown_all
from simulplay.report.model import signature_lines
from simulplay.report.read_run import RunData

#: Where a run folder keeps its sweep table (relative to the folder).
SWEEP_TABLE = Path("sweep") / "sweep.parquet"
#: The columns the view draws (the measured ones are NaN where nothing was synthesized).
REQUIRED = ("family", "rule", "measured", "confirmed", "modelled_eta_s", "modelled_ci_low_s", "modelled_ci_high_s",
            "modelled_L_a_s", "modelled_L_low_a_s", "modelled_L_high_a_s", "modelled_L_f_s", "modelled_L_low_f_s",
            "modelled_L_high_f_s", "measured_eta_s", "measured_ci_low_s", "measured_ci_high_s", "measured_L_a_s",
            "measured_L_low_a_s", "measured_L_high_a_s", "measured_L_f_s", "measured_L_low_f_s",
            "measured_L_high_f_s")


def sweep_path(run: RunData) -> Path | None:
    """The run folder's sweep table when there is one (step-by-step tables have none)."""
    path = run.folder / SWEEP_TABLE
    return path if not run.stepwise and path.is_file() else None


def sweep_payload(run: RunData) -> dict[str, Any] | None:
    """Everything the sweep view shows, or None without a sweep; a sweep table that lacks
    a column the view draws or its signatures is refused, naming the file."""
    path = sweep_path(run)
    if path is None:
        return None
    table, meta = run.read_table(path)
    Checker(str(path), table).require_columns(REQUIRED, "sweep table")
    sigs: list[Any] | None = stored_signatures(meta, len(table))
    if sigs is None:
        if "signature" not in table:
            raise InputError.at(path, "carries no signature", accepted="a sweep table written by `simulplay sweep`")
        sigs = table["signature"].astype(str).tolist()
    table = table.drop(columns="signature", errors="ignore").reset_index(drop=True)
    panels = panels_of(table)
    strings: dict[str, int] = {}
    index = [strings.setdefault(t, len(strings)) for t in shown_all(sigs)]
    cells = [[json_value(v) for v in table[c].tolist()] for c in table.columns]
    rows = [[p, *r, s] for p, r, s in zip(panel_index(table, panels), zip(*cells), index)]
    return {"source": SWEEP_TABLE.as_posix(), "a": run.a, "f": run.f,
            "reference": canonical_condition(run.reference), "panels": panels,
            "columns": ["panel", *table.columns, "sig"], "rows": rows, "signatures": list(strings),
            "families": [_family(family, table, sigs, [r[0] for r in rows], path)
                         for family in dict.fromkeys(table["family"])],
            "notes": [str(n) for n in meta.get("notes", [])]}


def _family(family: str, table: pd.DataFrame, sigs: list[Any], panel: list[int], path: Path) -> dict[str, Any]:
    """One family: its axis, its other varying keys, its lines and signature lines."""
    grid = parse_family(family, source=f"{path}: family")
    at = [int(i) for i in (table["family"] == family).to_numpy().nonzero()[0]]
    other = [k for k, v in grid.values.items() if len(v) > 1 and k != grid.axis]
    if "servers" in table and table["servers"].nunique() > 1:  # `sweep --servers`: a line per number of servers
        other.append("servers")
    lines: dict[tuple, list[int]] = {}
    for i in at:
        key = (panel[i], *(json_value(table.at[i, k]) for k in other))
        lines.setdefault(key, []).append(i)
    if grid.axis:
        x = table[grid.axis].to_numpy(float)
        lines = {k: sorted(rows, key=lambda i: x[i]) for k, rows in lines.items()}
    return {"family": family, "axis": grid.axis, "other": other,
            "lines": [{"panel": k[0], "other": [[name, v] for name, v in zip(other, k[1:])], "rows": rows}
                      for k, rows in lines.items()],
            "signature_lines": signature_lines([sigs[i] for i in at], table.iloc[at])}
