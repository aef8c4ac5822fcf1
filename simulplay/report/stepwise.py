"""Reports from step-by-step work: the tables the individual commands wrote, given by path
or found in a folder without ``run.json`` (any file names; see :mod:`.inputs`).

Required (the minimum): a request manifest (``synth``, an importer, or written by hand),
the playback summary of its primary replay (``replay MANIFEST``: request release,
measured service) and an η table computed from that summary (``eta``). Used when present:
the per-talk η table (rebuilt from the summary when absent), contrast tables, η tables of
sensitivity replays (Table 8), edge-silence η and non-speech share tables, content,
word-timing and player tables, and traces (Table 11: ``--trace``, else traces among the
inputs, else the trace files the manifest records).

Roles are read from each table's structured signature, never from file names: the replay a
summary, η, per-talk or contrast table comes from (its ``release``, ``service``, ``trim`` and
``silent``: the primary replay, or a sensitivity replay by its label) and the comparison
an η table makes (``a``, ``f``, ``reference``). A CSV table's signature is a display string
(never parsed): it is used when a Parquet input holds a signature that renders identically
(its Parquet copy, or the η table a contrast row comes from), else it is listed as not
used. The report replays the manifest once for its figures, which checks that the summary
is the manifest's.

Refused (one line, exit 2): a required table missing, or present only as CSV (rerun the
step with a Parquet ``--out``, or give the Parquet copy too); two tables of one role that
differ (identical copies, such as a Parquet table and its CSV, are fine: the Parquet one
is used); a summary the manifest's replay does not reproduce; η tables that compare different
translators or references; traces lacking a stream of the manifest.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simulplay.analysis.bootstrap import Bootstrap
from simulplay.analysis.eta import compute_eta
from simulplay.core.errors import InputError
from simulplay.core.signature import base_signature
from simulplay.formats.summary import variant_label
from simulplay.grouping import canonical_condition
from simulplay.manifest import validate_manifest
from simulplay.report.inputs import (
    TableFile,
    file_hash,
    match_structured,
    read_inputs,
    same_content,
    signature_fingerprint,
)
from simulplay.report.read_run import InputRow, RunData, Signed, keys_as_text, read_run_traces, relative_name

MINIMUM = ("a request manifest, the playback summary of its replay (`simulplay replay`) and an η table computed "
           "from that summary (`simulplay eta`)")
#: RunData.optional key → kind, and what the report makes of it.
OPTIONAL = {"eta_edges": ("eta-edges", "Table 10"), "edges_nonspeech": ("edges-nonspeech", "Table 16"),
            "content": ("content", "content diagnostics"), "content_pairs": ("content-pairs", "Table 13"),
            "word_timing": ("word-timing", "Table 17"), "player": ("player", "player metrics"),
            "latency": ("latency", "Table 1b"), "text_latency": ("text-latency-compare", "Table 1c"),
            "quality": ("quality-intervals", "Table 19")}
NOT_PARSED = "its signature is a display string (never parsed)"
#: The step that writes each role's table, for the refusal of a CSV-only one.
STEP = {"playback summary": "replay", "η table": "eta"}
PANEL = ("backend", "realization")
Names = tuple[str, str, str]


def load_tables(paths: Sequence[Path], traces: Sequence[Path] = ()) -> RunData:
    """Recognise, check and combine the tables of step-by-step work (see the module)."""
    tables, skipped = read_inputs(paths)
    known = [s for t in tables if t.fmt == "parquet" for s in t.signatures if isinstance(s, dict)]
    for t in tables:
        _complete_signatures(t, known)
    _match_contrasts(tables)
    where = str(paths[0]) if len(paths) == 1 else f"inputs {', '.join(map(str, paths))}"
    by = {k: [t for t in tables if t.kind == k] for k in {t.kind for t in tables}}
    for t in tables:
        t.use = f"not used: {t.what}"
    manifest_t = _choose(by.get("manifest", []), "request manifest", where)
    manifest = _manifest(manifest_t)
    summary_t = _primary(by.get("playback-summary", []), "playback summary", where)
    summary_t.use = "primary replay (request release, measured service): Tables 1, 2, 4–5, 8; Figures 1–3"
    summary = Signed(canonical(keys_as_text(summary_t.frame)), summary_t.signatures, summary_t.path)
    names = _names(by.get("eta", []), where)
    eta_t = _primary(by.get("eta", []), "η table", where)
    eta_t.use = "primary: Tables 2, 8; Figure 1"
    eta = _signed(eta_t)
    rules = [names[2]] + [c for c in dict.fromkeys(eta.frame["condition"]) if c != names[2]]
    run = RunData(paths[0] if paths[0].is_dir() else paths[0].parent, {}, *names, rules, manifest, summary, eta,
                  _per_talk(by.get("eta-per-talk", []), summary, names, eta, where))
    run.contrasts = _contrasts(by.get("contrast", []), where)
    run.variants = _variants(by.get("eta", []), where)
    for key, (kind, use) in OPTIONAL.items():
        t = _choose(by.get(kind, []), _what(by, kind), where, required=False)
        if t is not None:
            t.use = use
            run.optional[key] = _signed(t)
    _traces(run, by.get("trace", []), manifest_t, list(traces))
    run.inputs = _input_rows(tables, skipped, run)
    unused = sum(r.use.startswith("not used") for r in run.inputs)
    if unused:
        run.notes.append(f"{unused} input file(s) not used; the Inputs table says why.")
    return run


def _what(by: dict[str, list[TableFile]], kind: str) -> str:
    return by[kind][0].what if by.get(kind) else kind


def _signed(t: TableFile) -> Signed:
    return Signed(keys_as_text(t.frame), t.signatures, t.path)


def canonical(df: pd.DataFrame) -> pd.DataFrame:
    """Conditions as canonical rule strings (``punct`` → ``punct:cap=2,min_words=3``)."""
    return df.assign(condition=df["condition"].map(canonical_condition)) if "condition" in df else df


def _complete_signatures(t: TableFile, known: list[dict[str, Any]]) -> None:
    """CSV display strings matched back to structured signatures; a table without any
    signature (written by hand) is signed by its file's name and hash."""
    if t.fmt == "csv":
        match_structured(t, known)
    if not t.signatures and t.kind != "trace":
        t.signatures = [base_signature(input=f"{t.path.name}@{file_hash(t.path)}")] * len(t.frame)


