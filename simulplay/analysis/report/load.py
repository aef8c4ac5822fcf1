"""Reading a run folder (``simulplay run``/``demo``) for the report.

Required: ``run.json``, ``manifest.parquet``, ``summary.parquet``, ``eta.parquet`` (or
``eta.csv``) and ``eta_per_talk.csv``. Optional, included when present: ``contrasts.csv``,
the sensitivity variants' ``eta.<variant>.parquet``/``.csv``, the edge-silence tables
``eta_edges.csv`` and ``edges_nonspeech.csv``, the content tables ``content.csv`` and
``word_timing.csv``, and the trace files named in ``run.json``.

Every table keeps one signature per row: a structured dict where the file stores one
(Parquet metadata), else the display string of its CSV ``signature`` column, matched
back to a structured dict when some Parquet file of the run holds one that renders
identically (strings are never parsed).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simulplay.analysis.eta import CONTRAST_COLUMNS, ETA_COLUMNS
from simulplay.errors import InputError
from simulplay.fields import Checker
from simulplay.signature import format_signature
from simulplay.sim.manifest import validate_manifest
from simulplay.tables import read_table, stored_signatures

Signature = dict[str, Any] | str
#: Columns kept as text when a CSV is read (identifiers, never numbers).
KEY_COLUMNS = ("talk_id", "system", "condition", "backend", "realization", "p1", "p2", "rule", "recognizer",
               "language", "signature", "trigger", "pair")
PANEL_KEYS = ("backend", "realization")
OPTIONAL_TABLES = {
    "eta_edges": "eta_edges.csv",
    "edges_nonspeech": "edges_nonspeech.csv",
    "content": "content.csv",
    "content_pairs": "content.pairs.csv",
    "word_timing": "word_timing.csv",
}


@dataclass
class Signed:
    """A table of the run with one signature per row."""

    frame: pd.DataFrame
    signatures: list[Signature]
    path: Path


@dataclass
class RunData:
    """Everything the report reads from one run folder."""

    folder: Path
    record: dict[str, Any]
    a: str
    f: str
    reference: str
    rules: list[str]
    manifest: Signed
    summary: Signed
    eta: Signed
    per_talk: Signed
    contrasts: Signed | None = None
    variants: dict[str, Signed] = field(default_factory=dict)
    optional: dict[str, Signed] = field(default_factory=dict)
    traces: pd.DataFrame | None = None
    trace_signature: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)


def load_run(folder: str | Path) -> RunData:
    """Read and check a run folder; an InputError names the first missing file or column."""
    root = Path(folder)
    if not root.is_dir():
        raise InputError.at(root, "is not a folder" if root.exists() else "no such folder",
                            accepted="a run folder written by `simulplay run` or `simulplay demo`")
    record = _read_record(root / "run.json")
    exp = record["experiment"]
    manifest = _read_manifest(root / "manifest.parquet")
    summary = _read_parquet(root / "summary.parquet", ("talk_id", "system", "condition", "n_parts", "first_play_s",
                                                         "audio_s", "idle_s", "offset_s", "source_s"),
                            "playback summary")
    known = _structured(manifest, summary)
    eta = _read_either(root, "eta", ETA_COLUMNS, "η table", known)
    known += _structured(eta)
    per_talk = _read_csv(root / "eta_per_talk.csv", ("talk_id", "condition", "delta_ref_s", "delta_s", "eta_s",
                                                      "duration_part_s", "idle_part_s"), "per-talk η table", known)
    run = RunData(root, record, exp["a"], exp["f"], exp["reference"], list(exp["rules"]), manifest, summary, eta,
                  per_talk)
    if (root / "contrasts.csv").exists():
        run.contrasts = _read_csv(root / "contrasts.csv", CONTRAST_COLUMNS, "contrast table", known)
    for v in exp.get("variants", []):
        label = v.replace("=", "-")
        run.variants[label] = _read_either(root, f"eta.{label}", ETA_COLUMNS, f"η table of variant {v}", known)
    for key, name in OPTIONAL_TABLES.items():
        if (root / name).exists():
            run.optional[key] = _read_csv(root / name, (), name, known)
    _read_traces(run, [Path(p) for p in exp.get("traces", [])])
    return run


def _read_record(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise InputError.at(path, "no such file", accepted="the run record written by `simulplay run`")
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise InputError.at(path, f"is not valid JSON ({e})") from e
    exp = record.get("experiment") if isinstance(record, dict) else None
    for key in ("a", "f", "reference", "rules"):
        if not isinstance(exp, dict) or key not in exp:
            raise InputError.at(path, "is missing", field=f"experiment.{key}", field_label="key",
                                accepted="the run record written by `simulplay run`")
    return record


def _rows(meta: Mapping[str, Any], n: int, df: pd.DataFrame, path: Path) -> list[Signature]:
    sigs = stored_signatures(meta, n)
    if sigs is not None:
        return sigs
    if "signature" in df:
        return [str(s) for s in df["signature"]]
    raise InputError.at(path, "carries no signature", field="signature",
                        accepted="a table written by simulplay (Parquet metadata or a signature column)")


def _read_parquet(path: Path, required: Sequence[str], what: str) -> Signed:
    df, meta = read_table(path)
    Checker(str(path), df).require_columns(required, what)
    return Signed(_keys_as_text(df), _rows(meta, len(df), df, path), path)


def _read_manifest(path: Path) -> Signed:
    df, meta = read_table(path)
    sigs = stored_signatures(meta, len(df))
    if sigs is None:
        raise InputError.at(path, "carries no signature", accepted="a manifest written by `simulplay synth`/`run`")
    valid = validate_manifest(df.assign(_sig=np.arange(len(df))), str(path))
    return Signed(valid.drop(columns="_sig"), [sigs[i] for i in valid["_sig"]], path)


def _read_csv(path: Path, required: Sequence[str], what: str, known: list[dict[str, Any]]) -> Signed:
    df, _ = read_table(path)
    check = Checker(str(path), df)
    check.require_columns(tuple(required) + ("signature",), what)
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
    check.raise_if_any()
    lookup = {format_signature(s): s for s in known}
    sigs = [lookup.get(s, s) for s in df["signature"]]
    return Signed(out, sigs, path)


def _read_either(root: Path, stem: str, required: Sequence[str], what: str, known: list[dict]) -> Signed:
    pq, csv = root / f"{stem}.parquet", root / f"{stem}.csv"
    if pq.exists():
        return _read_parquet(pq, required, what)
    if csv.exists():
        return _read_csv(csv, required, what, known)
    raise InputError.at(pq, "no such file", accepted=f"the {what} written by `simulplay run` ({pq.name} or {csv.name})")


def _keys_as_text(df: pd.DataFrame) -> pd.DataFrame:
    out = df.copy()
    for col in KEY_COLUMNS:
        if col in out and col != "signature":
            out[col] = out[col].astype(str)
    return out


def _structured(*tables: Signed) -> list[dict[str, Any]]:
    return [s for t in tables for s in t.signatures if isinstance(s, dict)]


def _read_traces(run: RunData, paths: list[Path]) -> None:
    """The run's traces for Table 11; a missing file is noted in the report, not an error."""
    from simulplay.traces import read_traces

    missing = [str(p) for p in paths if not p.is_file()]
    if not paths or missing:
        run.notes.append("Trace statistics (Table 11) are left out: trace file(s) not found: "
                         + (", ".join(missing) or "none recorded in run.json"))
        return
    run.traces = read_traces(paths)
    run.trace_signature = {"table": "trace-stats",
                           "trace": [f"{p.name}@{hashlib.sha256(p.read_bytes()).hexdigest()[:12]}" for p in paths]}
