"""The replays the explorer shows: the primary one and every variant the run computed.

A variant is found from what the inputs hold, never from file names: each sensitivity η
table of the run (``eta.<variant>``, or a step-by-step η table whose structured signature
names another release, service model or reading of silent parts) and, in a run folder,
each threshold of the edge-silence sweep (``edges_summary.parquet``; its speech
probabilities come from the store's cache, :mod:`.edges`). The explorer replays the
manifest under each one with :func:`simulplay.sim.replay` (what ``simulplay replay
--parts`` writes) and checks the result against the summary the run saved for it, when
the run saved one: a replay that does not reproduce it is refused.

Per request the explorer also shows its synthesis start: ``ready − service`` on the
serial synthesizer's clock (:func:`simulplay.sim.playback.serial_clock`, the replay's
own), under the variant's service model. Times are int64 nanoseconds here; the page
shows ``ns / 10⁹`` seconds, the same float the parts table holds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from simulplay.core.errors import InputError
from simulplay.core.keys import RUN_PANEL_KEYS, present
from simulplay.core.signature import format_signature
from simulplay.core.timebase import to_ns
from simulplay.durationmodel.replay_again import replay_deciding
from simulplay.formats.kinds import keys_as_text, run_file
from simulplay.grouping import canonical_condition
from simulplay.grouping.policy import decided_again
from simulplay.manifest import output_keys, read_chunks
from simulplay.manifest.validate import has_samples
from simulplay.report.queue import replay_parts, silent_reading, summary_mismatch
from simulplay.report.read_run import RunData, Signed
from simulplay.sim.part_audio import part_samples
from simulplay.sim.playback import serial_clock
from simulplay.sim.replay import ReplayResult, drop_incomplete
from simulplay.sim.variants import Measured, parse_release, parse_service
from simulplay.traces import streams_from_frame
from simulplay.traces.select import prepare_streams

#: How each replay setting reads on the page.
SERVICE_TITLES = {"measured": "measured service", "zero": "zero service", "fit": "modelled clock (service=fit)"}
RELEASE_TITLES = {"request": "request release", "chunk": "chunk release"}


@dataclass
class Variant:
    """One replay of the manifest: its summary and parts (as ``replay --parts`` writes
    them), one signature per summary row, each request's clock, and its η tables."""

    key: str  # "primary", "service-zero", "release-chunk", "edges-0.5": the page's id
    title: str
    summary: pd.DataFrame
    signatures: list[Any]  # per summary row: a structured dict or a display string
    parts: pd.DataFrame
    clock: pd.DataFrame  # per request: output keys, seq, service_ns, start_ns, ready_ns
    eta: pd.DataFrame  # η rows: panel keys, condition, n_talks, eta_s, interval, counts
    eta_signatures: list[Any]
    per_talk: pd.DataFrame  # panel keys, talk_id, condition, eta_s, …
    per_talk_signatures: list[Any]
    #: per part row, the samples of its request's audio it plays (``sample_start``, ``sample_stop``)
    #: when a part is not a whole request (chunk release, edge trimming); ``None``: whole requests
    samples: pd.DataFrame | None = None
    silent: str = "skip"  # the reading of silent parts (which parts play)
    notes: list[str] = field(default_factory=list)


def variant_title(release: str, service: str, silent: str, primary: bool = False) -> str:
    """``request release, measured service`` (+ ``, silent parts hold``; ``(primary)``)."""
    words = [RELEASE_TITLES.get(release, f"{release} release"),
             SERVICE_TITLES.get(service, f"service {service}")]
    if silent != "skip":
        words.append(f"silent parts {silent}")
    return ", ".join(words) + (" (primary)" if primary else "")


def allows_incomplete(run: RunData) -> bool:
    """Whether the run's replay excluded incomplete outputs (``--allow-incomplete``): its
    record lists them, or its summary's signatures count them (``excluded``)."""
    return bool(run.excluded_outputs) or any(
        isinstance(s, Mapping) and s.get("excluded") is not None for s in run.summary.signatures)


