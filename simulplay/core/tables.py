"""Reading and writing tables (Parquet canonical, CSV, Markdown) with their signatures.

Parquet files keep the structured signatures in the schema metadata under the key
``simulplay``; CSV files get a ``signature`` column holding the display string, so they
open in pandas with no options; Markdown tables end with a ``Signature:`` line.
Every write goes through :mod:`simulplay.core.atomic` (a temporary file in the target folder, renamed into place), so
an interrupted write never leaves a half-written table; a write the machine refuses (a
full disk, a read-only folder) removes the temporary file and is a one-line
:class:`~simulplay.core.errors.FileFault` naming the table.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from simulplay.core import safejson
from simulplay.core.atomic import atomic_path
from simulplay.core.errors import InputError, clip
from simulplay.core.paths import check_folder_writable
from simulplay.core.plugins import remember as remember_plugins
from simulplay.core.provenance import file_fingerprint
from simulplay.core.signature import format_signature

TABLE_SUFFIXES = (".parquet", ".csv", ".md")
META_KEY = b"simulplay"


def table_format(path: str | Path, allowed: Sequence[str] = TABLE_SUFFIXES) -> str:
    """The format named by a path's suffix, or an InputError listing accepted ones."""
    suffix = Path(path).suffix.lower()
    if suffix not in allowed:
        raise InputError.at(
            path, f"unknown file format '{suffix or '(no suffix)'}'", accepted=", ".join(allowed)
        )
    return suffix


def check_readable(path: str | Path) -> Path:
    p = Path(path)
    if not p.exists():
        raise InputError.at(p, "no such file", accepted="an existing file")
    if p.is_dir():
        raise InputError.at(p, "is a directory", accepted="a file")
    return p


def check_writable(path: str | Path, allowed: Sequence[str] = TABLE_SUFFIXES) -> Path:
    """Validate an output path before any work is done: a known format, not a folder, in an
    existing folder where a test file can be written and removed
    (:func:`~simulplay.core.paths.check_folder_writable`)."""
    p = Path(path)
    table_format(p, allowed)
    if p.is_dir():
        raise InputError.at(p, "output path is a directory", accepted="a file path")
    if not p.parent.is_dir():
        raise InputError.at(p, f"folder {p.parent} does not exist", accepted="an existing folder")
    check_folder_writable(p.parent, shown=p)
    return p


@dataclass(frozen=True)
class Written:
    """A table as :func:`write_table` wrote it: its rows as the file holds them (a Parquet
    table's as pyarrow gives them back, a CSV's with its ``signature`` column), its metadata
    (a Parquet table's ``simulplay`` metadata as stored; a CSV's none) and the first 12 hex
    digits of the file's SHA-256."""

    frame: pd.DataFrame
    meta: dict[str, Any]
    sha256: str


_KEPT: ContextVar[dict[Path, Written] | None] = ContextVar("simulplay_kept_tables", default=None)


@contextmanager
def keep_written() -> Iterator[dict[Path, Written]]:
    """Every Parquet and CSV table :func:`write_table` writes in this block (in this thread),
    kept by its resolved path: a step that writes tables and then reports on them hands
    them over in memory instead of reading its own files back."""
    kept: dict[Path, Written] = {}
    token = _KEPT.set(kept)
    try:
        yield kept
    finally:
        _KEPT.reset(token)


