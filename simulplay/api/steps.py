"""The pipeline's steps for notebooks: a trace read, grouped, synthesized and replayed
(the functions behind ``simulplay.read_trace``, ``group``, ``synthesize``, ``replay``)."""

from __future__ import annotations

import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from simulplay.api.checks import (
    TRACE_INPUT,
    PathLike,
    as_count,
    as_flag,
    as_path,
    as_paths,
    as_requests_file,
    as_rules,
    as_streams,
    as_text,
    frame_of,
    read_signed,
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


def read_trace(path: PathLike | Sequence[PathLike]) -> SignedTable:
    """Read and validate one trace file or several (``simulplay validate``'s reader).

    Returns a :class:`SignedTable` whose ``table`` is the canonical trace, one row per
    update: ``talk_id, system, seq, time_s, text, source_s, glue`` (``time_s``: when the
    text became available, seconds from source start; ``source_s``: the talk's source
    duration in seconds). A ``(talk_id, system)`` stream may appear in only one file. Its
    ``signature`` names each file with the first 12 hex digits of its SHA-256; ``paths``
    lists them.
    """
    from simulplay.core.provenance import sha256_of_file
    from simulplay.traces import read_traces

    paths = as_paths(path, "path", TRACE_INPUT.split(", ", 1)[1])
    df = read_traces(paths)
    sig = base_signature(table="trace", trace=[f"{p.name}@{sha256_of_file(p)[:12]}" for p in paths])
    return SignedTable(fresh(df), signature=sig, paths=tuple(str(p) for p in paths))


def group(trace: SignedTable | pd.DataFrame | PathLike | Sequence[PathLike], rule: str | Sequence[str], *,
          max_chars: int | None = None) -> SignedTable:
    """The synthesis requests of a trace under one grouping rule or several (``simulplay
    group``): a :class:`SignedTable`, one row per request.

    ``rule``: a RULE string or a list of them — ``immediate``, ``timer:w=4`` (w in
    seconds), ``punct:cap=2,min_words=3``, ``words:n=8,cap=2``; ``max_chars`` cuts each
    request to at most that many characters. Columns: ``talk_id, system, condition``
    (the canonical rule), ``seq`` (from 0 per output), ``dispatch_s`` (seconds from source
    start), ``trigger``, ``n_updates``, ``text``, ``glue``, ``group``, ``source_s`` (s).
    ``signatures``: one per request (its rule and the splitter).
    """
    from simulplay.grouping import Splitter, request_signatures, requests_frame

    rules = as_rules(rule)
    splitter = Splitter(as_count(max_chars, "max_chars"))
    streams, _ = as_streams(trace)
    df = requests_frame(streams, rules, splitter)
    sig = base_signature(table="requests", rule=[r.canonical() for r in rules], splitter=splitter.describe())
    return SignedTable(fresh(df), signatures_of(request_signatures(df, splitter)), sig)


def synthesize(trace: SignedTable | pd.DataFrame | PathLike | Sequence[PathLike] | None = None,
               rule: str | Sequence[str] | None = None, *, store: PathLike, backend: str = "piper",
               requests: SignedTable | pd.DataFrame | PathLike | None = None, out: PathLike | None = None,
               realizations: int = 1, order: str = "counterbalanced", max_chars: int | None = None,
               reuse: str | None = None, executor: str = "serial", progress: Any = None) -> ManifestOutput:
    """Synthesize every request with a real TTS backend into the audio store folder
    ``store`` (created; reused and resumed) and return the request manifest (``simulplay
    synth``) as a :class:`ManifestOutput`.

    The plan is ``trace`` grouped under ``rule`` (as :func:`group`), or a requests table
    ``requests`` (a :func:`group` result, possibly edited, or its file). ``backend`` is a
    spec ``NAME[:KEY=VALUE,…]`` (``piper``, ``piper:deterministic``, ``xtts:model_dir=DIR``).
    The manifest (one row per request: ``dispatch_s``, ``service_s``, ``audio_s``,
    ``source_s`` in seconds, ``n_samples`` at ``sample_rate`` Hz, ``error``) is written to
    ``out`` with its chunk table beside it (``<stem>.chunks.parquet``, which a chunk-release
    :func:`replay` reads), or to a temporary folder when ``out`` is None.
    The result holds one signature per request and the run's, the counts (``stats``:
    synthesized, already in the store, failed), the clock check (``clock``) and the files
    written at ``out`` (``paths``, ``chunks``).
    Failed requests are kept with their ``error`` and service times measured on a busy CPU
    are kept too; a warning says so (replay refuses outputs with failed requests).
    """
    from simulplay.backends import parse_backend_with_reuse
    from simulplay.grouping.requests_file import read_requests
    from simulplay.manifest import chunk_path
    from simulplay.store.store import AudioStore
    from simulplay.synthesis.executors import parse_executor
    from simulplay.synthesis.plan import check_order
    from simulplay.synthesis.run import synthesize_requests, synthesize_to_manifest

    if (requests is None) == (trace is None) or (requests is not None and rule is not None):
        raise InputError.at("synthesize", "needs a plan: trace with rule, or requests",
                            accepted="synthesize(trace, rule, store=…) or synthesize(requests=…, store=…)")
    store_path = as_path(store, "store", "an audio store folder")
    options = {"realizations": as_count(realizations, "realizations", optional=False),
               "max_chars": as_count(max_chars, "max_chars"),
               "order": check_order(as_text(order, "order"), source="order"), "progress": progress,
               "executor": parse_executor(as_text(executor, "executor"), source="executor")}
    config = parse_backend_with_reuse(as_text(backend, "backend"), None if reuse is None else as_text(reuse, "reuse"),
                                      source="backend", reuse_source="reuse")
    with tempfile.TemporaryDirectory(prefix="simulplay-") as tmp:
        target = Path(tmp, "manifest.parquet") if out is None else as_path(out, "out", "a .parquet or .csv path")
        check_writable(target, (".parquet", ".csv"))
        if requests is not None:
            plan = read_requests(as_requests_file(requests, Path(tmp)))
            res = synthesize_requests(plan, config, AudioStore.open(store_path, field="store"), target, **options)
        else:
            streams, paths = as_streams(trace)
            rules = as_rules(rule if rule is not None else [])
            check_distinct({"out": out}, paths)
            res = synthesize_to_manifest(streams, rules, config, AudioStore.open(store_path, field="store"), target,
                                         traces=paths, **options)
        df, sigs = read_signed(target)
    st = res.stats
    failed = df["error"] != ""
    if failed.any():
        warnings.warn(f"{int(failed.sum())} request(s) failed; see the manifest's error column (first: "
                      f"{df.loc[failed, 'error'].iloc[0]})", stacklevel=2)
    if st.clock is not None and st.clock.is_contended:
        warnings.warn(f"service times were measured on a busy CPU ({st.clock.details()}); re-time them on a quiet "
                      "machine: simulplay retime MANIFEST --store DIR --all --out MANIFEST2", stacklevel=2)
    chunks = None if out is None else str(chunk_path(out))
    return ManifestOutput(fresh(df), signatures_of(sigs), dict(res.signature), () if out is None else (str(out),),
                          stats={"synthesized": st.synthesized, "already_in_store": st.skipped,
                                 "failed": st.failed, "damaged": st.damaged},
                          clock=None if st.clock is None else st.clock.to_dict(), chunks=chunks)


def replay(manifest: SignedTable | pd.DataFrame | PathLike, *, release: str = "request", service: str = "measured",
           chunks: pd.DataFrame | PathLike | None = None, silent_parts: str = "skip",
           allow_incomplete: bool = False) -> ReplayOutput:
    """Replay a request manifest (a :func:`synthesize` result, a DataFrame or a file)
    through a serial synthesizer and serial playback (``simulplay replay``): a
    :class:`ReplayOutput` with the playback summary, one row per output, and the parts
    played, one row per part.

    ``release``: ``request`` (a request's audio is ready when it is done) or ``chunk``
    (each chunk at its recorded time; reads the chunk table: ``chunks``, else the one
    beside the manifest file). ``service``: ``measured``, ``zero``, ``scale=F`` or ``fit``.
    ``silent_parts``: ``skip`` or ``hold``. Summary columns: ``n_parts``,
    ``first_play_s`` and ``end_s`` (seconds from source start), ``audio_s`` (D),
    ``idle_s`` (I), ``offset_s`` (L = end − source, s), ``source_s``, ``limiting_seq``.
    ``excluded``: the outputs left out (``allow_incomplete``).
    """
    from simulplay.manifest import read_chunks, read_manifest, validate_manifest
    from simulplay.manifest.chunks import validate_chunks
    from simulplay.sim import replay as run_replay
    from simulplay.sim.variants import parse_release, parse_service, parse_silent_parts

    rel = parse_release(as_text(release, "release"), source="release")
    model = parse_service(as_text(service, "service"), source="service")
    silent = parse_silent_parts(as_text(silent_parts, "silent_parts"), source="silent_parts")
    given = frame_of(manifest, "manifest")
    if given is not None:
        df, upstream, source = validate_manifest(given[0], "manifest"), given[2] or None, "manifest"
        if chunks is None and isinstance(manifest, ManifestOutput):
            chunks = manifest.chunks
    else:
        source = str(as_path(manifest, "manifest", "a manifest DataFrame or file (.parquet or .csv)"))
        df, meta = read_manifest(source)
        upstream = meta.get("signature")
    chunk_df = None
    if rel.needs_chunks:
        if isinstance(chunks, pd.DataFrame):
            chunk_df = validate_chunks(chunks, "chunks")
        elif chunks is None and given is not None:
            raise InputError.at("chunks", "chunk release needs the chunk table",
                                accepted="chunks=PATH or a chunk DataFrame, or a manifest from "
                                "synthesize(…, out=PATH), which writes it beside the manifest")
        else:
            chunk_df = read_chunks(source, None if chunks is None else as_path(chunks, "chunks", "a chunk table"))
    res = run_replay(df, service=model, release=rel, chunks=chunk_df, allow_incomplete=as_flag(allow_incomplete,
                     "allow_incomplete"), upstream=upstream, source=source, silent_parts=silent)
    sigs = signatures_of(res.signatures)
    return ReplayOutput(fresh(res.summary), sigs, fresh(res.parts), signatures_of(res.part_signatures()),
                        shared_signature(sigs), tuple(res.excluded))