def complete_manifest(run: RunData) -> pd.DataFrame:
    """The manifest's rows of the outputs the replays keep (incomplete ones dropped when
    the run allowed it, as its replay did)."""
    kept, _ = drop_incomplete(run.manifest.frame, allows_incomplete(run), str(run.manifest.path))
    return kept


def request_clock(manifest: pd.DataFrame, service_ns: np.ndarray, ready_ns: np.ndarray | None) -> pd.DataFrame:
    """Per request: its service (ns), synthesis start and readiness (ns) on the serial
    clock (``clock_ready_ns``); ``ready_ns`` (per request) replaces the clock's readiness
    where given (a request-release replay's ``ready_s``, which differs only where the
    manifest recorded readiness instead of clocking it)."""
    keys = output_keys(manifest)
    codes = manifest.groupby(keys, sort=False).ngroup().to_numpy()
    clock = serial_clock(codes, to_ns(np.nan_to_num(manifest["dispatch_s"].to_numpy(float))), service_ns)
    ready = clock.ready if ready_ns is None else ready_ns
    return manifest[keys + ["seq"]].assign(service_ns=service_ns, start_ns=ready - service_ns, ready_ns=ready,
                                           clock_ready_ns=clock.ready).reset_index(drop=True)


def clocked_service(manifest: pd.DataFrame, ready_ns: np.ndarray) -> np.ndarray:
    """The service (ns) each request had in a request-release replay on the serial clock,
    recovered exactly from its readiness: ``ready − max(dispatch, previous ready)`` (the
    first of an output: ``ready − dispatch``), so that a modelled clock need not be fitted
    again."""
    codes = manifest.groupby(output_keys(manifest), sort=False).ngroup().to_numpy()
    dispatch = to_ns(np.nan_to_num(manifest["dispatch_s"].to_numpy(float)))
    first = np.ones(len(codes), bool)
    first[1:] = codes[1:] != codes[:-1]
    previous = np.concatenate([[0], ready_ns[:-1]]).astype(np.int64)
    return ready_ns - np.where(first, dispatch, np.maximum(dispatch, previous))


def per_talk_points(summary: pd.DataFrame, run: RunData, eta: pd.DataFrame,
                    eta_sigs: Sequence[Any]) -> tuple[pd.DataFrame, list[Any]]:
    """Per-talk η of a replay's summary, as :func:`simulplay.analysis.gaps.per_talk_effects`
    computes it (the same differences in the same order: point values, seconds; a talk
    missing an output is left out), each row signed with its η table row's signature
    (same panel and condition)."""
    keys = present(RUN_PANEL_KEYS, summary)
    ref = canonical_condition(run.reference)
    ident = [summary[k].astype(str).tolist() for k in [*keys, "talk_id", "system"]]
    conds = summary["condition"].map(canonical_condition).tolist()
    values = zip(*(summary[c].to_numpy(float).tolist() for c in ("offset_s", "audio_s", "idle_s")))
    at = {(*k[:-1], k[-1], c): v for k, c, v in zip(zip(*ident), conds, values)}
    rows = []
    for talk in dict.fromkeys(k[:-1] for k in zip(*ident)):
        pair = [at.get((*talk, run.a, ref)), at.get((*talk, run.f, ref))]
        for cond in [c for c in dict.fromkeys(conds) if c != ref]:
            a, f = at.get((*talk, run.a, cond)), at.get((*talk, run.f, cond))
            if None in (a, f, *pair):
                continue
            d_ref, d_w = pair[0][0] - pair[1][0], a[0] - f[0]
            rows.append((*talk, cond, d_ref, d_w, d_w - d_ref, (a[1] - f[1]) - (pair[0][1] - pair[1][1]),
                         (a[2] - f[2]) - (pair[0][2] - pair[1][2])))
    table = pd.DataFrame(rows, columns=[*keys, "talk_id", "condition", "delta_ref_s", "delta_s", "eta_s",
                                        "duration_part_s", "idle_part_s"])
    table = table[np.isfinite(table["eta_s"].to_numpy(float))].reset_index(drop=True)
    lookup = {tuple(str(r[k]) for k in keys) + (canonical_condition(r["condition"]),): s
              for r, s in zip(eta.to_dict("records"), eta_sigs)}
    sigs = [lookup.get(tuple(str(r[k]) for k in keys) + (r["condition"],), "") for r in table.to_dict("records")]
    return table, sigs