def read_table(path: str | Path) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Read a Parquet or CSV table and its stored metadata.

    CSV cells are read as strings (no NA guessing), so that callers validate and
    convert each field with its row number. Parquet keeps its types.
    """
    p = check_readable(path)
    fmt = table_format(p, (".parquet", ".csv"))
    if fmt == ".parquet":
        try:
            with pq.ParquetFile(p) as f:  # one file: no pyarrow.dataset (pq.read_table imports it, ~30 ms)
                table = f.read()
            table.validate(full=True)  # e.g. text that is not UTF-8, which pandas would only meet later
        except (pa.ArrowException, OSError) as e:
            raise InputError.at(p, f"not a readable Parquet file ({clip(e, 160)})") from e
        schema_meta = table.schema.metadata or {}
        meta = decode_meta(schema_meta.get(META_KEY), p)
        remember_plugins(meta)  # what it was made with names its plugins downstream, without --plugin
        if b"pandas" in schema_meta:
            decode_pandas_meta(schema_meta[b"pandas"], p)
        try:
            return table.to_pandas(), meta
        except (pa.ArrowException, ValueError, TypeError, KeyError, AttributeError, IndexError,
                OverflowError) as e:  # pandas' own metadata of a foreign or damaged file
            raise InputError.at(p, f"holds columns or metadata pandas cannot read ({clip(e, 120)})",
                                accepted="a table of plain numbers and text") from e
    try:
        df = pd.read_csv(p, dtype=str, keep_default_na=False, na_filter=False, encoding="utf-8")
    except UnicodeDecodeError as e:
        raise InputError.at(p, f"is not UTF-8 text (byte {e.start})", accepted="UTF-8 CSV") from e
    except pd.errors.EmptyDataError as e:
        raise InputError.at(p, "is empty", accepted="a header row and data rows") from e
    except pd.errors.ParserError as e:
        raise InputError.at(p, f"is not readable CSV ({e})") from e
    return df, {}


#: Keys of simulplay's Parquet metadata that readers use, with the JSON type each must have.
META_SHAPES: dict[str, type] = {"table": str, "signatures": list, "row_signature": list, "signature": dict,
                                "identity": dict, "traces": list, "requests": dict, "vad": dict}


def decode_meta(raw: bytes | None, path: Path) -> dict[str, Any]:
    """The ``simulplay`` Parquet metadata as a dict (``{}`` when absent), or an InputError
    naming the file when it is not UTF-8 JSON within :mod:`simulplay.core.safejson`'s limits, not
    an object, or a key of :data:`META_SHAPES` has another type; ``signatures`` must be a
    list of objects and ``row_signature`` a list of indices into it."""
    if not raw:
        return {}

    def refuse(message: str, accepted: str = "the metadata simulplay writes (a JSON object), or none"):
        return InputError.at(path, message, field="simulplay", field_label="Parquet metadata", accepted=accepted)

    try:
        meta = safejson.loads(raw)
    except safejson.JsonError as e:
        raise refuse(str(e)) from None
    if not isinstance(meta, dict):
        raise refuse(f"is a JSON {json_type(meta)}, not an object")
    for key, kind in META_SHAPES.items():
        if key in meta and not isinstance(meta[key], kind):
            raise refuse(f"'{key}' is a JSON {json_type(meta[key])}", f"'{key}' as a JSON {_JSON_NAMES[kind]}")
    sigs = meta.get("signatures", [])
    if not all(isinstance(s, dict) for s in sigs):
        raise refuse("'signatures' holds a value that is not an object", "a list of signature objects")
    index = meta.get("row_signature", [])
    # one index per row: whole numbers (JSON gives int, or bool for true/false) within the list
    if index and not (set(map(type, index)) <= {int} and min(index) >= 0 and max(index) < len(sigs)):
        raise refuse(f"'row_signature' holds a value that is not an index 0..{len(sigs) - 1} into 'signatures'",
                     "one index into 'signatures' per row")
    return meta


_JSON_NAMES = {str: "string", list: "array", dict: "object"}


def json_type(value: Any) -> str:
    """The JSON name of a parsed value's type (number, string, array, object, …)."""
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return "number"
    return _JSON_NAMES.get(type(value), type(value).__name__)


def decode_pandas_meta(raw: bytes, path: Path) -> None:
    """Refuse pandas' Parquet metadata when it is not a JSON object (pandas would fail on it)."""
    try:
        meta = safejson.loads(raw)
        problem = None if isinstance(meta, dict) and isinstance(meta.get("columns", []), list) else \
            "is not the object pandas writes"
    except safejson.JsonError as e:
        problem = str(e)
    if problem:
        raise InputError.at(path, problem, field="pandas", field_label="Parquet metadata",
                            accepted="the metadata pandas writes, or none")


def _signature_rows(df: pd.DataFrame, signatures: Mapping[str, Any] | Sequence[Mapping[str, Any]]):
    if isinstance(signatures, Mapping):
        return [dict(signatures)] * len(df)
    if len(signatures) != len(df):
        raise ValueError("one signature per row is required")
    return [dict(s) for s in signatures]


