"""Trace readers: Parquet, CSV and JSONL (row-per-update or stream-per-line)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from simulplay.core.errors import InputError
from simulplay.core.fields import Checker
from simulplay.core.safejson import json_objects
from simulplay.core.tables import check_readable, read_table, table_format
from simulplay.traces.validate import validate_trace_frame

TRACE_SUFFIXES = (".parquet", ".csv", ".jsonl")


def read_trace(path: str | Path) -> pd.DataFrame:
    """Read and validate a trace file; returns the canonical trace table (``time_s`` and
    ``source_s`` float seconds from source start, streams in file order, rows in ``seq`` order).

    Raises :class:`InputError` naming file, row (or line) and field for every problem.
    """
    p = check_readable(path)
    fmt = table_format(p, TRACE_SUFFIXES)
    if fmt == ".jsonl":
        df, rows = _read_jsonl(p)
        return validate_trace_frame(df, str(p), rows=rows, row_label="line")
    df, _ = read_table(p)
    return validate_trace_frame(df, str(p))


def read_traces(paths) -> pd.DataFrame:
    """Several trace files as one table; a (talk_id, system) stream may appear in only one file."""
    paths = list(paths)
    resolved = [Path(p).resolve() for p in paths]
    for i, r in enumerate(resolved):
        if r in resolved[:i]:
            raise InputError.at(paths[i], "is given twice", accepted="each trace file once")
    frames = [read_trace(p) for p in paths]
    seen: dict[tuple[str, str], str] = {}
    for p, f in zip(paths, frames):
        for talk, system in f[["talk_id", "system"]].drop_duplicates().itertuples(index=False):
            other = seen.setdefault((talk, system), str(p))
            if other != str(p):
                raise InputError.at(p, f"stream (talk_id={talk}, system={system}) is also in {other}",
                                    accepted="each (talk_id, system) stream in one trace file only")
    out = pd.concat(frames, ignore_index=True)
    if "retract" in out.columns:  # the files without retractions retract nothing
        out["retract"] = out["retract"].fillna(0).astype("int64")
    return out


def _read_jsonl(p: Path) -> tuple[pd.DataFrame, list[str]]:
    check = Checker(str(p), pd.DataFrame(), row_label="line")
    records: list[dict] = []
    rows: list[str] = []
    for lineno, obj in json_objects(p.read_bytes(), check):
        if "updates" in obj:
            _stream_line(obj, lineno, check, records, rows)
        elif "time_s" not in obj and {"talk_id", "system"} & obj.keys() and "text" not in obj:
            check.add("stream object has no 'updates'", row=lineno, field="updates",
                      accepted='a list of {"time_s", "text"} objects')
        else:
            records.append(obj)
            rows.append(str(lineno))
    check.raise_if_any()
    if not records:
        raise InputError.at(p, "has no updates", accepted="at least one update")
    df = pd.DataFrame.from_records(records)
    return df, rows


def _stream_line(obj: dict, lineno: int, check: Checker, records: list, rows: list) -> None:
    updates = obj["updates"]
    if not isinstance(updates, list):
        check.add("is not a list", row=lineno, field="updates", accepted='a list of {"time_s", "text"} objects')
        return
    for k, u in enumerate(updates):
        if not isinstance(u, dict):
            check.add(f"item {k} is not an object", row=lineno, field="updates",
                      accepted='{"time_s", "text"} objects')
            continue
        rec = {"talk_id": obj.get("talk_id"), "system": obj.get("system"),
               "source_s": obj.get("source_s"), "seq": k}
        for key in ("time_s", "text", "glue", "retract"):
            if key in u:
                rec[key] = u[key]
        records.append(rec)
        rows.append(f"{lineno} (update {k})")