def _match_contrasts(tables: list[TableFile]) -> None:
    """A contrast row's signature is its η row's (condition P1) with ``table:contrast``
    and ``reference:P2``: derived from every structured η table, so that a CSV contrast
    table finds the replay it belongs to."""
    csv = [t for t in tables if t.kind == "contrast" and not t.structured]
    pairs = {(canonical_condition(p), canonical_condition(q)) for t in csv
             for p, q in zip(t.frame["p1"], t.frame["p2"])}
    derived = [{**sig, "table": "contrast", "reference": q} for t in tables if t.kind == "eta"
               for sig in t.signatures if isinstance(sig, dict) for p, q in pairs if sig.get("rule") == p]
    for t in csv:
        match_structured(t, derived)


def replay_of(t: TableFile) -> str | None:
    """The replay a table comes from, by its structured signature: ``""`` for the primary one
    (request release, measured service, no trim, silent parts skipped), else the label a
    sensitivity replay's files get (``service-zero``, ``release-chunk+service-zero``);
    ``None`` when its signature is a display string."""
    sig = t.signatures[0] if t.signatures else None
    if not isinstance(sig, dict) or not t.structured:
        return None
    changed = {k: sig[k] for k, default in (("release", "request"), ("service", "measured"), ("trim", "none"),
                                             ("silent", "skip")) if sig.get(k, default) != default}
    return variant_label("+".join(f"{k}={v}" for k, v in changed.items()))