def write_table(
    df: pd.DataFrame,
    path: str | Path,
    signatures: Mapping[str, Any] | Sequence[Mapping[str, Any]],
    *,
    kind: str,
    signature_column: bool = False,
    extra_meta: Mapping[str, Any] | None = None,
    notes: Sequence[str] = (),
) -> Path:
    """Write ``df`` with one signature per row (or one for all rows), atomically.

    ``signature_column`` adds the display string as a ``signature`` column in every
    format (tables whose contract lists it); CSV always gets the column. ``notes``
    (e.g. the small-panel note) go under a Markdown table as ``Note:`` lines and into
    Parquet metadata (``notes``); a CSV has no place for them.
    """
    p = Path(path)
    fmt = table_format(p)
    rows = _signature_rows(df, signatures)
    shown = [format_signature(s) for s in rows]
    out = df.reset_index(drop=True).copy()
    if signature_column:
        out["signature"] = shown
    with atomic_path(p) as tmp:
        if fmt == ".parquet":
            unique: list[dict[str, Any]] = []
            index: list[int] = []
            for s in rows:
                if s not in unique:
                    unique.append(s)
                index.append(unique.index(s))
            meta = {"table": kind, "signatures": unique, "row_signature": index}
            if notes:
                meta["notes"] = list(notes)
            meta.update(extra_meta or {})
            table = pa.Table.from_pandas(out, preserve_index=False)
            md = dict(table.schema.metadata or {})
            raw = json.dumps(meta, default=str)
            md[META_KEY] = raw.encode()
            pq.write_table(table.replace_schema_metadata(md), tmp)
            kept = (table, json.loads(raw))
        elif fmt == ".csv":
            if not signature_column:
                out["signature"] = shown
            out.to_csv(tmp, index=False)
            kept = (out, {})
        else:
            tmp.write_text(to_markdown(out, shown, with_column=signature_column, notes=notes), encoding="utf-8")
            kept = None
    _keep(p, kept)
    return p


def _keep(path: Path, kept: tuple[Any, dict[str, Any]] | None) -> None:
    """Record a table just written when a :func:`keep_written` block is open (its hash from
    the file's bytes, its rows as the file holds them)."""
    tables = _KEPT.get()
    if tables is None or kept is None:
        return
    frame, meta = kept
    tables[path.resolve()] = Written(frame.to_pandas() if isinstance(frame, pa.Table) else frame, meta,
                                     file_fingerprint(path))


def _md_cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return ""
    if isinstance(value, (float, np.floating)):
        return f"{value:.3f}"
    return str(value).replace("|", "\\|")


def to_markdown(df: pd.DataFrame, signatures: Sequence[str], *, with_column: bool = False,
                notes: Sequence[str] = ()) -> str:
    """A GitHub-flavoured Markdown table; floats at 3 decimals; ``Note:`` lines, then the
    signatures as footnotes."""
    body = df.drop(columns=["signature"], errors="ignore") if with_column else df
    unique = list(dict.fromkeys(signatures))
    cols = list(body.columns) + (["sig"] if len(unique) > 1 else [])
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for i, row in enumerate(body.itertuples(index=False)):
        cells = [_md_cell(v) for v in row]
        if len(unique) > 1:
            cells.append(f"[{unique.index(signatures[i]) + 1}]")
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines += [f"Note: {n}  " for n in notes]
    if len(unique) == 1:
        lines.append(f"Signature: `{unique[0]}`")
    else:
        lines += [f"[{k + 1}] Signature: `{s}`  " for k, s in enumerate(unique)]
    return "\n".join(lines) + "\n"


def stored_signatures(meta: Mapping[str, Any], n_rows: int) -> list[dict[str, Any]] | None:
    """Per-row structured signatures from Parquet metadata, if present."""
    sigs = meta.get("signatures")
    index = meta.get("row_signature")
    if not sigs or index is None or len(index) != n_rows:
        return None
    return [sigs[i] for i in index]


def check_distinct(outputs: Mapping[str, str | Path | None], inputs: Sequence[str | Path] = ()) -> None:
    """Refuse two outputs on one file, or an output on an input file (before any work)."""
    seen: dict[Path, str] = {}
    ins = {Path(i).resolve() for i in inputs}
    for flag, path in outputs.items():
        if not path:
            continue
        resolved = Path(path).resolve()
        if resolved in ins:
            raise InputError.at(path, f"{flag} would overwrite an input file", accepted="a new output path")
        if resolved in seen:
            raise InputError.at(path, f"is given to both {seen[resolved]} and {flag}",
                                accepted="a separate file for each output")
        seen[resolved] = flag
