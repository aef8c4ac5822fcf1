"""Terminal output: tables with their signatures, and progress bars (rich)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from rich.console import Console
from rich.table import Table

from simulplay.signature import format_signature

console = Console(highlight=False)
if not console.is_terminal:  # files and pipes get whole columns, never truncated cells
    console = Console(highlight=False, width=240)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)


def _cell(v: Any) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)) or v is pd.NA:
        return "—"
    if isinstance(v, (float, np.floating)):
        return f"{v:+.3f}" if v < 0 or v > 0 else f"{v:.3f}"
    return str(v)


def print_table(df: pd.DataFrame, signatures: Sequence[Mapping[str, Any]] | Mapping[str, Any],
                title: str | None = None) -> None:
    """Print a table and, under it, every distinct signature its rows carry."""
    table = Table(title=title, title_justify="left")
    for col in df.columns:
        table.add_column(col, justify="right" if df[col].dtype.kind in "fiu" else "left")
    for row in df.itertuples(index=False):
        table.add_row(*(_cell(v) for v in row))
    console.print(table)
    sigs = [signatures] if isinstance(signatures, Mapping) else list(signatures)
    for s in dict.fromkeys(format_signature(x) for x in sigs):
        console.print(f"[dim]signature: {s}[/dim]", soft_wrap=True)
