"""Reading what a report is made from: a run folder, or the tables of step-by-step work.

A run folder (``simulplay run``/``demo``) has ``run.json``, ``manifest.parquet``,
``summary.parquet``, ``eta.parquet`` (or ``eta.csv``) and ``eta_per_talk.csv``.
Optional, included when present: ``contrasts.csv``, the sensitivity variants'
``eta.<variant>.parquet``/``.csv``, the edge-silence tables ``eta_edges.csv`` and
``edges_nonspeech.csv``, the content tables ``content.csv``, ``content.pairs.csv`` and
``word_timing.csv``, and the trace files named in ``run.json`` (or given with ``--trace``).
Anything else (tables given by path, a folder without ``run.json``) is read by
:mod:`simulplay.report.stepwise`.

Every table keeps one signature per row: a structured dict where the file stores one
(Parquet metadata), else the display string of its CSV ``signature`` column, matched
back to a structured dict when some Parquet file of the run holds one that renders
identically (strings are never parsed).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simulplay.analysis.quality_intervals import DELTA_COLUMNS
from simulplay.analysis.spoken import SPOKEN_COLUMNS
from simulplay.core.errors import InputError
from simulplay.core.fields import Checker
from simulplay.core.signature import format_signature
from simulplay.core.tables import read_table, stored_signatures
from simulplay.formats.eta import CONTRAST_COLUMNS, ETA_COLUMNS
from simulplay.formats.live import PREDICTION, PREDICTION_ETA, PREDICTION_ETA_REQUIRED, PREDICTION_REQUIRED
from simulplay.formats.summary import SUMMARY_READ, variant_label
from simulplay.manifest.validate import validate_manifest
from simulplay.report.inputs import (
    KEY_COLUMNS,
    Signature,
    file_hash,
    signature_fingerprint,
    typed_frame,
    with_ties,
    without_ties,
)
from simulplay.report.record import RunRecord, RunSettings

OPTIONAL_TABLES = {
    "eta_edges": "eta_edges.csv",
    "edges_nonspeech": "edges_nonspeech.csv",
    "content": "content.csv",
    "content_pairs": "content.pairs.csv",
    "word_timing": "word_timing.csv",
    "latency": "latency.csv",  # SimulEval speech-output metrics (Table 1b)
    "text_latency": "textlatency.csv",  # `simulplay textlatency --out` saved into the run folder (Table 1c)
}
#: Parquet or CSV tables read when present: RunData.optional key → (file stem, required columns, kind, use).
RECORDED_TABLES = {
    # `simulplay run`/`demo` with quality, or `simulplay quality --out quality.parquet` into the run folder
    "quality": ("quality.intervals", DELTA_COLUMNS, "quality interval table", "Table 19"),
    "spoken": ("spoken", SPOKEN_COLUMNS, "spoken table", "Table 8c"),  # what the listener got per commit policy
}


@dataclass
class Signed:
    """A table of the run with one signature per row."""

    frame: pd.DataFrame
    signatures: list[Signature]
    path: Path


@dataclass
class InputRow:
    """One input of the report as the Inputs table lists it."""

    path: str
    kind: str
    use: str
    rows: int | None = None
    signature: str = ""  # fingerprint of the table's distinct display signatures
    sha256: str = ""  # first 12 hex digits of the file's SHA-256


@dataclass
class RunData:
    """Everything the report reads: a run folder, or the tables of step-by-step work."""

    folder: Path  # the run folder, the folder of tables, or the folder of the first table given
    record: dict[str, Any]  # run.json; {} for step-by-step tables
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
    inputs: list[InputRow] = field(default_factory=list)
    parts: pd.DataFrame | None = None  # per-part primary replay, when the loader already made it
    run_record: RunRecord | None = None  # run.json as objects; None for step-by-step tables

    @property
    def stepwise(self) -> bool:
        """Whether the report reads step-by-step tables (no ``run.json``) rather than a run folder."""
        return self.run_record is None

    @property
    def settings(self) -> RunSettings | None:
        """The run's settings from ``run.json``; None for step-by-step tables."""
        return None if self.run_record is None else self.run_record.settings

    @property
    def name(self) -> str:
        """The experiment's name from ``run.json``, else the run folder's name; for step-by-step
        tables, from its inputs: ``A vs F (η table's file name)``."""
        if self.stepwise:
            return f"{self.a} vs {self.f} ({self.eta.path.name})"
        return self.settings.name or self.folder.resolve().name

    @property
    def excluded_outputs(self) -> list:
        """The outputs the run's replay left out (``run.json``); none for step-by-step tables."""
        return [] if self.run_record is None else self.run_record.excluded_outputs

    @property
    def confidence(self) -> float | None:
        """Interval coverage from run.json, else from the η table's structured signature."""
        if self.settings is not None:
            return float(self.settings.bootstrap.confidence)
        sig = next((s for s in self.eta.signatures if isinstance(s, dict)), {})
        return float(sig["confidence"]) if "confidence" in sig else None


