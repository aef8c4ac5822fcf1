"""Synthesize traces under grouping rules, or a requests file, into a store and write the manifest.

Plan (:mod:`.plan`), synthesize what the store lacks on the chosen executor
(:mod:`.executors`), read the records back (:mod:`.manifest`) and write the manifest and
its chunk table with their signatures. Both are first checked with the reader's rules
(:func:`simulplay.manifest.check_written`): a table that replay would refuse is a bug,
raised as :class:`simulplay.manifest.WrittenTableError` (an internal error, not an
InputError) before anything is written. Resumable: a killed run, run again, synthesizes
only the requests without a record.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simulplay.backends.base import Backend, BackendConfig
from simulplay.core.errors import FileFault
from simulplay.core.plugins import with_plugins
from simulplay.core.progress import NO_PROGRESS, Progress, tracking
from simulplay.core.provenance import machine
from simulplay.core.tables import write_table
from simulplay.grouping import Rule, Splitter, revising_allowed
from simulplay.grouping.policy import closed_loop_condition
from simulplay.grouping.requests_file import RequestsFile, read_requests
from simulplay.manifest.columns import chunk_path
from simulplay.manifest.traces import trace_records
from simulplay.manifest.written import check_written
from simulplay.store.store import AudioStore
from simulplay.synthesis.clock_check import check_clock
from simulplay.synthesis.collect import build_manifest, manifest_signature
from simulplay.synthesis.executors import ExecutorSpec, execute
from simulplay.synthesis.loop import LOOP_COLUMNS, expand_plan, has_loops, plan_with_loops
from simulplay.synthesis.plan import Plan, plan_from_requests, plan_requests
from simulplay.synthesis.space import warn_if_short
from simulplay.synthesis.stats import SynthStats
from simulplay.traces import read_traces, streams_from_frame
from simulplay.traces.model import Stream


def run_synthesis(plan: pd.DataFrame, config: BackendConfig, store: AudioStore, *,
                  executor: ExecutorSpec | None = None, progress: Progress = NO_PROGRESS,
                  contention_sample: int = 8, loops: dict | None = None) -> SynthStats:
    """Synthesize every planned key that has no record yet (resumable, shareable store);
    ``loops``: closed-loop outputs' loop units (:mod:`.loop`)."""
    return execute(plan, config, store, executor or ExecutorSpec(), progress=progress,
                   contention_sample=contention_sample, loops=loops)


@dataclass
class SynthResult:
    """The manifest and chunk table written to ``path``, the run's counts and its signature."""

    manifest: pd.DataFrame
    chunks: pd.DataFrame
    stats: SynthStats
    signature: dict
    path: Path
    language: dict = field(default_factory=dict)  # the text's language against the voice's (synthesis.language)


def synthesize_to_manifest(streams: list[Stream], rules: list[Rule], config: BackendConfig, store: AudioStore,
                           out: Path, *, realizations: int = 1, max_chars: int | None = None,
                           reuse: str | None = None, order: str = "counterbalanced", progress: Progress = NO_PROGRESS,
                           executor: ExecutorSpec | None = None, contention_sample: int = 8,
                           traces: Sequence[Path] = (), recorded: dict[str, Any] | None = None,
                           speed: float | None = None) -> SynthResult:
    """Plan, synthesize what the store lacks, and write ``out`` plus its chunk table.

    The manifest is written even when requests failed (their ``error`` is filled);
    comparisons then refuse the incomplete outputs. ``traces``, the files ``streams``
    came from, are recorded in the manifest's metadata (absolute path and SHA-256 each),
    so that ``simulplay report`` finds them for its trace statistics. ``recorded`` adds
    fields to the signature (how the streams were prepared: ``events``). The text's language
    is compared with the voice's first (:mod:`simulplay.synthesis.language`): a mismatch warns
    and is in the signature, the check in ``SynthResult.language``. ``speed`` puts the
    manifest on a time base ``speed`` times faster (a live run's): open-loop rules group the
    streams as they are and their dispatch and source times are divided after; closed-loop
    policies run on the divided times (the clock a live run's policies decided on).
    """
    from simulplay.synthesis.language import signature_fields, voice_check

    language = voice_check(streams, config, store)
    recorded = {**(recorded or {}), **signature_fields(language)}
    backend = config.create()
    splitter = Splitter(max_chars) if max_chars else None
    loops = None
    if has_loops(rules):  # closed-loop outputs: their requests are made as synthesis goes
        plan, loops = plan_with_loops(streams, rules, backend, store, realizations=realizations, splitter=splitter,
                                      reuse=reuse, order=order, speed=speed)
    else:
        plan = plan_requests(streams, rules, backend, realizations=realizations, splitter=splitter, reuse=reuse,
                             order=order)
    res = _synthesize(plan, backend, config, store, out, progress=progress, executor=executor,
                      contention_sample=contention_sample, traces=traces, loops=loops, provenance=recorded,
                      speed=speed)
    res.language = language
    return res


def synthesize_requests(requests: RequestsFile, config: BackendConfig, store: AudioStore, out: Path, *,
                        realizations: int = 1, max_chars: int | None = None, reuse: str | None = None,
                        order: str = "counterbalanced", progress: Progress = NO_PROGRESS,
                        executor: ExecutorSpec | None = None,
                        contention_sample: int = 8) -> SynthResult:
    """Synthesize exactly the requests of a validated requests file (a ``group`` output,
    possibly edited); requests beyond the input limit are split as for traces.

    The signatures name the file and its SHA-256 (``requests``, ``requests_sha256``), and
    each row carries the fields of its request's own signature in the file (when the file
    is a Parquet table written by simulplay) prefixed ``requests_``: e.g. ``requests_rule``.
    """
    backend = config.create()
    splitter = Splitter(max_chars) if max_chars else None
    plan = plan_from_requests(requests.frame, backend, realizations=realizations, splitter=splitter, reuse=reuse,
                              order=order)
    sigs = requests.signatures
    origin = None if sigs is None else [_prefixed(sigs[row - 1]) for row in plan.frame["_row"]]
    return _synthesize(plan, backend, config, store, out, progress=progress, executor=executor,
                       contention_sample=contention_sample, provenance=requests.provenance(), row_extra=origin,
                       meta={"requests": {"file": str(requests.path), "sha256": requests.sha256}})


