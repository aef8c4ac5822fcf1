"""Reading a table of output rows that simulplay wrote: the output keys and the columns a reader
needs checked, one signature per row."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from simulplay.core.errors import InputError
from simulplay.core.fields import Checker
from simulplay.core.keys import OUTPUT_KEYS
from simulplay.core.tables import read_table, stored_signatures


def read_keyed_table(path: Path, required: Sequence[str], what: str, accepted: str) -> tuple[pd.DataFrame, list[Any]]:
    """The table at ``path`` and one signature per row (``""`` where it stores none), with the
    output keys and ``required`` checked (``what`` names the table); a missing file or column
    is one line naming it, with ``accepted``."""
    if not path.is_file():
        raise InputError.at(path, "is missing", accepted=accepted)
    df, meta = read_table(path)
    Checker(str(path), df).require_columns([*OUTPUT_KEYS, *required], what)
    return df, stored_signatures(meta, len(df)) or [""] * len(df)
