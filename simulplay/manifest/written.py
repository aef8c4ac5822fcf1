"""The writer's check: synthesis (and ``retime``) validates a manifest and its chunk table
with the reader's rules (:func:`~simulplay.manifest.validate.validate_manifest`,
:func:`~simulplay.manifest.chunks.validate_chunks`) just before writing them, so that a
table every later step would refuse is never written.

A table that fails this check is a bug in simulplay, not a problem of the user's input:
the reader's :class:`~simulplay.core.errors.InputError` (which names rows and fields) is
chained to a :class:`WrittenTableError`, which is no
:class:`~simulplay.core.errors.SimulplayError`, so the command line shows its traceback
instead of a one-line input error.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from simulplay.core.errors import InputError
from simulplay.manifest.chunks import validate_chunks
from simulplay.manifest.columns import chunk_path
from simulplay.manifest.validate import validate_manifest


class WrittenTableError(RuntimeError):
    """A manifest or chunk table that simulplay was about to write fails the reader's
    validation: an internal error (a bug in the writer), raised from the reader's InputError."""


def check_written(manifest: pd.DataFrame, chunks: pd.DataFrame | None, path: str | Path) -> None:
    """Validate ``manifest`` (to be written at ``path``) and ``chunks`` (to be written at
    :func:`~simulplay.manifest.columns.chunk_path` of ``path``; ``None``: no chunk table) as
    every later step reads them. Nothing is changed; a table the reader refuses raises
    :class:`WrittenTableError` naming the file and, through its cause, each problem."""
    for table, where, validate in ((manifest, Path(path), validate_manifest),
                                   (chunks, chunk_path(path), validate_chunks)):
        if table is None:
            continue
        try:
            validate(table, str(where))
        except InputError as e:
            raise WrittenTableError(f"simulplay was about to write {where}, which its own reader refuses (a bug in "
                                    f"simulplay, please report it): {e}") from e
