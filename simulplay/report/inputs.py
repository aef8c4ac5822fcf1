"""Recognising the tables a report is given: each file's kind, its rows and signatures.

A Parquet table written by simulplay names its kind in its structured metadata (key
``simulplay``, field ``table``); a CSV table (or a Parquet file without that metadata: a
hand-written manifest, a table rewritten by another tool) is recognised by its columns.
File names never matter. Every table keeps one signature per row: the structured dict
of its Parquet metadata, else the display string of its ``signature`` column, matched
back to a structured dict when some Parquet input holds one that renders identically
(strings are never parsed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simulplay.analysis.edge_replay import SHARE_COLUMNS
from simulplay.analysis.latency_table import LATENCY_COLUMNS
from simulplay.analysis.player_table import PLAYER_COLUMNS
from simulplay.analysis.textlatency import COMPARE_COLUMNS as TEXT_COMPARE
from simulplay.analysis.textlatency import PER_OUTPUT_COLUMNS as TEXT_PER_OUTPUT
from simulplay.analysis.wordtiming import TABLE_COLUMNS as TIMING_COLUMNS
from simulplay.core.errors import InputError
from simulplay.core.keys import OUTPUT_ID, OUTPUT_KEYS
from simulplay.core.provenance import file_fingerprint
from simulplay.core.signature import format_signature, settings_hash
from simulplay.core.tables import read_table, stored_signatures
from simulplay.formats.eta import CONTRAST_COLUMNS, ETA_COLUMNS, PER_TALK_COLUMNS
from simulplay.formats.summary import SUMMARY_COLUMNS
from simulplay.grouping.requests import REQUEST_COLUMNS
from simulplay.manifest.chunks import CHUNK_REQUIRED
from simulplay.manifest.validate import MANIFEST_COLUMNS
from simulplay.traces.model import TRACE_COLUMNS

Signature = dict[str, Any] | str
#: Columns kept as text when a CSV is read (identifiers, never numbers).
KEY_COLUMNS = (*OUTPUT_ID, "p1", "p2", "rule", "recognizer",
               "language", "signature", "trigger", "pair", "reference", "from_condition", "to_condition",
               "normalization", "text", "error")

#: What each kind is called in the report, for the kinds the report reads.
USED_KINDS = {
    "manifest": "request manifest", "playback-summary": "playback summary", "eta": "η table",
    "eta-per-talk": "per-talk η table", "contrast": "contrast table", "eta-edges": "edge-silence η table",
    "edges-nonspeech": "non-speech share table", "content": "content table", "content-pairs": "content pair table",
    "word-timing": "word-timing table", "player": "player table", "trace": "trace",
    "latency": "SimulEval speech-metric table", "text-latency-compare": "text-latency comparison",
    "quality-intervals": "quality interval table",
}
#: Kinds simulplay writes that the report lists but does not read.
OTHER_KINDS = {
    "chunks": "chunk table", "playback-parts": "per-part playback", "edges-summary": "edge-silence summary",
    "transcripts": "transcripts", "content-per-output": "per-output content counts",
    "word-timing-words": "per-word timing", "word-timing-per-talk": "per-talk word timing",
    "requests": "request table (`group`)", "trace-stats": "trace statistics (`validate`)",
    "blocks": "block summary", "blocks-compare": "block comparison", "blocks-parts": "block parts",
    "blocks-feeds": "block feeds", "text-latency": "per-output text latency",
    "simuleval-export": "SimulEval export list", "quality": "per-output quality",
    "quality-requests": "per-request quality",
}
#: Parquet ``table`` values that are another name of a kind.
ALIASES = {"request-manifest": "manifest"}


def without_ties(columns: tuple[str, ...]) -> tuple[str, ...]:
    """``columns`` less ``n_zero`` (what a table written before ties were counted has)."""
    return tuple(c for c in columns if c != "n_zero")


#: Recognition by columns, most specific first: (kind, required columns, columns it must not have).
BY_COLUMNS: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("eta-edges", without_ties(ETA_COLUMNS) + ("threshold",), ()),
    ("quality-intervals", ("metric", "condition", "n_talks", "mean", "ci_low", "ci_high", "n_negative", "n_positive",
                           "n_talks_left_out"), ("talk_id",)),
    ("eta", without_ties(ETA_COLUMNS), ("talk_id",)),
    ("contrast", without_ties(CONTRAST_COLUMNS), ("talk_id",)),
    ("eta-per-talk", PER_TALK_COLUMNS, ("n_talks",)),
    ("edges-nonspeech", SHARE_COLUMNS, ()),
    ("content-pairs", ("from_condition", "to_condition", "n_talks"), ()),
    ("word-timing", TIMING_COLUMNS, ("talk_id",)),
    ("content", ("normalization", "n_talks", "intended_words", "mean_error_rate_pct"), ("talk_id",)),
    ("player", OUTPUT_KEYS + PLAYER_COLUMNS, ()),
    ("latency", OUTPUT_KEYS + LATENCY_COLUMNS, ()),
    ("text-latency", OUTPUT_KEYS + TEXT_PER_OUTPUT, ()),
    ("text-latency-compare", ("condition",) + TEXT_COMPARE, ("talk_id",)),
    ("edges-summary", (*OUTPUT_KEYS, "threshold") + SUMMARY_COLUMNS, ()),
    ("playback-summary", OUTPUT_KEYS + SUMMARY_COLUMNS, ("threshold",)),
    ("chunks", CHUNK_REQUIRED, ("dispatch_s",)),
    ("playback-parts", (*OUTPUT_KEYS, "seq", "ready_s", "play_s", "end_s"), ()),
    ("manifest", MANIFEST_COLUMNS, ()),
    ("requests", REQUEST_COLUMNS, ()),
    ("trace", TRACE_COLUMNS, ("condition",)),
)
ACCEPTED = ("a table written by simulplay (manifest, playback summary, η, per-talk η, contrasts, edge, player or "
            "content table) or a trace")


@dataclass
class TableFile:
    """One input file: its kind, rows (CSV columns converted) and per-row signatures."""

    path: Path
    kind: str
    frame: pd.DataFrame
    signatures: list[Signature]
    meta: dict[str, Any]
    fmt: str  # "parquet" | "csv" | "jsonl"
    use: str = ""  # what the report did with it (filled by the loader)

    @property
    def what(self) -> str:
        """The kind as the report names it (``η table``); an unknown kind as it is."""
        return USED_KINDS.get(self.kind) or OTHER_KINDS.get(self.kind, self.kind)

    @property
    def structured(self) -> bool:
        """Whether every row has a structured (dict) signature, as Parquet written by simulplay."""
        return bool(self.signatures) and all(isinstance(s, dict) for s in self.signatures)

    def shown_signatures(self) -> list[str]:
        """Each row's signature as displayed (a CSV's stored string, or a dict formatted)."""
        return [s if isinstance(s, str) else format_signature(s) for s in self.signatures]



def file_hash(path: Path) -> str:
    """The first 12 hex digits of the file's SHA-256."""
    return file_fingerprint(path)


