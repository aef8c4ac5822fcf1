"""Chunk tables: per-request audio pieces with their time since the request started.

Columns: ``talk_id, system, condition[, backend][, realization], seq, chunk,
ready_offset_s, audio_s[, n_samples]``. ``simulplay synth`` writes it next to the
manifest as ``<manifest stem>.chunks.parquet``, with ``n_samples`` (at the request's
``sample_rate``): replay then takes chunk durations from the sample counts.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from simulplay.core.errors import InputError
from simulplay.core.fields import Checker
from simulplay.core.keys import OUTPUT_KEYS
from simulplay.core.tables import read_table
from simulplay.manifest.columns import CHUNK_REQUIRED, chunk_path
from simulplay.manifest.validate import check_time_range

__all__ = ["CHUNK_REQUIRED", "chunk_path", "read_chunks", "validate_chunks"]


def read_chunks(manifest: str | Path, path: str | Path | None = None) -> pd.DataFrame:
    """The validated chunk table at ``path`` (default ``<manifest stem>.chunks.parquet`` next to
    ``manifest``); ``ready_offset_s`` and ``audio_s`` in seconds. A missing file is an
    :class:`InputError` on ``--chunks``."""
    p = Path(path) if path else chunk_path(manifest)
    if not p.exists():
        raise InputError.at(p, "no chunk table", field="--chunks",
                            accepted="the chunk table written by `simulplay synth` next to the manifest")
    df, _ = read_table(p)
    return validate_chunks(df, str(p))


def validate_chunks(df: pd.DataFrame, source: str) -> pd.DataFrame:
    """Check a chunk table and bring its key columns to the manifest's types (text);
    ``ready_offset_s`` and ``audio_s`` are seconds ≥ 0, ``n_samples`` (if present) int64."""
    check = Checker(source, df)
    check.require_columns(CHUNK_REQUIRED, "chunk table")
    out = df.copy()
    for c in OUTPUT_KEYS + tuple(k for k in ("backend", "realization") if k in df):
        out[c] = check.strings(c)
    out["seq"] = check.integers("seq")
    out["chunk"] = check.integers("chunk")
    out["ready_offset_s"] = check.numbers("ready_offset_s", nonneg=True)
    out["audio_s"] = check.numbers("audio_s", nonneg=True)
    if "n_samples" in df:
        n = check.integers("n_samples", accepted="the chunk's sample count, a whole number ≥ 0")
        for i in np.flatnonzero(n < 0):
            check.add_at(int(i), f"{n[i]} is negative", "n_samples", "the chunk's sample count, a whole number ≥ 0")
        out["n_samples"] = n
    check_time_range(check, out, ("ready_offset_s", "audio_s"))
    check.raise_if_any()
    return out