def synthesize_files(config: BackendConfig, store: str | Path, out: Path, *, traces: Sequence[Path] = (),
                     rules: Sequence[Rule] = (), requests: Path | None = None, talks: Sequence[str] = (),
                     events: str = "keep", **options: Any) -> SynthResult:
    """Synthesize the requests of a requests file, or of the trace files under ``rules``,
    into the store folder ``store`` (opened, and created, only once the inputs have been
    read and validated in full); ``talks`` picks talks (all when empty), ``events`` says what
    non-speech event tags in the traces do (:mod:`simulplay.traces.events`); ``options`` go to
    :func:`synthesize_requests` or :func:`synthesize_to_manifest` (realizations, order,
    max_chars, progress, executor, …)."""
    from simulplay.traces.select import pick_rows, prepare_streams

    commit = options.pop("commit", None)  # commit policies chosen: revising traces may be grouped
    if requests is not None:
        plan = read_requests(requests)
        plan = dataclasses.replace(plan, frame=pick_rows(plan.frame, talks))
        return synthesize_requests(plan, config, AudioStore.open(store), out, **options)
    streams = streams_from_frame(read_traces(traces), revising=revising_allowed(commit, rules))
    streams, recorded = prepare_streams(streams, talks=talks, events=events)
    return synthesize_to_manifest(streams, list(rules), config, AudioStore.open(store), out, traces=traces,
                                  recorded=recorded, **options)


RUN_ID = re.compile(r"\d+-\d+")  # Driver.run_id: microseconds-pid


def measuring_probes(runs: set[Any], store: AudioStore) -> list[dict[str, Any]]:
    """The clock probes of the runs (``clock_run`` of the stored records, from
    :func:`build_manifest`) that synthesized a manifest's requests (each run kept its probes
    in the store): a rerun that synthesizes nothing, or part, judges every stored service
    time by the probes of the run that measured it, not by its own."""
    named = sorted(r for r in runs if isinstance(r, str) and RUN_ID.fullmatch(r))
    return [p for run in named for p in store.get_probes(run)]


def _prefixed(sig: dict[str, Any]) -> dict[str, Any]:
    return {f"requests_{k}": v for k, v in sig.items() if k not in ("table", "version")}


def _synthesize(plan: Plan, backend: Backend, config: BackendConfig, store: AudioStore, out: Path, *,
                progress: Progress, executor: ExecutorSpec | None, contention_sample: int,
                provenance: dict[str, Any] | None = None, row_extra: list[dict[str, Any]] | None = None,
                meta: dict[str, Any] | None = None, traces: Sequence[Path] = (),
                loops: dict | None = None, speed: float | None = None) -> SynthResult:
    todo = plan.frame["key"].nunique() - len(set(plan.frame["key"]) & store.completed_keys())
    warn_if_short(plan.frame, config, store)
    recorded = trace_records(traces)  # as read now
    at_start = machine()
    with tracking(progress, todo, backend.label()) as bar:
        stats = run_synthesis(plan.frame, config, store, executor=executor, progress=bar,
                              contention_sample=contention_sample, loops=loops)
    if loops is not None:
        plan = expand_plan(plan, loops)
    manifest, chunks, runs, seeds = build_manifest(plan.frame, store)
    if loops is not None:
        manifest = manifest.assign(**{c: plan.frame[c].to_numpy() for c in LOOP_COLUMNS})
    stats.clock = check_clock(manifest, plan.frame["key"], measuring_probes(runs, store))
    stats.machine = {**at_start, "load_at_end": machine()["load"]}
    common = {**manifest_signature(backend, plan), **(provenance or {}), "clock": stats.clock.label}
    extra = row_extra or [{}] * len(manifest)
    if speed is not None:  # closed-loop outputs ran on the divided times already (plan_with_loops)
        div = np.where(manifest["condition"].map(closed_loop_condition).to_numpy(bool), 1.0, speed)
        manifest = manifest.assign(dispatch_s=manifest["dispatch_s"] / div, source_s=manifest["source_s"] / div)
        extra = [{**x, "speed": speed} for x in extra]
    sigs = [with_plugins({**common, "rule": c, **x}) for c, x in zip(manifest["condition"], extra)]
    check_written(manifest, chunks, out)  # a table the reader refuses is a bug, caught before it is written
    try:
        write_table(manifest, out, sigs, kind="manifest",
                    extra_meta={"signature": common, "identity": backend.identity(), "traces": recorded,
                                "backend_spec": config.spec(), "clock": stats.clock.to_dict(),
                                "machine": stats.machine, **(meta or {}),
                                # where each request's noise came from: the file's record, not the signature
                                # (numbers made from these durations, e.g. zero-service η, stay byte-identical)
                                **({"noise_seeds": seeds} if seeds else {})})
        write_table(chunks, chunk_path(out), common, kind="chunks")
    except FileFault as e:  # a full disk at the end: the audio is safe in the store
        raise e.keeping("every finished request is kept in the store; the same command run again writes the "
                        "manifest without synthesizing them again") from e.__cause__
    return SynthResult(manifest, chunks, stats, common, Path(out))