def signature_fingerprint(sigs: Sequence[Signature]) -> str:
    """A short hash of the distinct display signatures (equal for a Parquet table and its
    CSV copy); empty when there are none."""
    shown = list(dict.fromkeys(s if isinstance(s, str) else format_signature(s) for s in sigs))
    return settings_hash({"signatures": shown}) if shown else ""


def recognise(path: Path) -> TableFile | None:
    """Read one file and tell its kind; ``None`` when it is no table simulplay knows.

    ``.jsonl`` files are read as traces (their errors are the trace reader's)."""
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        from simulplay.traces import read_trace

        return TableFile(path, "trace", read_trace(path), [], {}, "jsonl")
    df, meta = read_table(path)
    kind = ALIASES.get(meta.get("table", ""), meta.get("table", ""))
    if kind not in USED_KINDS and kind not in OTHER_KINDS:
        kind = _kind_by_columns(df)
        if kind is None:
            return None
    frame = with_ties(df if suffix == ".parquet" else typed_frame(df))
    return TableFile(path, kind, frame, row_signatures(meta, df), meta, suffix[1:])


def _kind_by_columns(df: pd.DataFrame) -> str | None:
    cols = set(df.columns)
    for kind, required, forbidden in BY_COLUMNS:
        if set(required) <= cols and not cols & set(forbidden):
            return kind
    return None


def row_signatures(meta: Mapping[str, Any], df: pd.DataFrame) -> list[Signature]:
    """Structured signatures from Parquet metadata, else the ``signature`` column's
    strings, else none (a hand-written table)."""
    sigs = stored_signatures(meta, len(df))
    if sigs is not None:
        return sigs
    if "signature" in df:
        return [str(s) for s in df["signature"]]
    return []