def load_run(folder: str | Path, *, traces: Sequence[Path] = (), record: RunRecord | None = None) -> RunData:
    """Read and check a run folder; an InputError names the first missing file or column.
    ``traces`` replace the trace files named in ``run.json`` (Table 11); ``record``: the run's
    record as the run holds it in memory (else ``run.json`` is read)."""
    root = Path(folder)
    if not root.is_dir():
        raise InputError.at(root, "is not a folder" if root.exists() else "no such folder",
                            accepted="a run folder written by `simulplay run` or `simulplay demo`")
    record = record or RunRecord.read(root / "run.json")
    exp = record.settings
    manifest = _read_manifest(root / "manifest.parquet")
    summary = _read(root / "summary.parquet", SUMMARY_READ, "playback summary")
    known = [s for s in manifest.signatures + summary.signatures if isinstance(s, dict)]
    eta = _read_either(root, "eta", ETA_COLUMNS, "η table", known)
    known += [s for s in eta.signatures if isinstance(s, dict)]
    per_talk = _read(root / "eta_per_talk.csv", ("talk_id", "condition", "delta_ref_s", "delta_s", "eta_s",
                                                  "duration_part_s", "idle_part_s"), "per-talk η table", known)
    run = RunData(root, record.data, exp.a, exp.f, exp.reference, exp.rule_texts, manifest, summary, eta, per_talk,
                  run_record=record)
    run.inputs = [InputRow("run.json", "run record", "settings and counts", sha256=file_hash(root / "run.json"))]
    _note(run, manifest, "request manifest", "Tables 1, 12; Figures 2–4")
    _note(run, summary, "playback summary", "primary replay (request release, measured service)")
    _note(run, eta, "η table", "primary")
    _note(run, per_talk, "per-talk η table", "primary")
    if (root / "contrasts.csv").exists():
        run.contrasts = _read(root / "contrasts.csv", CONTRAST_COLUMNS, "contrast table", known)
        _note(run, run.contrasts, "contrast table", "primary")
    for v in exp.variant_texts:
        label = variant_label(v)
        run.variants[label] = _read_either(root, f"eta.{label}", ETA_COLUMNS, f"η table of variant {v}", known)
        _note(run, run.variants[label], "η table", f"sensitivity replay {v} (Table 8)")
    for key, name in OPTIONAL_TABLES.items():
        if (root / name).exists():
            run.optional[key] = _read(root / name, (), name, known)
            _note(run, run.optional[key], name.removesuffix(".csv").replace("_", " ") + " table", "shown as it is")
    _read_live(run, root / "live")
    _read_recorded(run, root, known)
    read_run_traces(run, list(traces) or list(exp.traces),
                    "given with --trace" if traces else "named in run.json")
    return run


def _read_live(run: RunData, live: Path) -> None:
    """A live run's prediction tables in ``live/`` (``simulplay demo --live``), when present."""
    if not (live / PREDICTION).exists():
        return
    run.optional["live_prediction"] = _read(live / PREDICTION, PREDICTION_REQUIRED,
                                            "live prediction table")
    _note(run, run.optional["live_prediction"], "live prediction table", "Table 18, Figure 5", "live/")
    if (live / PREDICTION_ETA).exists():
        run.optional["live_eta"] = _read(live / PREDICTION_ETA, PREDICTION_ETA_REQUIRED,
                                         "live prediction η table")


def _read_recorded(run: RunData, root: Path, known: list[dict[str, Any]]) -> None:
    """The tables of :data:`RECORDED_TABLES` the run folder holds (Parquet or CSV)."""
    for key, (stem, required, what, use) in RECORDED_TABLES.items():
        if any((root / f"{stem}{ext}").exists() for ext in (".parquet", ".csv")):
            run.optional[key] = _read_either(root, stem, required, what, known)
            _note(run, run.optional[key], what, use)


