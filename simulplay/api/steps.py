"""The pipeline's steps for notebooks: a trace read, grouped, synthesized and replayed
(the functions behind ``simulplay.read_trace``, ``group``, ``synthesize``, ``replay``)."""

from __future__ import annotations

import dataclasses
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from simulplay.api.checks import (
    TRACE_INPUT,
    PathLike,
    as_commits,
    as_count,
    as_events,
    as_flag,
    as_path,
    as_paths,
    as_requests_file,
    as_rules,
    as_streams,
    as_talks,
    as_text,
    as_whole,
    frame_of,
    read_signed,
    renamed,
    slowdown_text,
)
from simulplay.api.results import (
    ManifestOutput,
    ReplayOutput,
    SignedTable,
    fresh,
    shared_signature,
    signatures_of,
)
from simulplay.core.errors import InputError
from simulplay.core.signature import base_signature
from simulplay.core.tables import check_distinct, check_writable


@renamed(path="trace")
def read_trace(trace: PathLike | Sequence[PathLike]) -> SignedTable:
    """Read and validate one trace file or several (``simulplay validate``'s reader).

    Args:
        trace: A trace file (``.parquet``, ``.csv`` or ``.jsonl``) or a list of them; a
            ``(talk_id, system)`` stream may appear in only one file. ``path=`` is its old name
            (deprecated).

    Returns:
        A [`SignedTable`][simulplay.api.SignedTable] whose ``table`` is the canonical trace, one row per update:
        ``talk_id, system, seq, time_s, text, source_s, glue`` (``time_s``: when the text
        became available, seconds from source start; ``source_s``: the talk's source
        duration in seconds). Its ``signature`` names each file with the first 12 hex
        digits of its SHA-256; ``paths`` lists them.

    Raises:
        InputError: a file that is missing or not a valid trace (one line naming the file,
            row and field), or a stream in two files.
    """
    from simulplay.core.provenance import sha256_of_file
    from simulplay.traces import read_traces

    paths = as_paths(trace, "trace", TRACE_INPUT.split(", ", 1)[1])
    df = read_traces(paths)
    sig = base_signature(table="trace", trace=[f"{p.name}@{sha256_of_file(p)[:12]}" for p in paths])
    return SignedTable(fresh(df), signature=sig, paths=tuple(str(p) for p in paths))


def group(trace: SignedTable | pd.DataFrame | PathLike | Sequence[PathLike], rule: str | Sequence[str], *,
          max_chars: int | None = None, commit: str | Sequence[str] | None = None,
          talks: str | Sequence[str] | None = None, talks_from: PathLike | None = None,
          events: str = "keep") -> SignedTable:
    """The synthesis requests of a trace under one grouping rule or several (``simulplay
    group``), to inspect or edit before [`synthesize`][simulplay.api.synthesize].

    Args:
        trace: A [`read_trace`][simulplay.api.read_trace] result, a trace DataFrame, a trace file (``.parquet``,
            ``.csv``, ``.jsonl``) or a list of files.
        rule: A grouping rule or a list of them (``--rule``, repeatable): ``immediate``,
            ``timer:w=4`` (w in seconds; default 4), ``punct:cap=2,min_words=3`` (cap in
            seconds), ``words:n=8,cap=2`` (n words, cap in seconds); ``unit=char`` on
            ``punct``/``words`` counts letters and digits instead of whitespace words.
        max_chars: The input-limit splitter: at most this many characters per request (a
            whole number ≥ 1); a longer group is cut at spaces into several requests, its
            joined text kept exactly. None (default): groups are not split (``synthesize``
            then splits at the backend's own limit, giving the same requests).
        commit: A commit policy or a list of them (``--commit``): what of a revising trace is
            spoken before grouping (``eager``, ``stable:k=2``, ``hold:t=1``, ``mask:k=3``,
            ``final``, an oracle); each output's condition is then ``POLICY+RULE`` (``eager``
            left out). None (default): a revising trace is refused.
        talks: Only these talk ids (``--talks``): an id, ids separated by commas, or a
            list of them. None (default): every talk (or those of ``talks_from``).
        talks_from: Only the talk ids listed in this file (``--talks-from``: one per line,
            ``#`` starts a comment); with ``talks``, both. None (default): no file.
        events: Non-speech event tags in the text (``(Applaus)``, ``[Music]``, …):
            ``"keep"`` (default: spoken as text, with a warning naming their counts) or
            ``"drop"`` (removed before grouping; an update left empty is skipped).
            Recorded in the signatures (``events``) when the trace holds any.

    Returns:
        A [`SignedTable`][simulplay.api.SignedTable], one row per request: ``talk_id, system, condition`` (the
        canonical rule, after its commit policy if any), ``seq`` (from 0 per output), ``dispatch_s``
        (seconds from source start), ``trigger`` (immediate/timer/punct/words/eos), ``n_updates``, ``text``,
        ``glue``, ``group``, ``source_s`` (seconds); ``signatures``: one per request (its
        rule and the splitter).

    Raises:
        InputError: an unknown or malformed rule, a bad trace, ``max_chars`` < 1, a talk id
            not in the trace, an ``events`` other than keep or drop.
    """
    from simulplay.grouping import Splitter, commit_rules, request_signatures, requests_frame, revising_allowed
    from simulplay.traces.select import prepare_streams

    commits = as_commits(commit)
    rules = commit_rules(as_rules(rule), commits, source="commit")
    splitter = Splitter(as_count(max_chars, "max_chars"))
    picked, mode = as_talks(talks, talks_from), as_events(events)
    streams, _ = as_streams(trace, revising=revising_allowed(commits, rules))
    streams, recorded = prepare_streams(streams, talks=picked, events=mode, talks_flag="talks", events_flag="events")
    df = requests_frame(streams, rules, splitter)
    sig = base_signature(table="requests", rule=[r.canonical() for r in rules], splitter=splitter.describe())
    sigs = [{**s, **recorded} for s in request_signatures(df, splitter)]
    return SignedTable(fresh(df), signatures_of(sigs), {**sig, **recorded})