def match_structured(table: TableFile, known: Sequence[dict[str, Any]]) -> None:
    """Replace display strings by the structured signatures that render identically."""
    lookup = {format_signature(s): s for s in known}
    table.signatures = [lookup.get(s, s) if isinstance(s, str) else s for s in table.signatures]


def with_ties(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with an ``n_zero`` column (talks neither below nor above zero) right after
    ``n_negative`` when a table written before ties were counted lacks it:
    ``n_talks − n_negative − n_positive``."""
    if "n_zero" in df or not {"n_talks", "n_negative", "n_positive"} <= set(df.columns):
        return df
    out = df.copy()
    zero = pd.to_numeric(out["n_talks"]) - pd.to_numeric(out["n_negative"]) - pd.to_numeric(out["n_positive"])
    out.insert(list(out.columns).index("n_negative") + 1, "n_zero", zero)
    return out


def typed_frame(df: pd.DataFrame) -> pd.DataFrame:
    """CSV text cells as the report uses them: identifiers as text, counts (``n_*``) as
    integers, other number columns as float64, columns holding any non-number as text."""
    out = pd.DataFrame(index=df.index)
    for col in df.columns:
        if col in KEY_COLUMNS:
            out[col] = df[col].astype(str)
            continue
        text = df[col].astype(str).str.strip()
        numbers = pd.to_numeric(text.where(text != ""), errors="coerce")
        if (numbers.isna() & (text != "")).any():
            out[col] = df[col]  # a text column (a label such as a pair of conditions)
        elif col.startswith("n_") and numbers.notna().all() and (numbers == numbers.round()).all():
            out[col] = numbers.astype(np.int64)
        else:
            out[col] = numbers.astype(np.float64)
    return out


def same_content(a: TableFile, b: TableFile) -> bool:
    """Whether two tables hold the same rows, columns and display signatures (a Parquet
    table and its CSV copy do; numbers compared exactly, CSV keeps full precision)."""
    if a.kind != b.kind or a.shown_signatures() != b.shown_signatures():
        return False
    fa, fb = a.frame.drop(columns="signature", errors="ignore"), b.frame.drop(columns="signature", errors="ignore")
    if list(fa.columns) != list(fb.columns) or len(fa) != len(fb):
        return False
    for col in fa.columns:
        x, y = fa[col], fb[col]
        if x.dtype.kind in "fiub" and y.dtype.kind in "fiub":
            xv, yv = x.astype("float64").to_numpy(), y.astype("float64").to_numpy()
            if not np.array_equal(xv, yv, equal_nan=True):
                return False
        elif [_text(v) for v in x] != [_text(v) for v in y]:
            return False
    return True


def _text(v: Any) -> str:
    if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)):
        return ""
    return str(v)


def folder_files(folder: Path) -> list[Path]:
    """The candidate tables in a folder: its own ``.parquet``, ``.csv`` and ``.jsonl``
    files (not hidden, not in subfolders), by name."""
    return sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")
                  and p.suffix.lower() in (".parquet", ".csv", ".jsonl"))


def read_inputs(paths: Sequence[Path]) -> tuple[list[TableFile], list[tuple[Path, str]]]:
    """Each path (a file, or a folder whose files are scanned) read and recognised.

    A file named on the command line must be a table simulplay knows; a file found in a
    folder that is not is returned in the second list with the reason, and left out."""
    tables, skipped, seen = [], [], set()
    for p in paths:
        if p.is_dir():
            for f in folder_files(p):
                if f.resolve() in seen:
                    continue
                seen.add(f.resolve())
                try:
                    t = recognise(f)
                except InputError as e:
                    skipped.append((f, f"not read: {e}"))
                    continue
                if t is None:
                    skipped.append((f, "not used: its columns match no table the report reads"))
                else:
                    tables.append(t)
            continue
        if p.resolve() in seen:  # named twice, or also found in a folder given
            continue
        seen.add(p.resolve())
        t = recognise(p)
        if t is None:
            raise InputError.at(p, "is not a table the report knows (no simulplay kind in its metadata, and its "
                                "columns match none)", accepted=ACCEPTED)
        tables.append(t)
    return tables, skipped
