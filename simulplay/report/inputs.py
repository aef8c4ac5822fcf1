"""The tables a report reads, each with what it is and what it came from.

Its kind: a run folder's files the run record names (:func:`run_tables`); any other table's
from its Parquet metadata (:func:`~simulplay.formats.kinds.read_typed`), a hand-written request
manifest's by its columns, a ``.jsonl`` file's trace. What it came from: its structured
signature, one per row (the replay, :func:`~simulplay.formats.summary.replay_label`; an η
table's comparison). A CSV records no kind and only display signatures: outside a run folder
it is read only as the copy of a Parquet input (:func:`place`). File names matter only in a
run folder.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from simulplay.core.errors import InputError
from simulplay.core.provenance import file_fingerprint as file_hash
from simulplay.core.signature import base_signature, format_signature, settings_hash
from simulplay.core.tables import Written, stored_signatures
from simulplay.formats.kinds import KIND_NAMES, RUN_FILES, find_run_file, read_typed, run_file
from simulplay.formats.summary import replay_label, variant_label
from simulplay.manifest.columns import MANIFEST_COLUMNS
from simulplay.report.record import RunSettings

Signature = dict[str, Any] | str
#: Each kind shown when present (beside the four every report reads): its ``RunData.optional`` key and what the
#: report makes of it. A run folder's file of each kind: :data:`~simulplay.formats.kinds.RUN_FILES`.
SHOWN = {
    "eta-edges": ("eta_edges", "Table 10"), "edges-nonspeech": ("edges_nonspeech", "Table 16"),
    "content": ("content", "content diagnostics"), "content-pairs": ("content_pairs", "Table 13"),
    "word-timing": ("word_timing", "Table 17"), "player": ("player", "player metrics"),
    "latency": ("latency", "Table 1b"), "text-latency-compare": ("text_latency", "Table 1c"),
    "live-prediction": ("live_prediction", "Table 18, Figure 5"), "live-prediction-eta": ("live_eta", "Table 18b"),
    "quality-intervals": ("quality", "Table 19"), "spoken": ("spoken", "Table 8c"),
}
UNPLACED = ("a CSV that copies no Parquet input: a CSV records neither its kind nor its replay (its signature is a "
            "display string, never parsed)")


@dataclass
class Signed:
    """A table with one signature per row, and what the report knows of it: its kind (``""``
    when nothing says it), its metadata, the replay it comes from (``""`` the primary one, else
    a sensitivity replay's label; ``None`` when its signatures are display strings), what the
    report did with it and, for a table the run handed over in memory, its file's hash as written."""

    frame: pd.DataFrame
    signatures: list[Signature]
    path: Path
    kind: str = ""
    meta: dict[str, Any] = field(default_factory=dict)
    replay: str | None = None
    use: str = ""
    sha256: str = ""

    @property
    def file_sha256(self) -> str:
        """The first 12 hex digits of the file's SHA-256 (as written, else read now); ``—`` for none."""
        return self.sha256 or (file_hash(self.path) if self.path.is_file() else "—")

    @property
    def what(self) -> str:
        """The kind as the report names it (``η table``); a kind the report does not read as its
        metadata writes it (``chunks``)."""
        return KIND_NAMES.get(self.kind, self.kind or "unknown")

    @property
    def shown(self) -> list[str]:
        """Each row's signature as displayed (a CSV's stored string, or a dict formatted)."""
        return [s if isinstance(s, str) else format_signature(s) for s in self.signatures]

    @property
    def fingerprint(self) -> str:
        """A short hash of the distinct display signatures (equal for a Parquet table and its
        CSV copy); empty when there are none."""
        return settings_hash({"signatures": list(dict.fromkeys(self.shown))}) if self.signatures else ""


def read_file(path: Path, kind: str = "", known: Sequence[dict[str, Any]] = (), kept: Written | None = None) -> Signed:
    """One table: its kind (``kind`` when the run record names it, else its metadata's, else
    a manifest's by its columns), rows (:func:`~simulplay.formats.kinds.read_typed`) and
    signatures: Parquet's structured ones, a CSV's display strings matched back to the structured
    signatures ``known`` that render identically; a table without any (a manifest written by
    hand) is signed by its file's name and hash. ``kept``: the table as the run wrote it, in
    memory (the file is not read)."""
    if path.suffix.lower() == ".jsonl":
        from simulplay.traces import read_trace

        return Signed(read_trace(path), [], path, "trace")
    df, meta, stored = read_typed(path, kept)
    kind = kind or stored
    if not kind and set(MANIFEST_COLUMNS) <= set(df.columns):
        kind = "manifest"
    sigs = stored_signatures(meta, len(df))
    if sigs is None and "signature" in df:
        lookup = {format_signature(s): s for s in known}
        sigs = [lookup.get(str(s), str(s)) for s in df["signature"]]
    elif sigs is None:
        sigs = [base_signature(input=f"{path.name}@{file_hash(path)}")] * len(df)
    structured = bool(sigs) and all(isinstance(s, dict) for s in sigs)  # the replay it comes from
    return Signed(df, sigs, path, kind, meta, replay_label(sigs[0]) if structured else None,
                  sha256=kept.sha256 if kept is not None else "")


def place(tables: list[Signed]) -> None:
    """A table without a kind that copies a Parquet input (the same columns, rows and display
    signatures: a CSV its step wrote beside it) takes that input's kind and replay; any other
    is marked not used, with the reason."""
    originals = [t for t in tables if t.kind and t.path.suffix.lower() == ".parquet"]
    for t in (t for t in tables if not t.kind and not t.use):
        cols, csv = set(t.frame.columns) - {"signature"}, t.path.suffix.lower() == ".csv"
        o = next((o for o in originals if o.shown == t.shown and len(o.frame) == len(t.frame)
                  and set(o.frame.columns) - {"signature"} == cols), None)
        if o is not None:
            t.kind, t.replay = o.kind, o.replay
        else:
            t.use = f"not used: {UNPLACED if csv else 'a table with no simulplay kind in its metadata'}"


def run_tables(root: Path, settings: RunSettings, kept: Mapping[Path, Written] | None = None) -> list[Signed]:
    """The tables of a run folder, each with the kind and replay the run record gives it: the
    files of :data:`~simulplay.formats.kinds.RUN_FILES` and each sensitivity replay's η table;
    ``kept``: the tables the run wrote, as it holds them in memory (by resolved path; one not
    there is read from its file)."""
    kept = kept or {}
    wanted = [(kind, "") for kind in RUN_FILES]
    wanted[5:5] = [("eta", variant_label(v)) for v in settings.variant_texts]
    tables: list[Signed] = []
    for i, (kind, replay) in enumerate(wanted):
        path = find_run_file(root, kind, replay)
        if path is None and (i < 4 or replay):
            raise InputError.at(run_file(root, kind, replay), "no such file",
                                accepted=f"the {KIND_NAMES[kind]} written by `simulplay run` (Parquet or CSV)")
        if path is not None:
            known = [s for t in tables for s in t.signatures if isinstance(s, dict)]
            tables.append(read_file(path, kind, known, kept.get(path.resolve())))
            tables[-1].replay = replay
    return tables


def step_tables(paths: Sequence[Path]) -> list[Signed]:
    """The tables of step-by-step work: files, and folders whose tables are all read. A named
    file must be a table whose kind is known (:func:`place`); one in a folder that is not is
    listed as not used."""
    tables, seen = [], set()
    for p in paths:
        for f in folder_files(p) if p.is_dir() else [p]:
            if f.resolve() not in seen:
                seen.add(f.resolve())
                try:
                    tables.append(read_file(f))
                except InputError as e:
                    if not p.is_dir():
                        raise
                    tables.append(Signed(pd.DataFrame(), [], f, use=f"not read: {e}"))
    place(tables)
    named = {p.resolve() for p in paths}
    for t in (t for t in tables if not t.kind and t.path.resolve() in named):
        raise InputError.at(t.path, t.use.replace("not used: ", "is ", 1), accepted="a table written by simulplay as "
                            "Parquet (rerun the step that wrote it with --out ending in .parquet), a request "
                            "manifest or a trace")
    return tables


def folder_files(folder: Path) -> list[Path]:
    """The candidate tables in a folder: its own ``.parquet``, ``.csv`` and ``.jsonl``
    files (not hidden, not in subfolders), by name."""
    return sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")
                  and p.suffix.lower() in (".parquet", ".csv", ".jsonl"))
