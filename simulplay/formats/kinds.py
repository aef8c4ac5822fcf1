"""The kinds of table simulplay writes and reads back: each kind's name, the file a run folder
holds it in, and the one reader that gives any of them typed, from Parquet or CSV alike.

A table's kind is the ``table`` field of its Parquet metadata (``write_table(kind=…)``; a
request manifest written by hand has none). A run folder (``simulplay run``) holds each kind of
:data:`RUN_FILES` under that name (:func:`run_file`; a sensitivity replay's with its label), as
Parquet or CSV (the first four always). A CSV stores text
only: :func:`read_typed` types its cells as simulplay wrote them (identifiers text, counts
``n_*`` whole numbers, other number columns float64, a column holding any non-number text), so
that a CSV reads as its Parquet copy; :func:`keys_as_text` makes identifiers text in either (a
Parquet table may store a realization as a number).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simulplay.core.keys import OUTPUT_ID
from simulplay.core.tables import Written, read_table
from simulplay.formats.eta import with_ties

#: Each kind's name, as messages and the report's Inputs table name it.
KIND_NAMES = {
    "manifest": "request manifest", "playback-summary": "playback summary", "eta": "η table",
    "eta-per-talk": "per-talk η table", "contrast": "contrast table", "eta-edges": "edge-silence η table",
    "edges-nonspeech": "non-speech share table", "content": "content table", "content-pairs": "content pair table",
    "word-timing": "word-timing table", "player": "player table", "latency": "SimulEval speech-metric table",
    "text-latency-compare": "text-latency comparison", "live-prediction": "live prediction table",
    "live-prediction-eta": "live prediction η table", "quality-intervals": "quality interval table",
    "spoken": "spoken table", "trace": "trace",
}
#: The file a run folder holds each kind in (its primary replay's, for a replay's tables).
RUN_FILES = {
    "manifest": "manifest.parquet", "playback-summary": "summary.parquet", "eta": "eta.parquet",
    "eta-per-talk": "eta_per_talk.csv", "contrast": "contrasts.csv", "eta-edges": "eta_edges.csv",
    "edges-nonspeech": "edges_nonspeech.csv", "content": "content.csv", "content-pairs": "content.pairs.csv",
    "word-timing": "word_timing.csv", "latency": "latency.parquet", "text-latency-compare": "textlatency.csv",
    "live-prediction": "live/prediction.parquet", "live-prediction-eta": "live/prediction_eta.parquet",
    "quality-intervals": "quality.intervals.parquet", "spoken": "spoken.parquet",
}
#: Metadata ``table`` values that are another name of a kind.
ALIASES = {"request-manifest": "manifest"}
#: Columns that hold identifiers (text, never numbers).
KEY_COLUMNS = (*OUTPUT_ID, "p1", "p2", "rule", "recognizer", "language", "signature", "trigger", "pair", "reference",
               "from_condition", "to_condition", "normalization", "text", "error")


def run_file(root: Path, kind: str, replay: str = "", suffix: str = "") -> Path:
    """A kind's file in a run folder (:data:`RUN_FILES`): a sensitivity replay's with its label
    (``eta.service-zero.parquet``), in another format with ``suffix`` (``.csv``)."""
    path = root / RUN_FILES[kind]
    return path.with_name(path.stem + (f".{replay}" if replay else "") + (suffix or path.suffix))


def find_run_file(root: Path, kind: str, replay: str = "") -> Path | None:
    """The file a run folder holds a kind's table in, as Parquet or CSV; None when neither is there."""
    path = run_file(root, kind, replay)
    other = run_file(root, kind, replay, ".csv" if path.suffix == ".parquet" else ".parquet")
    return next((p for p in (path, other) if p.is_file()), None)


def read_typed(path: str | Path, kept: Written | None = None) -> tuple[pd.DataFrame, dict[str, Any], str]:
    """A table (Parquet or CSV), its metadata and its kind (``""`` when its metadata names
    none): a CSV's cells typed, an η table written before ties were counted with ``n_zero``.
    ``kept``: the table as this process wrote it (:func:`~simulplay.core.tables.keep_written`),
    typed the same way instead of reading the file."""
    df, meta = (kept.frame, kept.meta) if kept is not None else read_table(path)
    typed = _typed(df) if Path(path).suffix.lower() == ".csv" else df
    return with_ties(typed), meta, ALIASES.get(meta.get("table", ""), meta.get("table", ""))


def _typed(df: pd.DataFrame) -> pd.DataFrame:
    out = pd.DataFrame(index=df.index)
    for col in df.columns:
        cells = df[col].astype(str).where(df[col].notna(), "")  # as a CSV holds them: a missing value empty
        text = cells.str.strip()
        numbers = pd.to_numeric(text.where(text != ""), errors="coerce")
        if col in KEY_COLUMNS:
            out[col] = cells
        elif (numbers.isna() & (text != "")).any():
            out[col] = cells  # a text column (a label such as a pair of conditions)
        elif col.startswith("n_") and numbers.notna().all() and (numbers == numbers.round()).all():
            out[col] = numbers.astype(np.int64)
        else:
            out[col] = numbers.astype(np.float64)
    return out


def keys_as_text(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with its identifier columns (:data:`KEY_COLUMNS`, but ``signature``) as text."""
    return df.astype({c: str for c in KEY_COLUMNS if c in df and c != "signature"})