def primary_variant(run: RunData, manifest: pd.DataFrame) -> Variant:
    """The primary replay: the run's summary, η and per-talk η, its parts replayed."""
    silent = silent_reading(run.summary.signatures)
    parts = run.parts if run.parts is not None else replay_parts(
        run.manifest.frame, run.summary.frame, allow_incomplete=allows_incomplete(run),
        source=str(run.manifest.path), summary_name=run.summary.path.name, silent_parts=silent)
    clock = request_clock(manifest, to_ns(Measured().request_seconds(manifest)), _request_ready(manifest, parts))
    pt = run.per_talk.frame.assign(condition=run.per_talk.frame["condition"].map(canonical_condition))
    return Variant("primary", variant_title("request", "measured", silent, True), run.summary.frame,
                   list(run.summary.signatures), parts, clock, run.eta.frame, list(run.eta.signatures), pt,
                   list(run.per_talk.signatures), silent=silent)


def _request_ready(manifest: pd.DataFrame, parts: pd.DataFrame) -> np.ndarray:
    """Each request's readiness (ns) from a request-release parts table (one part per request)."""
    keys = output_keys(manifest) + ["seq"]
    joined = manifest[keys].merge(parts[keys + ["ready_s"]], on=keys, how="left", validate="one_to_one")
    return to_ns(joined["ready_s"].to_numpy(float))


@dataclass
class Computed:
    """Replays of this run's manifest that a caller has already made (``simulplay run``
    hands over its own), so that the explorer need not make them again."""

    replays: dict[str, ReplayResult] = field(default_factory=dict)  # by variant label (``service-zero``)
    chunks: pd.DataFrame | None = None  # the validated chunk table
    edges: Any = None  # the edge sweep's EdgesResult


def sensitivity_variants(run: RunData, manifest: pd.DataFrame,
                         computed: Computed | None = None) -> tuple[list[Variant], list[str]]:
    """A variant per sensitivity η table with a structured signature (others: a note)."""
    out, notes = [], []
    for label, table in run.variants.items():
        sig = next((s for s in table.signatures if isinstance(s, Mapping)), None)
        if sig is None:
            notes.append(f"Variant {label}: left out, its η table's signature is a display string (never parsed).")
            continue
        if sig.get("trim", "none") != "none":
            continue  # edge trimming: one variant per threshold (edges.py)
        out.append(replay_variant(run, manifest, label, dict(sig), table, computed or Computed()))
    return out, notes


def replay_variant(run: RunData, manifest: pd.DataFrame, label: str, sig: dict[str, Any], table: Signed,
                   computed: Computed) -> Variant:
    """Replay the manifest under the release, service and silent reading ``sig`` names
    (the replay ``computed`` holds under ``label``, when it holds one)."""
    release, service = str(sig.get("release", "request")), str(sig.get("service", "measured"))
    silent = str(sig.get("silent", silent_reading(run.summary.signatures)))
    source = str(run.manifest.path)
    rel = parse_release(release, source=f"{table.path}: signature")
    chunks = None
    if rel.needs_chunks:
        chunks = computed.chunks if computed.chunks is not None else read_chunks(run.manifest.path)
    res, model = computed.replays.get(label), None
    if res is None or rel.needs_chunks:  # a modelled clock (fit) is fitted once, here
        model = parse_service(service, source=f"{table.path}: signature").bind(manifest, source)
    if res is None:
        streams = run_streams(run)
        res = replay_deciding(manifest, service=model, release=rel, silent=silent, streams=streams, chunks=chunks,
                              allow_incomplete=allows_incomplete(run), source=source,
                              upstream=manifest_signature(run))
        _check_saved(run, label, res.summary)
    per_talk, pt_sigs = per_talk_points(res.summary, run, table.frame, table.signatures)
    full = manifest
    res, manifest, kept, notes = recorded_only(res, manifest, label)
    ready = None if rel.needs_chunks else _request_ready(manifest, res.parts)
    svc = to_ns(model.request_seconds(full))[kept] if model is not None else clocked_service(manifest, ready)
    clock = request_clock(manifest, svc, ready)
    samples = None
    if chunks is not None and "n_samples" in chunks and has_samples(manifest):
        keys = output_keys(manifest) + ["seq", "chunk"]
        samples = part_samples(res.parts[keys], manifest, chunks, source=source)[["sample_start", "sample_stop"]]
    return Variant(label, variant_title(release, service, silent), res.summary, list(res.signatures), res.parts,
                   clock, table.frame, list(table.signatures), per_talk, pt_sigs, samples, silent, notes)