def synthesize(trace: SignedTable | pd.DataFrame | PathLike | Sequence[PathLike] | None = None,
               rule: str | Sequence[str] | None = None, *, store: PathLike, backend: str = "piper",
               requests: SignedTable | pd.DataFrame | PathLike | None = None, out: PathLike | None = None,
               realizations: int = 1, order: str = "counterbalanced", max_chars: int | None = None,
               reuse: str | None = None, executor: str = "serial", workers: int | None = None,
               worker_cpus: float = 1.0, worker_gpus: float = 0.0, retries: int = 2, contention_sample: int = 8,
               progress: Any = None, commit: str | Sequence[str] | None = None,
               talks: str | Sequence[str] | None = None, talks_from: PathLike | None = None,
               events: str = "keep") -> ManifestOutput:
    """Synthesize every request with a real TTS backend into an audio store and return the
    request manifest (``simulplay synth``).

    The plan is ``trace`` grouped under ``rule`` (as [`group`][simulplay.api.group]), or the requests table
    ``requests``, never both. Requests are synthesized one at a time on a loaded, warmed-up
    backend; a request's service time (seconds) covers text preparation, inference and the
    transfer of its samples, never loading or storage. Failed requests are kept with their
    ``error`` and a warning says so ([`replay`][simulplay.api.replay] refuses their outputs); service times
    measured on a busy CPU are kept too, with a warning naming ``simulplay retime``.

    Args:
        trace: With ``rule``: a [`read_trace`][simulplay.api.read_trace] result, a trace DataFrame, a trace file
            or a list of files. Not with ``requests``.
        rule: With ``trace``: a grouping rule or a list of them (as in [`group`][simulplay.api.group]).
        store: The audio store folder (created when missing; audio already in it is not
            synthesized again, so a second call resumes or reuses). Required.
        backend: The TTS backend spec ``NAME[:KEY=VALUE,…]`` (default ``"piper"``, its
            default voice): ``piper:voice=PATH``, ``piper:durations=fixed``,
            ``piper:deterministic``, ``espeak:voice=de``, ``xtts:model_dir=DIR``,
            ``http:base_url=URL``; each backend's keys: docs/backends.md.
        requests: Instead of ``trace`` and ``rule``: exactly the requests of this table (a
            [`group`][simulplay.api.group] result, possibly edited, a requests DataFrame or its
            ``.parquet``/``.csv`` file), validated in full before any synthesis.
        out: The manifest file to write (``.parquet`` or ``.csv``), with its chunk table
            beside it as ``<stem>.chunks.parquet`` (which a chunk-release [`replay`][simulplay.api.replay]
            reads). None (default): written to a temporary folder that is removed on return.
        realizations: How many independent times the whole plan is synthesized (a whole
            number ≥ 1, default 1). Each realization draws the backend's randomness afresh
            (Piper's duration and waveform noise); its rows carry ``realization`` = 0, 1, …,
            and [`eta`][simulplay.api.eta] treats each as its own panel, so two or more show how far
            synthesis noise alone moves η.
        order: The synthesis order inside each realization, which decides which request
            follows which on the warm backend: ``"counterbalanced"`` (default: the
            condition and the system synthesized first rotate from talk to talk and
            realization to realization, so no condition is always first), ``"fixed"``
            (conditions as listed, systems in name order) or ``"paper"`` (realization 0
            fixed, later ones counterbalanced: Truong & Le (2026)'s design). Recorded per
            request: ``synth_order``, ``order_id``, ``condition_pos``, ``system_pos``.
        max_chars: The input-limit splitter: at most this many characters per request (a
            whole number ≥ 1). None (default): the backend's own limit.
        reuse: Which identical requests share audio and service time in the store:
            ``"never"`` (every request synthesized afresh), ``"same-realization"``
            (identical text within one realization) or ``"always"`` (identical text
            everywhere). None (default): ``"always"`` for seed-reproducible backends (XTTS;
            Piper under ``durations=fixed`` or ``deterministic``), else
            ``"same-realization"``. Reused rows are marked ``reused``; the policy is in the
            signature (docs/synthesis.md#reuse).
        executor: Where the requests are synthesized: ``"serial"`` (default: one at a
            time in this process, the service times a single listener's synthesizer
            gives), ``"process:N"`` (N local worker processes), ``"ray"`` (a local Ray
            instance), ``"ray:auto"`` or ``"ray:HOST:PORT"`` (join a Ray cluster). Parallel
            workers on shared cores inflate service times (``contention_sample``).
        workers: Ray: at most this many actors (default None: as many as fit).
        worker_cpus: Ray: CPUs reserved per actor (default 1.0).
        worker_gpus: Ray: GPUs per actor (default 0.0; 1 for a GPU backend).
        retries: Times a request is retried after its worker died (killed, out of memory,
            lost node); default 2.
        contention_sample: With a parallel executor: re-time this many requests serially
            afterwards; ``stats["contention_ratio"]`` is the median parallel/serial
            service-time ratio (default 8; 0: off).
        progress: A ``Progress`` (``simulplay.core.progress.Progress``) the synthesis reports to
            (default None: nothing; the command line shows a progress bar unless ``--quiet``).
        commit: With ``trace``: a commit policy or a list of them, as in [`group`][simulplay.api.group]
            (conditions ``POLICY+RULE``; None: a revising trace is refused).
        talks: Only these talk ids, as in [`group`][simulplay.api.group] (default None: every talk); with
            ``requests``, only these talks' requests.
        talks_from: Only the talk ids listed in this file, as in [`group`][simulplay.api.group] (default None).
        events: With ``trace``: ``"keep"`` (default) or ``"drop"`` non-speech event tags
            before grouping, as in [`group`][simulplay.api.group]; recorded in the signatures.

    Returns:
        A [`ManifestOutput`][simulplay.api.ManifestOutput]: the manifest, one row per request (``dispatch_s``,
        ``service_s``, ``audio_s``, ``source_s`` in seconds, ``n_samples`` at
        ``sample_rate`` Hz, ``error``), one signature per request and the run's; the counts
        (``stats``: synthesized, already in the store, failed, damaged, retries, worker
        deaths, the contention ratio), the clock check (``clock``) and the files written at
        ``out`` (``paths``, ``chunks``).

    Raises:
        InputError: no plan or two plans, a bad trace, rule, requests table or backend
            spec, an unknown order, reuse or executor, an ``out`` that cannot be written,
            a talk id not in the plan, an ``events`` other than keep or drop (or ``drop``
            with ``requests``, whose texts are synthesized as they are).
    """
    from simulplay.backends import parse_backend_with_reuse
    from simulplay.grouping import commit_rules, revising_allowed
    from simulplay.grouping.requests_file import read_requests
    from simulplay.store.store import AudioStore
    from simulplay.synthesis.executors import parse_executor
    from simulplay.synthesis.plan import check_order
    from simulplay.synthesis.run import synthesize_requests, synthesize_to_manifest
    from simulplay.traces.select import pick_rows, prepare_streams

    if (requests is None) == (trace is None) or (requests is not None and rule is not None):
        raise InputError.at("synthesize", "needs a plan: trace with rule, or requests",
                            accepted="synthesize(trace, rule, store=…) or synthesize(requests=…, store=…)")
    store_path = as_path(store, "store", "an audio store folder")
    picked, mode = as_talks(talks, talks_from), as_events(events)
    if requests is not None and mode != "keep":
        raise InputError.at(f"events '{mode}'", "is given with requests, whose texts are synthesized as they are",
                            accepted="events with trace and rule (or group(…, events='drop') before)")
    spec = parse_executor(as_text(executor, "executor"), source="executor", workers=as_count(workers, "workers"),
                          worker_cpus=as_whole(worker_cpus, "worker_cpus", 0, float),
                          worker_gpus=as_whole(worker_gpus, "worker_gpus", 0, float),
                          retries=as_whole(retries, "retries", 0))
    options = {"realizations": as_count(realizations, "realizations", optional=False),
               "max_chars": as_count(max_chars, "max_chars"),
               "order": check_order(as_text(order, "order"), source="order"), "progress": progress,
               "executor": spec, "contention_sample": as_whole(contention_sample, "contention_sample", 0)}
    config = parse_backend_with_reuse(as_text(backend, "backend"), None if reuse is None else as_text(reuse, "reuse"),
                                      source="backend", reuse_source="reuse")
    with tempfile.TemporaryDirectory(prefix="simulplay-") as tmp:
        target = Path(tmp, "manifest.parquet") if out is None else as_path(out, "out", "a .parquet or .csv path")
        check_writable(target, (".parquet", ".csv"))
        if requests is not None:
            plan = read_requests(as_requests_file(requests, Path(tmp)))
            plan = dataclasses.replace(plan, frame=pick_rows(plan.frame, picked, "talks"))
            res = synthesize_requests(plan, config, AudioStore.open(store_path, field="store"), target, **options)
        else:
            commits = as_commits(commit)
            rules = commit_rules(as_rules(rule if rule is not None else []), commits, source="commit")
            streams, paths = as_streams(trace, revising=revising_allowed(commits, rules))
            check_distinct({"out": out}, paths)
            streams, recorded = prepare_streams(streams, talks=picked, events=mode, talks_flag="talks",
                                                events_flag="events")
            res = synthesize_to_manifest(streams, rules, config, AudioStore.open(store_path, field="store"), target,
                                         traces=paths, recorded=recorded, **options)
        df, sigs = read_signed(target)
    return _manifest_output(df, sigs, res, out)