def _primary(cands: list[TableFile], what: str, where: str, *, required: bool = True) -> TableFile | None:
    """The one ``what`` of the primary replay; the others are marked with the replay they
    come from. A required one given only with a display signature (CSV) is refused."""
    if required and not cands:
        raise InputError.at(where, f"no {what} among the inputs", accepted=MINIMUM)
    primary = []
    for t in cands:
        label = replay_of(t)
        if label is None:
            t.use = f"not used: {NOT_PARSED}; give its Parquet copy"
        elif label:
            t.use = f"not used: {'summary' if what == 'playback summary' else what} of the {label} replay" + \
                (" (Table 8 shows its η)" if what == "playback summary" else "")
        else:
            primary.append(t)
    unparsed = [t for t in cands if replay_of(t) is None]
    if required and not primary and unparsed:
        raise InputError.at(unparsed[0].path, f"{NOT_PARSED}: it does not say which replay or comparison it comes "
                            f"from; rerun `simulplay {STEP[what]}` with --out ending in .parquet, or give the "
                            "Parquet table too", accepted=f"the {what} as Parquet (its signature is structured)")
    return _choose(primary, f"{what} of the primary replay", where, required=required)


def _names(etas: list[TableFile], where: str) -> Names:
    """(A, F, reference) that the η tables' structured signatures name: one comparison."""
    named = {(s["a"], s["f"], canonical_condition(s["reference"])) for t in etas if replay_of(t) is not None
             for s in t.signatures if {"a", "f", "reference"} <= s.keys()}
    if len(named) > 1:
        shown = sorted(named)[:2]
        raise InputError.at(where, f"the η tables among the inputs compare different translators or references: "
                            f"{shown[0][0]} vs {shown[0][1]} against {shown[0][2]}, and {shown[1][0]} vs "
                            f"{shown[1][1]} against {shown[1][2]}", accepted="the η tables of one comparison")
    if not named and etas:
        _primary(etas, "η table", where)  # refuses a CSV-only η table
        raise InputError.at(etas[0].path, "names no translators A, F and no reference in its signature (an older "
                            "simulplay's); rerun `simulplay eta` on its summary", accepted="an η table written by "
                            "`simulplay eta`")
    if not named:
        raise InputError.at(where, "no η table among the inputs", accepted=MINIMUM)
    return named.pop()


def _choose(cands: list[TableFile], what: str, where: str, *, required: bool = True) -> TableFile | None:
    """The one table of a role: identical copies collapse (Parquet first); two that differ
    are refused, and so is none when the role is required."""
    chosen: TableFile | None = None
    for t in sorted(cands, key=lambda x: x.fmt != "parquet"):
        if chosen is None:
            chosen = t
        elif same_content(chosen, t):
            t.use = f"not used: the same table as {chosen.path}"
        else:
            raise InputError.at(t.path, f"conflicts with {chosen.path}: both are the {what}, but their rows or "
                                "signatures differ", accepted=f"one {what} (identical copies, such as a Parquet "
                                "table and its CSV, are fine)")
    if chosen is None and required:
        raise InputError.at(where, f"no {what} among the inputs", accepted=MINIMUM)
    return chosen


def _manifest(t: TableFile) -> Signed:
    valid = validate_manifest(t.frame.assign(_sig=np.arange(len(t.frame))), str(t.path))
    sigs = [t.signatures[i] for i in valid["_sig"]]
    if not any("rule" in s for s in sigs if isinstance(s, dict)):  # a hand-written manifest
        sigs = [{**s, "rule": c} if isinstance(s, dict) else s for s, c in zip(sigs, valid["condition"])]
    t.use = "request manifest: Tables 1, 12; Figures 2–4"
    return Signed(canonical(valid.drop(columns="_sig")), sigs, t.path)


def _rebuild(summary: Signed, names: Names):
    """The per-talk η table recomputed from the summary (one bootstrap draw: the per-talk
    table has no interval)."""
    return compute_eta(summary.frame, a=names[0], f=names[1], reference=names[2], boot=Bootstrap(draws=1, seed=0),
                       allow_incomplete=True)


def _per_talk(cands: list[TableFile], summary: Signed, names: Names, eta: Signed, where: str) -> Signed:
    chosen = _primary(cands, "per-talk η table", where, required=False)
    if chosen is not None:
        chosen.use = "primary: Tables 4–5; Figure 1"
        return _signed(chosen)
    res = _rebuild(summary, names)
    pk = [k for k in PANEL if k in res.per_talk]
    index = {tuple(r): i for i, r in enumerate(eta.frame[pk + ["condition"]].astype(str).itertuples(index=False))}
    sigs = [eta.signatures[index[tuple(r)]] for r in res.per_talk[pk + ["condition"]].astype(str)
            .itertuples(index=False)]
    return Signed(res.per_talk, sigs, Path("(rebuilt from the summary)"))


