"""Terminal output: tables with their signatures, and progress bars (rich)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from rich.console import Console
from rich.table import Table

from simulplay.signature import compact_signatures, format_signature

console = Console(highlight=False)
if not console.is_terminal:  # files and pipes get whole columns, never truncated cells
    console = Console(highlight=False, width=240)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)


def _cell(v: Any) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)) or v is pd.NA:
        return "—"
    if isinstance(v, (float, np.floating)):
        return f"{v:.3f}"
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
    for s in dict.fromkeys(format_signature(x) for x in compact_signatures(sigs)):
        console.print(f"[dim]signature: {s}[/dim]", soft_wrap=True)


class SynthProgress:
    """One progress bar for a synthesis run: requests done/total, audio seconds, RTF, ETA.

    Written to stderr; ``advance(audio_s, service_s)`` after each request.
    """

    def __init__(self, total: int, description: str = "synthesizing", enabled: bool = True):
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.audio = 0.0
        self.service = 0.0
        self.progress = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("audio {task.fields[audio]:.1f} s"), TextColumn("RTF {task.fields[rtf]}"),
            TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
            console=err_console, disable=not enabled, transient=False)
        self.task = self.progress.add_task(description, total=total, audio=0.0, rtf="—")

    def __enter__(self):
        self.progress.start()
        return self

    def __exit__(self, *exc):
        self.progress.stop()

    def advance(self, audio_s: float, service_s: float) -> None:
        self.audio += audio_s
        self.service += service_s
        rtf = f"{self.service / self.audio:.3f}" if self.audio > 0 else "—"
        self.progress.update(self.task, advance=1, audio=self.audio, rtf=rtf)