def _manifest_output(df: pd.DataFrame, sigs, res, out: PathLike | None) -> ManifestOutput:
    """The manifest read back as a [`ManifestOutput`][simulplay.api.ManifestOutput], with a warning for failed
    requests and one for service times measured on a busy CPU."""
    from simulplay.manifest import chunk_path

    st = res.stats
    failed = df["error"] != ""
    if failed.any():
        warnings.warn(f"{int(failed.sum())} request(s) failed; see the manifest's error column (first: "
                      f"{df.loc[failed, 'error'].iloc[0]})", stacklevel=3)
    if st.clock is not None and st.clock.is_contended:
        warnings.warn(f"service times were measured on a busy CPU ({st.clock.details()}); re-time them on a quiet "
                      "machine: simulplay retime MANIFEST --store DIR --all --out MANIFEST2", stacklevel=3)
    chunks = None if out is None else str(chunk_path(out))
    return ManifestOutput(fresh(df), signatures_of(sigs), dict(res.signature), () if out is None else (str(out),),
                          stats={"synthesized": st.synthesized, "already_in_store": st.skipped,
                                 "failed": st.failed, "damaged": st.damaged, "retries": st.retries,
                                 "worker_deaths": st.worker_deaths, "contention_ratio": st.contention_ratio},
                          clock=None if st.clock is None else st.clock.to_dict(), chunks=chunks)


