"""``simulplay run``: synthesis → replay → η (and the sensitivity replays, the edge-silence
sweep and the content diagnostics an experiment lists) into one folder, with its report.

An experiment of several engines ([[backend]] tables) synthesizes the whole design once per
backend (``manifest.backend1.parquet``, ``manifest.backend2.parquet``, … each with its own
identity and clock check), stacks them into ``manifest.parquet`` (:mod:`simulplay.synthesis.combine`)
and replays that: every η table then has a panel per backend, and ``eta.interaction.csv``
(with ``eta_per_talk.interaction.csv``, and the same for each sensitivity replay) holds
η(B1) − η(B2) for every pair of backends in listed order."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from simulplay.analysis import EtaResult, compute_eta
from simulplay.analysis.latency_table import latency_table
from simulplay.analysis.noise import NoiseCheck, noise_check
from simulplay.core.atomic import atomic_path
from simulplay.core.paths import check_out_folder
from simulplay.core.progress import NO_PROGRESS, Progress
from simulplay.core.tables import Written, keep_written, write_table
from simulplay.core.version import __version__
from simulplay.formats.kinds import run_file
from simulplay.formats.summary import variant_label
from simulplay.grouping import revising_allowed
from simulplay.manifest import validate_manifest
from simulplay.manifest.chunks import chunk_path, validate_chunks
from simulplay.manifest.traces import trace_records
from simulplay.sim.replay import ReplayResult
from simulplay.sim.variants import Measured, RequestRelease
from simulplay.store.store import AudioStore
from simulplay.synthesis.clock_check import load_at_measurement
from simulplay.synthesis.combine import combine_syntheses
from simulplay.synthesis.run import SynthResult, synthesize_to_manifest
from simulplay.traces import read_traces, streams_from_frame
from simulplay.traces.select import prepare_streams
from simulplay.vad import SileroVad
from simulplay.workflows.diagnostics import DiagnosticsResult, check_recognizer, run_diagnostics
from simulplay.workflows.edges import EdgesRun, run_edges, write_edges
from simulplay.workflows.eta_tables import write_eta_tables, write_noise_check
from simulplay.workflows.experiment import Experiment, written
from simulplay.workflows.quality import (
    QUALITY_RECORD,
    QualityResult,
    joins_path,
    quality_paths,
    require_quality_extras,
    reusable_quality,
    score_quality,
    write_quality,
)
from simulplay.workflows.reuse import digest, make_or_reuse, remember
from simulplay.workflows.steps import ReplaySettings, replay_deciding

if TYPE_CHECKING:
    from simulplay.report.record import RunRecord
    from simulplay.workflows.sweep import SweepRun


@dataclass
class RunResult:
    """Everything a run wrote: synthesis, the primary replay and η, each sensitivity replay
    with its η, timings (seconds), and the edge sweep and diagnostics when listed."""

    synth: SynthResult
    replay: ReplayResult
    eta: EtaResult
    variants: dict[str, tuple[ReplayResult, EtaResult]] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    out: Path = Path(".")
    edges: EdgesRun | None = None  # the edge-silence replay, when the experiment lists thresholds
    content: DiagnosticsResult | None = None  # the [content] table (transcripts, content, word timing)
    quality: QualityResult | None = None  # how the outputs sound (exp.quality; the demo's DEMO_QUALITY)
    noise: NoiseCheck | None = None  # η spread across realizations and their duration differences
    sweep: SweepRun | None = None  # the modelled sweep, when the experiment lists one
    spoken: pd.DataFrame | None = None  # what the listener got under each commit policy, with commit policies
    syntheses: list[SynthResult] = field(default_factory=list)  # one per backend when the run has several
    reused: list[str] = field(default_factory=list)  # derived folders kept as they were (inputs unchanged)
    tables: dict[Path, Written] = field(default_factory=dict)  # every table the run wrote, as written, by path


def run_experiment(exp: Experiment, *, allow_incomplete: bool = False, progress: Progress = NO_PROGRESS) -> RunResult:
    """Run an experiment; every table is written into ``exp.out`` with its signature and kept
    as written in :attr:`RunResult.tables`, from which the explorer and the report read it
    (the experiment's configs are used as they are: nothing is parsed again)."""
    with keep_written() as kept:
        return _run(exp, allow_incomplete, progress, kept)


def _run(exp: Experiment, allow_incomplete: bool, progress: Progress, kept: dict[Path, Written]) -> RunResult:
    t0 = time.perf_counter()
    rules = list(exp.rules)
    streams, recorded = prepare_streams(
        streams_from_frame(read_traces(exp.traces), revising=revising_allowed(exp.commit, rules)), talks=exp.talks,
        events=exp.events, events_flag="the experiment key events")
    check_out_folder(exp.out, "out")  # before any work: the outputs and the store can be written
    check_out_folder(exp.store, "store")
    if exp.quality is not None:  # the extras the quality step needs, before synthesis starts
        require_quality_extras(exp.quality.metrics)
    if exp.edges:  # the vad extra must be installed before synthesis starts
        SileroVad(source=f"{exp.source}: key 'analysis.edges'").path  # noqa: B018 - finds the model file
    if exp.content is not None:
        check_recognizer(exp.content, exp.source)  # the recognizer loads and knows the language
    exp.out.mkdir(parents=True, exist_ok=True)
    store = AudioStore.open(exp.store, field="store")
    syntheses = [synthesize_to_manifest(streams, rules, config, store, _manifest_path(exp, i),
                                        realizations=exp.realizations, order=exp.order, max_chars=exp.max_chars,
                                        progress=progress, executor=exp.executor, traces=exp.traces,
                                        recorded=recorded)
                 for i, config in enumerate(exp.backends)]
    synth = syntheses[0] if len(syntheses) == 1 else combine_syntheses(
        syntheses, exp.out / "manifest.parquet",
        traces=trace_records(exp.traces))
    t1 = time.perf_counter()
    boot = exp.bootstrap
    manifest = validate_manifest(synth.manifest, str(synth.path))  # once, for every replay below
    base, base_eta = _replay_and_eta(exp, synth, manifest, boot, "", allow_incomplete, release=RequestRelease(),
                                     service=Measured(), silent=exp.silent_parts)
    _latency(exp, synth, manifest, allow_incomplete)
    spoken = _spoken(exp, streams, rules)
    variants = {}
    for variant in exp.variants:
        v = written(exp, variant)
        variants[v] = _replay_and_eta(exp, synth, manifest, boot, variant_label(v), allow_incomplete,
                                      release=variant.release, service=variant.service,
                                      silent=variant.silent or exp.silent_parts, streams=streams)
    edges = _edges(exp, synth, manifest, store, boot, allow_incomplete, progress, streams) if exp.edges else None
    content = _content(exp, synth, manifest, store, base, streams, boot, allow_incomplete, progress) \
        if exp.content is not None else None
    t2 = time.perf_counter()
    res = RunResult(synth, base, base_eta, variants, {"synthesis_s": t1 - t0, "analysis_s": t2 - t1}, exp.out,
                    tables=kept)  # filled on as the run writes
    if exp.quality is not None:
        res.quality = _quality(exp, synth, manifest, store, boot, allow_incomplete, progress, res.reused)
        res.timings["quality_s"] = time.perf_counter() - t2
    res.syntheses = syntheses if len(syntheses) > 1 else []
    res.edges = edges
    res.content = content
    res.noise = _noise(exp, synth, base_eta, variants)
    res.spoken = spoken
    record = _write_run_record(exp, res)
    if exp.sweep:  # from the run's objects in memory; the report below shows its figures
        from simulplay.workflows.sweep import RunInputs, sweep_run

        def make_sweep():
            inputs = RunInputs(exp.out, record.settings, manifest, synth.signature, streams, record.settings.backend,
                               exp.store, boot, exp.silent_parts)
            res.sweep = sweep_run(inputs, list(exp.sweep), confirm=exp.sweep_confirm, progress=progress,
                                  commits=list(exp.sweep_commit))

        t3 = time.perf_counter()
        commit = {"commit": [g.text for g in exp.sweep_commit]} if exp.sweep_commit else {}
        make_or_reuse(exp.out, "sweep", {"rules": [g.text for g in exp.sweep], "confirm": exp.sweep_confirm, **commit},
                      make_sweep, res.reused)
        res.timings["sweep_s"] = time.perf_counter() - t3
    _explorer_and_report(exp, res, record)
    return res


def _manifest_path(exp: Experiment, i: int) -> Path:
    """``manifest.parquet``, or with several backends ``manifest.backend<i+1>.parquet``."""
    return exp.out / ("manifest.parquet" if len(exp.backends) == 1 else f"manifest.backend{i + 1}.parquet")


def backend_pairs(manifest) -> list[tuple[str, str]]:
    """Every pair of the manifest's backends in order of appearance (none with one backend)."""
    labels = list(dict.fromkeys(manifest["backend"]))
    return [(b1, b2) for i, b1 in enumerate(labels) for b2 in labels[i + 1:]]


def _explorer_and_report(exp: Experiment, res: RunResult, record: RunRecord) -> None:
    """The explorer (``explore/``, from the replays just made: nothing is replayed again) and
    the report that links to it (``report/``), each unless reused (:mod:`.reuse`; the report's
    modules and matplotlib are then not even imported). Both take the run's record and its
    primary replay's parts and the tables the run wrote (:attr:`RunResult.tables`: rows,
    signatures, metadata and file hashes as written) as they are in memory: no table the run
    wrote is read back (a table kept from an earlier run, such as a reused sweep's, is read
    from its file)."""
    loaded: list[Any] = []

    def run() -> Any:  # the run's tables, read once, when the first of the two is made
        from simulplay.report.read_run import load_run

        if not loaded:
            loaded.append(load_run(exp.out, record=record, kept=res.tables))
            loaded[0].parts = res.replay.parts
        return loaded[0]

    def make_explorer() -> None:
        from simulplay.report.explore import Computed, explore_run, write_explorer

        synth = res.synth
        chunks = validate_chunks(synth.chunks, str(chunk_path(synth.path))) \
            if any(v.release.needs_chunks for v in exp.variants) else None
        computed = Computed({variant_label(v): rep for v, (rep, _) in res.variants.items()}, chunks,
                            res.edges.result if res.edges is not None else None)
        write_explorer(explore_run(run(), computed=computed), exp.out / "explore")

    settings = {"store": str(exp.store.resolve())}  # the Listen clips and the explorer's audio come from it
    make_or_reuse(exp.out, "explore", settings, make_explorer, res.reused)
    def make_report() -> None:
        from simulplay.report import build_report, write_report

        write_report(build_report(exp.out, run=run()), exp.out / "report")

    make_or_reuse(exp.out, "report", settings, make_report, res.reused)


def _replay_and_eta(exp, synth, manifest, boot, label, allow_incomplete, *, release, service, silent, streams=None):
    """One replay and its η tables (``label``: a sensitivity replay's, in its files' names); a
    variant's closed-loop outputs decided again on ``streams``
    (:func:`~simulplay.workflows.steps.replay_deciding`)."""
    chunks = validate_chunks(synth.chunks, str(chunk_path(synth.path))) if release.needs_chunks else None
    rep = replay_deciding(manifest, ReplaySettings(release, service, silent), streams, chunks=chunks,
                          allow_incomplete=allow_incomplete, upstream=synth.signature, source=str(synth.path))
    summary = run_file(exp.out, "playback-summary", label)
    for path in (summary, summary.with_suffix(".csv")):
        write_table(rep.summary, path, rep.signatures, kind="playback-summary")
    pairs, suffix = backend_pairs(manifest), f".{label}" if label else ""
    eta = compute_eta(rep.summary, a=exp.a, f=exp.f, reference=exp.reference, boot=boot,
                      contrasts=exp.contrasts, interactions=pairs, allow_incomplete=allow_incomplete,
                      upstream=rep.signatures, source=str(summary))
    write_eta_tables(eta, [run_file(exp.out, "eta", label, ext) for ext in (".parquet", ".csv", ".md")],
                     per_talk=run_file(exp.out, "eta-per-talk", label),
                     contrasts=run_file(exp.out, "contrast", label) if exp.contrasts else None,
                     interaction=exp.out / f"eta{suffix}.interaction.csv" if pairs else None,
                     interaction_per_talk=exp.out / f"eta_per_talk{suffix}.interaction.csv" if pairs else None)
    return rep, eta


def _latency(exp, synth, manifest, allow_incomplete):
    """SimulEval's speech-output metrics of the primary replay: latency.parquet/.csv."""
    lat = latency_table(manifest, allow_incomplete=allow_incomplete, upstream=synth.signature, source=str(synth.path))
    for ext in (".parquet", ".csv"):
        write_table(lat.table, exp.out / f"latency{ext}", lat.signatures, kind="latency")


def _spoken(exp, streams, rules) -> pd.DataFrame | None:
    """With commit policies (the key ``commit``, or a rule written ``POLICY+RULE``), what the
    listener got of each stream under each: spoken.parquet/.csv (docs/retranslation.md), the
    table returned; None without commit policies."""
    from simulplay.analysis.spoken import spoken_table
    from simulplay.grouping import Committing, parse_commit

    if not revising_allowed(exp.commit, rules):
        return None
    policies = {r.policy.canonical() if isinstance(r, Committing) else "eager": r for r in rules}
    table, sig = spoken_table(streams, [parse_commit(p) for p in policies])
    for ext in (".parquet", ".csv"):
        write_table(table, exp.out / f"spoken{ext}", sig, kind="spoken")
    return table


def _edges(exp, synth, manifest, store, boot, allow_incomplete, progress, streams=None):
    """Edge-silence replay at the experiment's thresholds: edges_summary.parquet/.csv,
    eta_edges.csv (η per threshold) and edges_nonspeech.csv (reference vs each condition)."""
    run = run_edges(manifest, store, exp.edges, a=exp.a, f=exp.f, reference=exp.reference, boot=boot, pairs=[],
                    allow_incomplete=allow_incomplete, upstream=synth.signature, source=str(synth.path),
                    progress=progress, silent_parts=exp.silent_parts, streams=streams)
    write_edges(run, exp.out / "edges_summary.parquet")
    write_edges(run, exp.out / "edges_summary.csv", eta=exp.out / "eta_edges.csv",
                share=exp.out / "edges_nonspeech.csv")
    return run


def _content(exp, synth, manifest, store, base, streams, boot, allow_incomplete, progress):
    """Content diagnostics: transcripts.parquet, content.csv (+ .pairs, .per_output) and,
    with ``timing``, word_timing.csv (+ .per_talk.csv, .words.parquet)."""
    return run_diagnostics(exp.content, manifest, synth.signature, store, base.parts, streams, exp.out,
                           reference=exp.reference, boot=boot, allow_incomplete=allow_incomplete,
                           source=exp.source, progress=progress)


def _quality(exp, synth, manifest, store, boot, allow_incomplete, progress, reused) -> QualityResult:
    """How the outputs sound (:class:`~simulplay.workflows.quality.QualitySettings`): quality.parquet
    (per output), quality.requests.parquet and quality.intervals.parquet/.csv (per condition
    and Δ against the reference, paired talk bootstrap). Reused as they are (read back, not
    scored again) when the manifest, the settings and the version are those they were made
    from and the files are unchanged (:func:`~simulplay.workflows.quality.reusable_quality`)."""
    q = exp.quality
    key = {"version": __version__, "manifest": digest(synth.path), "quality": q.to_dict(), "reference": exp.reference,
           "bootstrap": boot.signature(), "allow_incomplete": allow_incomplete}
    out = exp.out / "quality.parquet"
    joined = [joins_path(out)] if "joins" in q.metrics else []
    paths = [*quality_paths(out), *joined, exp.out / "quality.intervals.csv"]
    old = reusable_quality(exp.out / QUALITY_RECORD, key, paths, exp.reference)
    if old is not None:
        reused.append("the quality tables")
        return old
    res = score_quality(manifest, store.load_audio, metrics=q.metrics, reference=exp.reference, boot=boot,
                        allow_incomplete=allow_incomplete, upstream=synth.signature, source=str(synth.path),
                        progress=progress, dnsmos_windows=q.dnsmos_windows, conditions=q.conditions)
    write_quality(res, out)
    write_table(res.deltas, paths[-1], res.delta_signatures or {"table": "quality-intervals"},
                kind="quality-intervals", signature_column=True)
    remember(exp.out / QUALITY_RECORD, key, exp.out, [p.name for p in paths])
    return res


def _noise(exp, synth, base_eta, variants) -> NoiseCheck:
    """η spread across realizations per replay and the duration noise (eta_spread.csv/.md,
    duration_noise.csv; written when the experiment has two realizations or more)."""
    check = noise_check(synth.manifest, synth.signature, {"": base_eta, **{v: e for v, (_, e) in variants.items()}})
    write_noise_check(check, exp.out)
    return check


def clock_record(st) -> dict[str, Any]:
    """Where the service times were measured: ``machine`` (CPU, cores, load at the start
    and end of synthesis) and ``clock`` (the clock check's verdict, counts and probes)."""
    return {"machine": st.machine, "clock": None if st.clock is None else st.clock.to_dict()}


def _write_run_record(exp: Experiment, res: RunResult) -> RunRecord:
    """``run.json``; the record as written (its settings as objects, its data as the file holds it)."""
    st = res.synth.stats
    man = res.synth.manifest
    record: dict[str, Any] = {
        "requests": int(len(man)),
        "synthesized": st.synthesized, "already_in_store": st.skipped, "failed": st.failed,
        "reused_rows": int(man["reused"].sum()),
        "executor": exp.executor.label(), "retries": st.retries, "worker_deaths": st.worker_deaths,
        "service_time_parallel_over_serial": st.contention_ratio,
        "per_worker": {w: vars(v) for w, v in st.per_worker.items()},
        "audio_s": float(man["audio_s"].sum()),
        "excluded_outputs": res.replay.excluded,
        "timings_s": res.timings,
        "edges_vad": None if res.edges is None else {
            **res.edges.result.vad, "inferred": res.edges.result.stats.inferred,
            "cached": res.edges.result.stats.cached, "inference_s": res.edges.result.stats.inference_s},
        "signature": res.synth.signature,
        "language": res.synth.language or (res.syntheses[0].language if res.syntheses else {}),
        **clock_record(st),
        "load_at_measurement": load_at_measurement(man),  # the machine when the audio was timed
    }
    if res.syntheses:  # a run of several engines: each backend's own synthesis
        record["backends"] = [{"spec": written(exp, config), "backend": str(r.manifest["backend"].iloc[0]),
                               "manifest": str(r.path),
                               "synthesized": r.stats.synthesized, "already_in_store": r.stats.skipped,
                               "failed": r.stats.failed, "language": r.language, **clock_record(r.stats)}
                              for config, r in zip(exp.backends, res.syntheses)]
    from simulplay.report.record import RunRecord
    from simulplay.workflows.experiment_record import experiment_settings

    written_record = RunRecord(experiment_settings(exp), record)
    text = written_record.to_json()
    with atomic_path(exp.out / "run.json") as tmp:
        tmp.write_text(text, encoding="utf-8")
    return RunRecord(written_record.settings, json.loads(text))  # the data as written, not later changes