def run_streams(run: RunData) -> list | None:
    """The run's streams as ``run`` prepared them (its talks and its events mode), to decide
    a closed-loop output again as the run did; None without traces."""
    if run.traces is None:
        return None
    streams = streams_from_frame(run.traces, revising=True)
    exp = run.settings
    if exp is None:
        return streams
    try:
        return prepare_streams(streams, talks=exp.talks, events=exp.events)[0]
    except InputError:
        return streams


def recorded_only(res: ReplayResult, manifest: pd.DataFrame,
                  label: str) -> tuple[ReplayResult, pd.DataFrame, np.ndarray, list[str]]:
    """The replay and the manifest without the closed-loop outputs the replay decided again
    (their requests are not the manifest's, so the timeline cannot draw them), which rows of
    the manifest stay, and a note naming how many were left out."""
    again = np.array([isinstance(s, Mapping) and decided_again(s.get("loop")) is not None for s in res.signatures],
                     bool)
    if not again.any():
        return res, manifest, np.ones(len(manifest), bool), []
    keys = output_keys(manifest)
    gone = set(res.summary.loc[again, keys].astype(str).itertuples(index=False, name=None))

    def keep(df: pd.DataFrame) -> np.ndarray:
        return np.array([k not in gone for k in df[keys].astype(str).itertuples(index=False, name=None)], bool)

    rows, parts = keep(manifest), keep(res.parts)
    sigs = [s for s, a in zip(res.signatures, again) if not a]
    drawn = ReplayResult(res.summary[~again].reset_index(drop=True), res.parts[parts].reset_index(drop=True), sigs,
                         res.excluded)
    note = (f"Variant {label}: {int(again.sum())} closed-loop output(s) decided again under this clock are not drawn "
            "(their requests are not the recorded ones); their η and L are in the tables.")
    return drawn, manifest[rows].reset_index(drop=True), rows, [note]


def _check_saved(run: RunData, label: str, replayed: pd.DataFrame) -> None:
    """A run folder's ``summary.<label>.parquet`` must be what the replay gives."""
    if run.stepwise:
        return
    saved = run_file(run.folder, "playback-summary", label)
    if not saved.is_file():
        return
    frame, _ = run.read_table(saved)
    miss = summary_mismatch(replayed, keys_as_text(frame), ("offset_s", "audio_s", "idle_s"))
    if miss:
        raise InputError.at(saved, f"replaying the manifest does not reproduce it for {miss}",
                            accepted=f"the playback summary of the {label} replay of this manifest")


def manifest_signature(run: RunData) -> dict[str, Any] | None:
    """The signature a Parquet manifest records for all its rows (its metadata's
    ``signature``), the upstream of every replay; ``None`` for a CSV or none."""
    sig = run.manifest.meta.get("signature")
    return sig if isinstance(sig, dict) else None


def shown(sig: Any) -> str:
    """A signature as the page shows it (a display string kept as it is)."""
    return sig if isinstance(sig, str) else format_signature(sig)


def shown_all(sigs: Sequence[Any]) -> list[str]:
    """:func:`shown` of each, formatting each distinct object once (tables repeat one
    signature object over many rows)."""
    done: dict[int, str] = {}
    out = []
    for sig in sigs:
        key = id(sig)
        if key not in done:
            done[key] = shown(sig)
        out.append(done[key])
    return out