def _contrasts(cands: list[TableFile], where: str) -> Signed | None:
    for t in cands:
        t.frame = t.frame.assign(p1=t.frame["p1"].map(canonical_condition), p2=t.frame["p2"].map(canonical_condition))
    chosen = _primary(cands, "contrast table", where, required=False)
    if chosen is None:
        return None
    chosen.use = "primary: Table 9"
    return _signed(chosen)


def _variants(etas: list[TableFile], where: str) -> dict[str, Signed]:
    """η tables whose structured signature names a sensitivity replay, by its label."""
    by_label: dict[str, list[TableFile]] = {}
    for t in etas:
        if replay_of(t):
            by_label.setdefault(replay_of(t), []).append(t)
    out = {}
    for label, ts in sorted(by_label.items()):  # file names say nothing: in label order
        t = _choose(ts, f"η table of the {label} replay", where)
        t.use = f"sensitivity replay {label}: Table 8"
        out[label] = _signed(t)
    return out


def _traces(run: RunData, given: list[TableFile], manifest: TableFile, option: list[Path]) -> None:
    """Traces for Table 11: --trace, else traces among the inputs, else those the manifest records."""
    recorded = [Path(r["path"]) for r in manifest.meta.get("traces", []) if isinstance(r, dict) and "path" in r]
    if option:
        paths, origin = option, "given with --trace"
        for t in given:
            t.use = "not used: --trace given"
    elif given:
        paths, origin = [t.path for t in given], "among the inputs"
    elif recorded:
        changed = [str(p) for p, r in zip(recorded, manifest.meta["traces"])
                   if p.is_file() and not str(r.get("sha256", "")).startswith(file_hash(p))]
        if changed:
            run.notes.append("Trace statistics (Table 11) are left out: the trace file(s) the manifest records "
                             f"changed since synthesis: {', '.join(changed)} (give them with --trace to use them)")
            return
        paths, origin = recorded, "recorded in the manifest"
    else:
        run.notes.append("Trace statistics (Table 11) are left out: no trace among the inputs and none recorded in "
                         "the manifest (give them with --trace)")
        return
    read_run_traces(run, paths, origin)
    if run.traces is not None:
        have = set(zip(run.traces["talk_id"].astype(str), run.traces["system"].astype(str)))
        need = dict.fromkeys(zip(run.manifest.frame["talk_id"], run.manifest.frame["system"]))
        lacking = [k for k in need if k not in have]
        if lacking:
            raise InputError.at(", ".join(map(str, paths)), f"holds no stream (talk_id={lacking[0][0]}, "
                                f"system={lacking[0][1]}) of the manifest {manifest.path}",
                                accepted="the trace(s) the manifest was synthesized from")


def _input_rows(tables: list[TableFile], skipped: list[tuple[Path, str]], run: RunData) -> list[InputRow]:
    """One row per file read or found, named relative to the folder the report describes."""
    trace_rows = {r.path: r for r in run.inputs if r.kind == "trace"}
    rows = []
    for t in tables:
        name = relative_name(t.path, run.folder)
        if t.kind == "trace" and name in trace_rows:
            rows.append(trace_rows.pop(name))
            continue
        rows.append(InputRow(name, t.what, t.use, len(t.frame), signature_fingerprint(t.signatures),
                             file_hash(t.path)))
    rows += [InputRow(relative_name(p, run.folder), "unknown", why, None, "", file_hash(p)) for p, why in skipped]
    if str(run.per_talk.path).startswith("("):
        rows.append(InputRow(str(run.per_talk.path), "per-talk η table", "rebuilt from the primary summary (no "
                             "per-talk table given): Tables 4–5; Figure 1", len(run.per_talk.frame),
                             signature_fingerprint(run.per_talk.signatures)))
    return rows + list(trace_rows.values())
