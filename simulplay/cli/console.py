"""Terminal output: tables with their signatures, and the progress bar (rich) that the
command line hands to the library as its :class:`~simulplay.core.progress.Progress`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from rich.console import Console
from rich.table import Table

from simulplay.core.progress import NO_PROGRESS, Progress
from simulplay.core.signature import compact_signatures, format_signature

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
                title: str | None = None, notes: Sequence[str] = ()) -> None:
    """Print a table and, under it, its notes (``note: …``, e.g. a small panel) and every
    distinct signature its rows carry."""
    table = Table(title=title, title_justify="left")
    for col in df.columns:
        table.add_column(col, justify="right" if df[col].dtype.kind in "fiu" else "left")
    for row in df.itertuples(index=False):
        table.add_row(*(_cell(v) for v in row))
    console.print(table)
    for note in notes:
        console.print(f"note: {note}", soft_wrap=True)
    sigs = [signatures] if isinstance(signatures, Mapping) else list(signatures)
    for s in dict.fromkeys(format_signature(x) for x in compact_signatures(sigs)):
        console.print(f"[dim]signature: {s}[/dim]", soft_wrap=True)


class RichProgress:
    """A :class:`~simulplay.core.progress.Progress` drawn as one rich bar on stderr: items
    done/total, audio seconds, real-time factor (work seconds / audio seconds) and ETA.
    Nothing is drawn for a loop with no items."""

    def __init__(self) -> None:
        self._bar: Any = None
        self._task: Any = None
        self.audio = 0.0
        self.work = 0.0

    def start(self, total: int, label: str) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.close()
        self.audio = self.work = 0.0
        if total <= 0:
            return
        self._bar = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("audio {task.fields[audio]:.1f} s"), TextColumn("RTF {task.fields[rtf]}"),
            TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
            console=err_console, transient=False)
        self._task = self._bar.add_task(label, total=total, audio=0.0, rtf="—")
        self._bar.start()

    def advance(self, n: int = 1, *, audio_s: float = 0.0, work_s: float = 0.0) -> None:
        if self._bar is None:
            return
        self.audio += audio_s
        self.work += work_s
        rtf = f"{self.work / self.audio:.3f}" if self.audio > 0 else "—"
        self._bar.update(self._task, advance=n, audio=self.audio, rtf=rtf)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
        self._bar = None


def progress_bar(quiet: bool) -> Progress:
    """A rich progress bar, or none with ``--quiet``."""
    return NO_PROGRESS if quiet else RichProgress()