def _note(run: RunData, table: Signed, kind: str, use: str, under: str = "") -> None:
    """One Inputs row for a file of the run folder (named relative to the folder)."""
    run.inputs.append(InputRow(under + table.path.name, kind, use, len(table.frame),
                               signature_fingerprint(table.signatures), file_hash(table.path)))


def _read(path: Path, required: Sequence[str], what: str, known: Sequence[dict[str, Any]] = ()) -> Signed:
    """A table of the run with its signatures: a Parquet table's structured ones, a CSV's
    display strings matched back to the structured signatures ``known`` (never parsed)."""
    df, meta = read_table(path)
    csv = path.suffix.lower() == ".csv"
    Checker(str(path), df).require_columns(without_ties(tuple(required)) + ("signature",) * csv, what)
    sigs = stored_signatures(meta, len(df))
    if sigs is None and "signature" not in df:
        raise InputError.at(path, "carries no signature", field="signature",
                            accepted="a table written by simulplay (Parquet metadata or a signature column)")
    lookup = {format_signature(s): s for s in known}
    return Signed(with_ties(typed_frame(df) if csv else keys_as_text(df)),
                  sigs if sigs is not None else [lookup.get(str(s), str(s)) for s in df["signature"]], path)


def _read_manifest(path: Path) -> Signed:
    df, meta = read_table(path)
    sigs = stored_signatures(meta, len(df))
    if sigs is None:
        raise InputError.at(path, "carries no signature", accepted="a manifest written by `simulplay synth`/`run`")
    valid = validate_manifest(df.assign(_sig=np.arange(len(df))), str(path))
    return Signed(valid.drop(columns="_sig"), [sigs[i] for i in valid["_sig"]], path)


def _read_either(root: Path, stem: str, required: Sequence[str], what: str, known: list[dict]) -> Signed:
    pq, csv = root / f"{stem}.parquet", root / f"{stem}.csv"
    if not pq.exists() and not csv.exists():
        raise InputError.at(pq, "no such file",
                            accepted=f"the {what} written by `simulplay run` ({pq.name} or {csv.name})")
    return _read(pq if pq.exists() else csv, required, what, known)


def keys_as_text(df: pd.DataFrame) -> pd.DataFrame:
    """Identifier columns as text (a Parquet table may store a realization as a number)."""
    out = df.copy()
    for col in KEY_COLUMNS:
        if col in out and col != "signature":
            out[col] = out[col].astype(str)
    return out


def read_run_traces(run: RunData, paths: list[Path], origin: str) -> None:
    """The traces for Table 11 (``origin`` says where their paths came from); a missing
    file is noted in the report, not an error."""
    from simulplay.traces import read_trace

    missing = [relative_name(p, run.folder) for p in paths if not p.is_file()]
    if not paths or missing:
        run.notes.append("Trace statistics (Table 11) are left out: trace file(s) not found: "
                         + (", ".join(missing) or f"none {origin}"))
        return
    frames = [read_trace(p) for p in paths]
    traces = pd.concat(frames, ignore_index=True)
    streams = traces[["talk_id", "system"]].drop_duplicates()
    if len(streams) != sum(len(f[["talk_id", "system"]].drop_duplicates()) for f in frames):
        raise InputError.at(", ".join(map(str, paths)), "the same (talk_id, system) stream appears in more than "
                            "one trace file", accepted="each stream in one file")
    run.traces = traces
    hashes = [file_hash(p) for p in paths]
    run.trace_signature = {"table": "trace-stats", "trace": [f"{p.name}@{h}" for p, h in zip(paths, hashes)]}
    run.inputs += [InputRow(relative_name(p, run.folder), "trace", f"Table 11 ({origin})", len(f), "", h)
                   for p, f, h in zip(paths, frames, hashes)]


def relative_name(path: Path, folder: Path) -> str:
    """``path`` as the report names it: relative to the run folder (``../traces/x.jsonl``), so
    that a report names no machine's absolute path and reads the same wherever the run
    folder and its inputs are moved together."""
    return Path(os.path.relpath(Path(path).resolve(), Path(folder).resolve())).as_posix()