def _chunks_arg(chunks: pd.DataFrame | PathLike | None) -> pd.DataFrame | Path | None:
    """``chunks=`` as the replay step takes it: a table, a file, or None (the file beside the manifest)."""
    return chunks if chunks is None or isinstance(chunks, pd.DataFrame) else as_path(chunks, "chunks", "a chunk table")


def replay(manifest: SignedTable | pd.DataFrame | PathLike, *, release: str = "request", service: str = "measured",
           chunks: pd.DataFrame | PathLike | None = None, silent_parts: str = "skip",
           allow_incomplete: bool = False, servers: int | None = None, share: str = "panel",
           discipline: str = "fifo", load_curve: PathLike | None = None,
           slowdown: float | PathLike | None = None, talks: str | Sequence[str] | None = None,
           talks_from: PathLike | None = None) -> ReplayOutput:
    """Replay a request manifest through a serial synthesizer and serial playback
    (``simulplay replay``): when each part is ready, when it plays, and when the
    listener hears the end.

    Args:
        manifest: A [`synthesize`][simulplay.api.synthesize] result, a manifest DataFrame, or its ``.parquet``
            or ``.csv`` file (a ``synth``, ``live`` or ``import-simuleval --as-manifest``
            output).
        release: When a part's audio is ready: ``"request"`` (default: a part is a whole
            request, ready when its synthesis is done) or ``"chunk"`` (a part is a chunk,
            ready at its recorded time; reads the chunk table, ``chunks``).
        service: The service clock: ``"measured"`` (default: the manifest's service
            times), ``"zero"`` (instant synthesis), ``"scale=F"`` (every service time × F)
            or ``"fit"`` (each request's service time predicted as b0 + b1·audio_s +
            b2·chars by a least-absolute-deviations fit, per backend and realization).
        chunks: The chunk table for ``release="chunk"`` (a DataFrame or its file). None
            (default): the one [`synthesize`][simulplay.api.synthesize] wrote beside its ``out``, or the file
            beside the manifest file (``<stem>.chunks.parquet``).
        silent_parts: What a part without audio (a punctuation-only request) does:
            ``"skip"`` (default: not played, as SimulEval; it still costs its service
            time) or ``"hold"`` (it holds the playback clock at its readiness). Recorded in
            every signature (``silent``).
        allow_incomplete: False (default): an output with a failed request (non-empty
            ``error``) stops the replay with an error naming it. True: such outputs are left
            out, listed in ``excluded`` and counted in every signature.
        servers: Shared servers: the outputs of a share group queue for this many
            identical workers (a whole number ≥ 1; needs ``service="measured"``). None
            (default): every output has its own synthesizer.
        share: With ``servers``: who shares them: ``"panel"`` (default: every talk and
            system), ``"talk"``, ``"system"`` or ``"output"`` (each alone).
        discipline: With ``servers``: the queue discipline, ``"fifo"`` (default: in order
            of eligibility).
        load_curve: With ``servers``: a load curve file (``concurrency``,
            ``service_p50_s``; ``simulplay load`` writes one): service × the slowdown at
            the number of requests in service. None (default): no slowdown.
        slowdown: With ``servers``: the calibrated slowdown, a factor (every service
            time × it) or a calibration table's file (``in_flight``, ``slowdown``;
            ``simulplay live --predict`` writes ``calibration.parquet``): service × the
            factor at the number of requests in flight. None (default): 1.
        talks: Only these talk ids' rows of the manifest (and chunk table), as in
            [`group`][simulplay.api.group] (default None: every talk).
        talks_from: Only the talk ids listed in this file, as in [`group`][simulplay.api.group] (default None).

    Returns:
        A [`ReplayOutput`][simulplay.api.ReplayOutput]: ``summary``, one row per output (``n_parts``,
        ``first_play_s`` and ``end_s`` in seconds from source start, ``audio_s`` (D),
        ``idle_s`` (I), ``offset_s`` (L = end − source, seconds), ``source_s``,
        ``limiting_seq``; with ``servers`` also ``queue_s``), ``parts``, one row per part
        played, their signatures, and ``excluded``, the outputs left out.

    Raises:
        InputError: a manifest with a missing column or a bad value, an unknown release,
            service or silent-parts value, a chunk release without its chunk table, an
            incomplete output without ``allow_incomplete``, a talk id not in the manifest.
    """
    from simulplay.workflows.steps import KEYWORDS, replay_manifest, replay_settings

    curve = None if load_curve is None else as_path(load_curve, "load_curve", "a load curve file")
    settings = replay_settings(as_text(release, "release"), service, as_text(silent_parts, "silent_parts"),
                               servers=None if servers is None else as_count(servers, "servers"),
                               share=as_text(share, "share"), discipline=as_text(discipline, "discipline"),
                               load_curve=curve, slowdown=slowdown_text(slowdown), names=KEYWORDS)
    given = frame_of(manifest, "manifest")
    flag = as_flag(allow_incomplete, "allow_incomplete")
    picked = {"talks": as_talks(talks, talks_from), "talks_flag": "talks"}
    if given is not None:
        if chunks is None and isinstance(manifest, ManifestOutput):
            chunks = manifest.chunks
        if chunks is None and settings.release.needs_chunks:
            raise InputError.at("chunks", "chunk release needs the chunk table",
                                accepted="chunks=PATH or a chunk DataFrame, or a manifest from "
                                "synthesize(…, out=PATH), which writes it beside the manifest")
        res = replay_manifest(given[0], settings, chunks=_chunks_arg(chunks), allow_incomplete=flag,
                              upstream=given[2] or None, **picked)
    else:
        path = as_path(manifest, "manifest", "a manifest DataFrame or file (.parquet or .csv)")
        res = replay_manifest(path, settings, chunks=_chunks_arg(chunks), allow_incomplete=flag, **picked)
    sigs = signatures_of(res.signatures)
    return ReplayOutput(fresh(res.summary), sigs, fresh(res.parts), signatures_of(res.part_signatures()),
                        shared_signature(sigs), tuple(res.excluded))
