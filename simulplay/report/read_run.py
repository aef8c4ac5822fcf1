"""Reading what a report is made from, a run folder or step-by-step work, into its
:class:`RunData`: the tables of :mod:`.inputs`, each given its role by its kind and replay:
the primary replay's manifest, summary, η, per-talk (else rebuilt from the summary) and
contrast tables, the η tables of sensitivity replays (Table 8), the tables of
:data:`.inputs.SHOWN`, and traces (Table 11: ``--trace``, else traces among the inputs, else
those ``run.json`` names, else those the manifest records). The comparison (A, F, reference)
is the run record's, else the η tables' signatures'. Refused in one line (docs/reports.md): a
required table missing, two tables of one role whose signatures differ, η tables of
different comparisons, traces lacking a stream of the manifest.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simulplay.analysis.bootstrap import Bootstrap
from simulplay.analysis.eta import compute_eta
from simulplay.analysis.quality_intervals import DELTA_COLUMNS
from simulplay.analysis.spoken import SPOKEN_COLUMNS
from simulplay.core.errors import InputError
from simulplay.core.fields import Checker
from simulplay.core.tables import Written, read_table
from simulplay.formats.eta import CONTRAST_COLUMNS, ETA_COLUMNS, PER_TALK_COLUMNS, without_ties
from simulplay.formats.kinds import KIND_NAMES, keys_as_text
from simulplay.formats.live import PREDICTION_ETA_REQUIRED, PREDICTION_REQUIRED
from simulplay.formats.summary import SUMMARY_READ, variant_label
from simulplay.grouping import canonical_condition
from simulplay.manifest.traces import recorded_traces
from simulplay.manifest.validate import validate_manifest
from simulplay.report.inputs import SHOWN, UNPLACED, Signed, file_hash, run_tables, step_tables
from simulplay.report.record import RunRecord, RunSettings

MINIMUM = ("a request manifest, the playback summary of its replay (`simulplay replay`) and an η table computed "
           "from that summary (`simulplay eta`)")
#: What the report reads of each kind (the columns' homes: :mod:`simulplay.formats`, :mod:`simulplay.analysis`).
NEEDED = {"playback-summary": SUMMARY_READ, "eta": ETA_COLUMNS, "eta-per-talk": PER_TALK_COLUMNS,
          "contrast": CONTRAST_COLUMNS, "quality-intervals": DELTA_COLUMNS, "spoken": SPOKEN_COLUMNS,
          "live-prediction": PREDICTION_REQUIRED, "live-prediction-eta": PREDICTION_ETA_REQUIRED}


@dataclass
class RunData:
    """Everything the report reads: a run folder, or the tables of step-by-step work."""

    folder: Path  # the run folder, the folder of tables, or the folder of the first table given
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
    files: list[Signed] = field(default_factory=list)  # every file read or found, with its use: the Inputs table
    parts: pd.DataFrame | None = None  # per-part primary replay, when the loader already made it
    run_record: RunRecord | None = None  # run.json as objects; None for step-by-step tables
    kept: Mapping[Path, Written] = field(default_factory=dict)  # the tables a run handed over in memory

    def read_table(self, path: Path) -> tuple[pd.DataFrame, dict[str, Any]]:
        """A table of the run folder and its metadata: as the run handed it over in memory
        (:func:`load_run`'s ``kept``), else read from its file."""
        kept = self.kept.get(Path(path).resolve())
        return (kept.frame, kept.meta) if kept is not None else read_table(path)

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


def load_run(folder: str | Path, *, traces: Sequence[Path] = (), record: RunRecord | None = None,
             kept: Mapping[Path, Written] | None = None) -> RunData:
    """A run folder read and checked (an InputError names the first missing file or column);
    ``traces`` replace the trace files named in ``run.json`` (Table 11); ``record`` and
    ``kept``: the run's record and the tables it wrote, as the run holds them in memory
    (:func:`~simulplay.core.tables.keep_written`; else ``run.json`` and the files are read)."""
    root = Path(folder)
    if not root.is_dir():
        raise InputError.at(root, "is not a folder" if root.exists() else "no such folder",
                            accepted="a run folder written by `simulplay run` or `simulplay demo`")
    record = record or RunRecord.read(root / "run.json")
    run = _read(run_tables(root, record.settings, kept), root, str(root), list(traces), record)
    run.kept = kept or {}
    return run


def load_tables(paths: Sequence[Path], traces: Sequence[Path] = ()) -> RunData:
    """The tables of step-by-step work (:func:`.inputs.step_tables`) read and checked."""
    where = str(paths[0]) if len(paths) == 1 else f"inputs {', '.join(map(str, paths))}"
    return _read(step_tables(paths), paths[0] if paths[0].is_dir() else paths[0].parent, where, list(traces))


def _read(tables: list[Signed], folder: Path, where: str, traces: list[Path],
          record: RunRecord | None = None) -> RunData:
    """Each table given its role (see the module) and checked."""
    kinds, roles = defaultdict(list), defaultdict(list)  # by kind; by kind and replay
    for t in tables:
        kinds[t.kind].append(t)
        roles[t.kind, t.replay].append(t)
    exp = record.settings if record else None
    manifest_t = _one(kinds["manifest"], "request manifest", tables, where)
    summary = _one(roles["playback-summary", ""], "playback summary", tables, where)
    names = (exp.a, exp.f, exp.reference) if exp else _names(kinds["eta"], tables, where)
    eta = _one(roles["eta", ""], "η table", tables, where)
    manifest_t.use, summary.use, eta.use = ("request manifest: Tables 1, 12; Figures 2–4", "primary replay (request "
                                            "release, measured service): Tables 1, 2, 4–5, 8; Figures 1–3",
                                            "primary: Tables 2, 8; Figure 1")
    rules = exp.rule_texts if exp else [names[2]] + [c for c in dict.fromkeys(eta.frame["condition"]) if c != names[2]]
    run = RunData(folder, *names, rules, _manifest(manifest_t), _signed(summary), _signed(eta), None,
                  run_record=record)
    per_talk, contrasts = (_one(roles[k, ""], KIND_NAMES[k], tables, where, required=False)
                           for k in ("eta-per-talk", "contrast"))
    run.per_talk = _rebuilt(run, names) if per_talk is None else _signed(per_talk, "primary: Tables 4–5; Figure 1")
    run.contrasts = None if contrasts is None else _signed(contrasts, "primary: Table 9")
    replays = {t.replay for t in kinds["eta"] if t.replay}
    for label in [variant_label(v) for v in exp.variant_texts] if exp else sorted(replays):
        t = _one(roles["eta", label], f"η table of the {label} replay", tables, where)
        run.variants[label] = _signed(t, f"sensitivity replay {label}: Table 8")
    for kind, (key, use) in SHOWN.items():
        t = _one(kinds[kind], KIND_NAMES[kind], tables, where, required=False)
        if t is not None:
            run.optional[key] = _signed(t, use)
    record_file = Signed(pd.DataFrame(), [], folder / "run.json", "run record", use="settings and counts")
    run.files = ([record_file] if record else []) + tables + ([run.per_talk] if per_talk is None else [])
    _traces(run, kinds["trace"], manifest_t, traces)
    for t in tables:  # the others, such as a summary, per-talk or contrast table of a sensitivity replay
        of = f" of the {t.replay} replay" if t.replay and t.kind in ("playback-summary", "eta-per-talk", "contrast") \
            else ""
        t.use = t.use or (f"not used: summary{of} (Table 8 shows its η)" if of and t.kind == "playback-summary" else
                          f"not used: {t.what}{of}")
    unused = sum(t.use.startswith("not") for t in run.files)
    if unused:
        run.notes.append(f"{unused} input file(s) not used; the Inputs table says why.")
    return run


def _signed(t: Signed, use: str = "") -> Signed:
    """The table as the report reads it (``use``: what it is used for): its columns checked
    (:data:`NEEDED`), identifiers as text, a summary's conditions and a contrast's pairs canonical."""
    t.use = use or t.use
    Checker(str(t.path), t.frame).require_columns(without_ties(NEEDED.get(t.kind, ())), t.what)
    frame = keys_as_text(t.frame)
    return replace(t, frame=canonical(frame) if t.kind in ("playback-summary", "contrast") else frame)


def canonical(df: pd.DataFrame) -> pd.DataFrame:
    """Conditions and contrast pairs as canonical rule strings (``punct`` → ``punct:cap=2,min_words=3``)."""
    cols = [c for c in ("condition", "p1", "p2") if c in df]
    return df.assign(**{c: df[c].map(canonical_condition) for c in cols}) if cols else df


def _names(etas: list[Signed], tables: list[Signed], where: str) -> tuple[str, str, str]:
    """(A, F, reference) that the η tables' structured signatures name: one comparison."""
    named = {(s["a"], s["f"], canonical_condition(s["reference"])) for t in etas for s in t.signatures
             if isinstance(s, dict) and {"a", "f", "reference"} <= s.keys()}
    if len(named) > 1:
        (a1, f1, r1), (a2, f2, r2) = sorted(named)[:2]
        raise InputError.at(where, f"the η tables among the inputs compare different translators or references: "
                            f"{a1} vs {f1} against {r1}, and {a2} vs {f2} against {r2}",
                            accepted="the η tables of one comparison")
    if not named and etas:
        raise InputError.at(etas[0].path, "names no translators A, F and no reference in its signature (an older "
                            "simulplay's); rerun `simulplay eta` on its summary", accepted="an η table written by "
                            "`simulplay eta`")
    return named.pop() if named else _one([], "η table", tables, where)


def _one(cands: list[Signed], what: str, tables: list[Signed], where: str, *,
         required: bool = True) -> Signed | None:
    """The one table of a role: copies with the same rows and display signatures collapse
    (Parquet first); two that differ are refused, and so is none when the role is required
    (naming a CSV that copies no Parquet input, if one is among the inputs: it may be the one)."""
    chosen: Signed | None = None
    for t in sorted(cands, key=lambda x: x.path.suffix.lower() != ".parquet"):
        if chosen is None:
            chosen = t
        elif t.shown == chosen.shown and len(t.frame) == len(chosen.frame):
            t.use = f"not used: the same table as {chosen.path}"
        else:
            raise InputError.at(t.path, f"conflicts with {chosen.path}: both are the {what}, but their rows or "
                                "signatures differ", accepted=f"one {what} (identical copies, such as a Parquet "
                                "table and its CSV, are fine)")
    unplaced = [t for t in tables if t.use.startswith(f"not used: {UNPLACED}")]
    if chosen is None and required and unplaced:
        raise InputError.at(unplaced[0].path, f"no {what} among the inputs, and this is {UNPLACED}; rerun the step "
                            "that wrote it with --out ending in .parquet, or give the Parquet table too",
                            accepted=f"the {what} as Parquet (its signature is structured)")
    if chosen is None and required:
        raise InputError.at(where, f"no {what} among the inputs", accepted=MINIMUM)
    return chosen


def _manifest(t: Signed) -> Signed:
    valid = validate_manifest(t.frame.assign(_sig=np.arange(len(t.frame))), str(t.path))
    sigs = [t.signatures[i] for i in valid["_sig"]]
    if not any("rule" in s for s in sigs if isinstance(s, dict)):  # a hand-written manifest
        sigs = [{**s, "rule": c} if isinstance(s, dict) else s for s, c in zip(sigs, valid["condition"])]
    return replace(t, frame=canonical(valid.drop(columns="_sig")), signatures=sigs)


def _rebuilt(run: RunData, names) -> Signed:
    """The per-talk η table recomputed from the summary (one bootstrap draw: the per-talk table
    has no interval), each row signed as its η row."""
    res = compute_eta(run.summary.frame, a=names[0], f=names[1], reference=names[2], boot=Bootstrap(draws=1, seed=0),
                      allow_incomplete=True)
    pk = [k for k in ("backend", "realization") if k in res.per_talk]
    index = {tuple(r): i for i, r in enumerate(run.eta.frame[pk + ["condition"]].astype(str).itertuples(index=False))}
    sigs = [run.eta.signatures[index[tuple(r)]] for r in res.per_talk[pk + ["condition"]].astype(str)
            .itertuples(index=False)]
    return Signed(res.per_talk, sigs, Path("(rebuilt from the summary)"), "eta-per-talk",
                  use="rebuilt from the primary summary (no per-talk table given): Tables 4–5; Figure 1")


def _traces(run: RunData, given: list[Signed], manifest: Signed, option: list[Path]) -> None:
    """Traces for Table 11: --trace, else traces among the inputs, else those run.json names, else
    those the manifest records; a missing or changed one is noted, not an error."""
    from simulplay.traces import read_trace

    for t in given if option else ():
        t.use = "not used: --trace given"
    paths = option or [t.path for t in given] or list(run.settings.traces if run.settings else [])
    origin = "given with --trace" if option else "among the inputs" if given else "named in run.json"
    recorded, changed = ([], []) if paths or run.settings else recorded_traces(manifest.meta.get("traces"))
    if recorded:
        paths, origin = recorded, "recorded in the manifest"
        if changed:
            run.notes.append("Trace statistics (Table 11) are left out: the trace file(s) the manifest records changed"
                             f" since synthesis: {', '.join(map(str, changed))} (give them with --trace to use them)")
            return
    missing = [relative_name(p, run.folder) for p in paths if not p.is_file()]
    if not paths or missing:
        run.notes.append("Trace statistics (Table 11) are left out: " + (
            f"trace file(s) not found: {', '.join(missing)}" if missing else "none named in run.json" if run.settings
            else "no trace among the inputs and none recorded in the manifest (give them with --trace)"))
        return
    read = [next((t for t in given if t.path == p), None) or Signed(read_trace(p), [], p, "trace") for p in paths]
    streams = [set(zip(t.frame["talk_id"].astype(str), t.frame["system"].astype(str))) for t in read]
    lacking = [k for k in dict.fromkeys(zip(run.manifest.frame["talk_id"], run.manifest.frame["system"]))
               if k not in set().union(*streams)]
    if len(set().union(*streams)) != sum(map(len, streams)) or lacking:
        raise InputError.at(", ".join(map(str, paths)), f"holds no stream (talk_id={lacking[0][0]}, system="
                            f"{lacking[0][1]}) of the manifest {manifest.path}" if lacking else "the same (talk_id, "
                            "system) stream appears in more than one trace file", accepted="each stream of the "
                            "manifest in one trace file")
    for t in read:
        t.use = f"Table 11 ({origin})"
    run.traces = pd.concat([t.frame for t in read], ignore_index=True)
    run.trace_signature = {"table": "trace-stats", "trace": [f"{p.name}@{file_hash(p)}" for p in paths]}
    run.files += [t for t in read if all(t is not g for g in given)]


def relative_name(path: Path, folder: Path) -> str:
    """``path`` as the report names it: relative to the run folder (``../traces/x.jsonl``), so
    that a report names no machine's absolute path and reads the same wherever the run
    folder and its inputs are moved together."""
    return Path(os.path.relpath(Path(path).resolve(), Path(folder).resolve())).as_posix()
