"""Reports from step-by-step work: the tables the individual commands wrote, given by path
or found in a folder without ``run.json`` (any file names; see :mod:`.inputs`).

Required (the minimum): a request manifest (``synth``, an importer, or written by hand),
the playback summary of its primary replay (``replay MANIFEST``: request release,
measured service) and an η table computed from that summary (``eta``). Used when present:
the per-talk η table (rebuilt from the summary when absent), contrast tables, η tables of
sensitivity replays (Table 8), edge-silence η and non-speech share tables, content,
word-timing and player tables, and traces (Table 11: ``--trace``, else traces among the
inputs, else the trace files the manifest records).

Roles come from the tables, never from file names:

* the primary summary is the one the manifest's primary replay reproduces (every
  output's D, I and L to 1 ns);
* A, F and the reference come from the η table's structured signature; for an η table
  whose signature is only a display string (CSV; never parsed) the reference is the one
  summary condition the table lacks, and A and F the ordered pair of systems whose gaps
  reproduce it;
* an η, per-talk or contrast table is the primary one when the primary summary
  reproduces its point values (means, parts and counts, to 1 ns; intervals are taken as
  they are); one whose structured signature names another replay belongs to that
  sensitivity replay.

Refused (one line, exit 2): a required table missing; two tables of one role that differ
(identical copies, such as a Parquet table and its CSV, are fine: the Parquet one is
used); a table whose structured signature makes it the primary one while the summary
does not reproduce it; η tables that compare different translators or references;
traces lacking a stream of the manifest.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simulplay.core.errors import InputError
from simulplay.core.signature import base_signature
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
from simulplay.report.match import (
    CONTRAST_POINTS,
    ETA_POINTS,
    PANEL,
    TALK_POINTS,
    Rebuild,
    canonical,
    infer_names,
    names_of,
    points_mismatch,
    primary_replay,
    replay_label,
)
from simulplay.report.queue import summary_mismatch
from simulplay.report.read_run import InputRow, RunData, Signed, keys_as_text, read_run_traces, relative_name
from simulplay.sim import replay

MINIMUM = ("a request manifest, the playback summary of its replay (`simulplay replay`) and an η table computed "
           "from that summary (`simulplay eta`)")
#: RunData.optional key → kind, and what the report makes of it.
OPTIONAL = {"eta_edges": ("eta-edges", "Table 10"), "edges_nonspeech": ("edges-nonspeech", "Table 16"),
            "content": ("content", "content diagnostics"), "content_pairs": ("content-pairs", "Table 13"),
            "word_timing": ("word-timing", "Table 17"), "player": ("player", "player metrics"),
            "latency": ("latency", "Table 1b"), "text_latency": ("text-latency-compare", "Table 1c"),
            "quality": ("quality-intervals", "Table 19")}
NOT_PARSED = "its signature is a display string (never parsed)"


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
    summary_t, res = _primary_summary(by.get("playback-summary", []), manifest, where)
    summary = Signed(canonical(keys_as_text(summary_t.frame)), summary_t.signatures, summary_t.path)
    rebuild = Rebuild(summary.frame)
    eta_t, names = _primary_eta(by.get("eta", []), rebuild, where, summary_t.path.name)
    a, f, ref = names
    eta = Signed(keys_as_text(eta_t.frame), eta_t.signatures, eta_t.path)
    rules = [ref] + [c for c in dict.fromkeys(eta.frame["condition"]) if c != ref]
    run = RunData(paths[0] if paths[0].is_dir() else paths[0].parent, {}, a, f, ref, rules, manifest, summary, eta,
                  _per_talk(by.get("eta-per-talk", []), rebuild, names, eta, where))
    run.parts = res.parts
    run.contrasts = _contrasts(by.get("contrast", []), rebuild, names, where)
    run.variants = _variants(by.get("eta", []), names, where)
    for key, (kind, use) in OPTIONAL.items():
        t = _choose(by.get(kind, []), _what(by, kind), where, required=False)
        if t is not None:
            t.use = use
            run.optional[key] = Signed(keys_as_text(t.frame), t.signatures, t.path)
    _traces(run, by.get("trace", []), manifest_t, list(traces))
    run.inputs = _input_rows(tables, skipped, run)
    unused = sum(r.use.startswith("not used") for r in run.inputs)
    if unused:
        run.notes.append(f"{unused} input file(s) not used; the Inputs table says why.")
    return run


def _what(by: dict[str, list[TableFile]], kind: str) -> str:
    return by[kind][0].what if by.get(kind) else kind


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


def _primary_summary(cands: list[TableFile], manifest: Signed, where: str):
    if not cands:
        raise InputError.at(where, "no playback summary among the inputs", accepted=MINIMUM)
    res = replay(manifest.frame, allow_incomplete=True, source=str(manifest.path))
    primary, first_miss = [], None
    for t in cands:
        miss = summary_mismatch(res.summary, canonical(keys_as_text(t.frame)))
        if miss is None:
            primary.append(t)
            continue
        kind = primary_replay(t.signatures[0])
        if kind is False:
            t.use = f"not used: summary of the {replay_label(t.signatures[0])} replay (Table 8 shows its η)"
        elif kind is None:
            t.use = f"not used: not the manifest's primary replay, and {NOT_PARSED}"
            first_miss = first_miss or (t, miss)
        else:
            first_miss = (t, miss)
            break
    if first_miss and (not primary or primary_replay(first_miss[0].signatures[0])):
        t, miss = first_miss
        raise InputError.at(manifest.path, f"replaying it does not reproduce {t.path} for {miss}",
                            accepted="the manifest and the playback summary of its replay")
    if not primary:
        raise InputError.at(where, "no playback summary of the manifest's primary replay (request release, "
                            "measured service)", accepted=MINIMUM)
    chosen = _choose(primary, "playback summary of the primary replay", where)
    chosen.use = "primary replay (request release, measured service): Tables 1, 2, 4–5, 8; Figures 1–3"
    return chosen, res


def _primary_eta(cands: list[TableFile], rebuild: Rebuild, where: str, summary_name: str):
    if not cands:
        raise InputError.at(where, "no η table among the inputs", accepted=MINIMUM)
    claimed = {n for t in cands if names_of(t) and primary_replay(t.signatures[0]) for n in names_of(t)}
    if not claimed:
        claimed = {n for t in cands if names_of(t) for n in names_of(t)}  # from sensitivity replays' η tables
    if not claimed:
        for t in cands:
            found = infer_names(t, rebuild)
            if len(found) > 1:
                raise InputError.at(t.path, f"matches the summary both as {found[0][0]} vs {found[0][1]} and as "
                                    f"{found[1][0]} vs {found[1][1]}; {NOT_PARSED}", accepted="the η table as "
                                    "Parquet (its signature names A, F and the reference)")
            claimed |= set(found)
    if len(claimed) > 1:
        shown = sorted(claimed)[:2]
        raise InputError.at(where, f"the η tables among the inputs compare different translators or references: "
                            f"{shown[0][0]} vs {shown[0][1]} against {shown[0][2]}, and {shown[1][0]} vs "
                            f"{shown[1][1]} against {shown[1][2]}", accepted="the η tables of one comparison")
    if not claimed:
        raise InputError.at(cands[0].path, f"does not come from {summary_name}: no pair of its systems and no "
                            "reference reproduces it", accepted=f"an η table computed by `simulplay eta` from "
                            f"{summary_name}")
    names = claimed.pop()
    res = rebuild(names)
    primary = _matching(cands, None if res is None else res.table, PANEL + ("condition",), ETA_POINTS,
                        summary_name, "η table")
    chosen = _choose(primary, "η table of the primary replay", where)
    chosen.use = "primary: Tables 2, 8; Figure 1"
    return chosen, names


def _matching(cands: list[TableFile], rebuilt: pd.DataFrame | None, keys, cols, summary_name: str, what: str, *,
              subset: bool = False) -> list[TableFile]:
    """The candidates the summary reproduces; the others are marked (a sensitivity
    replay's, or unknown) or refused (a primary signature the summary contradicts)."""
    out = []
    for t in cands:
        if primary_replay(t.signatures[0]) is False:
            t.use = f"not used: {what} of the {replay_label(t.signatures[0])} replay"
            continue
        miss = "no such comparison in the summary" if rebuilt is None else \
            points_mismatch(t.frame, rebuilt, keys, cols, subset=subset)
        if miss is None:
            out.append(t)
        elif primary_replay(t.signatures[0]) is None or names_of(t) is None:
            t.use = f"not used: not computed from {summary_name}, and {NOT_PARSED}"
        else:
            article = "an" if what.startswith("η") else "a"
            raise InputError.at(t.path, f"does not come from {summary_name}: {miss}",
                                accepted=f"{article} {what} computed by `simulplay eta` from {summary_name}")
    return out


def _per_talk(cands: list[TableFile], rebuild: Rebuild, names, eta: Signed, where: str) -> Signed:
    res = rebuild(names)
    keys = PANEL + ("talk_id", "condition")
    chosen = _choose(_matching(cands, res.per_talk, keys, TALK_POINTS, eta.path.name, "per-talk η table"),
                     "per-talk η table of the primary replay", where, required=False)
    if chosen is not None:
        chosen.use = "primary: Tables 4–5; Figure 1"
        return Signed(keys_as_text(chosen.frame), chosen.signatures, chosen.path)
    pk = [k for k in PANEL if k in res.per_talk]
    index = {tuple(r): i for i, r in enumerate(eta.frame[pk + ["condition"]].astype(str).itertuples(index=False))}
    sigs = [eta.signatures[index[tuple(r)]] for r in res.per_talk[pk + ["condition"]].astype(str)
            .itertuples(index=False)]
    return Signed(res.per_talk, sigs, Path("(rebuilt from the summary)"))


def _contrasts(cands: list[TableFile], rebuild: Rebuild, names, where: str) -> Signed | None:
    if not cands:
        return None
    conds = set(rebuild.summary["condition"])
    pairs = tuple(dict.fromkeys((canonical_condition(p), canonical_condition(q)) for t in cands
                                for p, q in zip(t.frame["p1"], t.frame["p2"])
                                if {canonical_condition(p), canonical_condition(q)} <= conds))
    res = rebuild(names, pairs)
    for t in cands:
        t.frame = t.frame.assign(p1=t.frame["p1"].map(canonical_condition), p2=t.frame["p2"].map(canonical_condition))
    matched = _matching(cands, None if res is None else res.contrasts, PANEL + ("p1", "p2"), CONTRAST_POINTS,
                        "the summary", "contrast table", subset=True)
    chosen = _choose(matched, "contrast table of the primary replay", where, required=False)
    if chosen is None:
        return None
    chosen.use = "primary: Table 9"
    return Signed(keys_as_text(chosen.frame), chosen.signatures, chosen.path)


def _variants(cands: list[TableFile], names, where: str) -> dict[str, Signed]:
    """η tables whose structured signature names a sensitivity replay, by its label."""
    by_label: dict[str, list[TableFile]] = {}
    for t in cands:
        if primary_replay(t.signatures[0]) is False and names_of(t):
            if names_of(t) != {names}:
                n = sorted(names_of(t))[0]
                raise InputError.at(t.path, f"compares {n[0]} vs {n[1]} against {n[2]}, the primary η table "
                                    f"{names[0]} vs {names[1]} against {names[2]}",
                                    accepted="the η tables of one comparison")
            by_label.setdefault(replay_label(t.signatures[0]), []).append(t)
    out = {}
    for label, ts in sorted(by_label.items()):  # file names say nothing: in label order
        t = _choose(ts, f"η table of the {label} replay", where)
        t.use = f"sensitivity replay {label}: Table 8"
        out[label] = Signed(keys_as_text(t.frame), t.signatures, t.path)
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
