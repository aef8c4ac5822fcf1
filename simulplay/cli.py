"""The command-line interface. Each command parses, validates, calls one library
function and writes the result; all logic lives in the packages.

Units: every time is in seconds from source start unless a flag says otherwise.
Output format follows the --out suffix: .parquet (canonical), .csv or .md.
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer
from typer.exceptions import Abort, TyperException

from simulplay import __version__
from simulplay.errors import InputError, SimulplayError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
    help="Replay simultaneous-translation text streams through TTS and serial playback, "
    "and compare when listeners hear the end. Times are seconds from source start.",
)


def _version(value: bool):
    if value:
        typer.echo(f"simulplay {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version and exit.")):
    pass


OUT_HELP = "Output table: .parquet (canonical), .csv or .md, chosen by the suffix."


@app.command()
def validate(
    traces: list[Path] = typer.Argument(..., help="Trace files (.parquet, .csv or .jsonl)."),
    out: Path | None = typer.Option(None, "--out", help="Also save the statistics table. " + OUT_HELP),
):
    """Check trace files and print per-stream update statistics.

    Columns: updates, whitespace words, median and 90th-percentile words per update,
    % of updates with ≤ 2 words, % ending in terminal punctuation (the `punct` rule's
    sentence end: . ? ! … 。 ？ ！ ؟ । then any closing quotes/brackets and spaces), and
    updates available after the source end (valid, counted).
    """
    from simulplay.console import print_table
    from simulplay.signature import base_signature
    from simulplay.tables import check_writable, write_table
    from simulplay.traces import read_trace, stream_stats

    if out:
        check_writable(out)
    frames = [read_trace(p) for p in traces]
    stats = __import__("pandas").concat([stream_stats(f) for f in frames], ignore_index=True)
    sig = base_signature(table="trace-stats")
    print_table(stats, sig, title=f"{len(stats)} stream(s) valid")
    if out:
        write_table(stats, out, sig, kind="trace-stats")


@app.command()
def group(
    trace: list[Path] = typer.Argument(..., help="Trace files (.parquet, .csv or .jsonl); a (talk_id, system) "
                                       "stream may appear in only one of them."),
    rule: list[str] = typer.Option(..., "--rule", help="Grouping rule, repeatable: immediate, "
                                   "timer[:w=SECONDS] (default w=4), punct[:cap=S,min_words=N] (defaults 2, 3), "
                                   "words[:n=N,cap=S] (defaults 8, 2). Seconds. unit=char on punct/words counts "
                                   "letters and digits instead of whitespace words (Chinese, Japanese, Thai)."),
    max_chars: int | None = typer.Option(None, "--max-chars", min=1,
                                            help="Input-limit splitter: at most N characters per request."),
    out: Path = typer.Option(..., "--out", help="Requests table. " + OUT_HELP),
):
    """Group traces' updates into synthesis requests (one row per request): the plan
    that `simulplay synth --requests` synthesizes, to inspect or edit before synthesis.

    Columns: talk_id, system, condition (canonical rule), seq (from 0 per output),
    dispatch_s (seconds from source start), trigger (immediate/timer/punct/words/eos),
    n_updates (size of the group the request came from), text, glue (continues the
    previous request without a space), group, source_s (seconds).
    """
    from simulplay.grouping import Splitter, parse_rule, requests_frame, unique_rules
    from simulplay.signature import base_signature
    from simulplay.tables import check_distinct, check_writable, write_table
    from simulplay.traces import read_traces, streams_from_frame

    check_writable(out)
    check_distinct({"--out": out}, trace)
    rules = unique_rules([parse_rule(r) for r in rule])
    splitter = Splitter(max_chars)
    df = requests_frame(streams_from_frame(read_traces(trace)), rules, splitter)
    sigs = [base_signature(table="requests", rule=c, splitter=splitter.describe()) for c in df["condition"]]
    write_table(df, out, sigs, kind="requests")
    typer.echo(f"wrote {len(df)} requests for {len(rules)} rule(s) to {out}")


@app.command()
def replay(
    manifest: Path = typer.Argument(..., help="Request manifest (.parquet or .csv)."),
    out: Path = typer.Option(..., "--out", help="Playback summary. " + OUT_HELP),
    release: str = typer.Option("request", "--release",
                                help="request: audio ready when the whole request is done (primary); "
                                "chunk: each chunk ready at its recorded time (needs --chunks)."),
    service: str = typer.Option("measured", "--service",
                                help="measured, zero, or scale=F (service time × F)."),
    parts: Path | None = typer.Option(None, "--parts", help="Also write per-part playback. " + OUT_HELP),
    chunks: Path | None = typer.Option(None, "--chunks", help="Chunk table for --release chunk "
                                          "(default: MANIFEST's sibling *.chunks.parquet)."),
    allow_incomplete: bool = typer.Option(False, "--allow-incomplete",
                                          help="Exclude outputs with failed requests instead of "
                                          "refusing; the count is recorded in every signature."),
):
    """Replay request clocks through a serial synthesizer and serial playback.

    Summary columns (one row per output): n_parts, first_play_s (first audible part's
    start), audio_s (D), idle_s (I, including the initial wait), end_s (C_m),
    offset_s (L = C_m − S), source_s (S), limiting_seq (the part k maximizing
    r_k + Σ_{j≥k} d_j). Parts with no audio occupy the synthesizer but are not played.
    """
    from simulplay.sim import read_chunks, read_manifest
    from simulplay.sim import replay as run_replay
    from simulplay.sim.service import parse_service
    from simulplay.tables import check_distinct, check_writable, write_table

    check_writable(out)
    if parts:
        check_writable(parts)
    check_distinct({"--out": out, "--parts": parts}, [manifest])
    model = parse_service(service)
    df, meta = read_manifest(manifest)
    chunk_df = read_chunks(manifest, chunks) if release == "chunk" else None
    res = run_replay(df, service=model, release=release, chunks=chunk_df,
                     allow_incomplete=allow_incomplete, upstream=meta.get("signature"), source=str(manifest))
    write_table(res.summary, out, res.signatures, kind="playback-summary")
    if parts:
        write_table(res.parts, parts, _part_sigs(res), kind="playback-parts")
    note = f" ({len(res.excluded)} incomplete output(s) excluded)" if res.excluded else ""
    typer.echo(f"replayed {len(res.summary)} output(s) to {out}{note}")


def _part_sigs(res):
    by_output = {}
    keys = [c for c in res.summary.columns if c in ("talk_id", "system", "condition", "backend", "realization")]
    for row, sig in zip(res.summary[keys].itertuples(index=False), res.signatures):
        by_output[tuple(row)] = sig
    return [by_output[tuple(r)] for r in res.parts[keys].itertuples(index=False)]


@app.command()
def synth(
    trace: list[Path] = typer.Argument(None, help="Trace files (.parquet, .csv or .jsonl); with --rule. "
                                       "Not with --requests."),
    rule: list[str] = typer.Option([], "--rule", help="Grouping rule, repeatable (see `simulplay group`)."),
    requests: Path | None = typer.Option(None, "--requests", help="Synthesize exactly the requests of this "
                                         "table (.parquet or .csv: a `simulplay group` output, possibly edited, "
                                         "or one from another tool) instead of TRACE… --rule. Validated in full "
                                         "before any synthesis; requests beyond the input limit are split as "
                                         "for traces."),
    backend: str = typer.Option("piper", "--backend", help="TTS backend spec: piper, "
                                "piper:voice=PATH,intra_op_threads=N,… (every setting is a parameter). Piper's "
                                "noise: noise_w_scale (0.8) draws durations, noise_scale (0.667) the waveform; "
                                "piper:durations=fixed sets noise_w_scale=0 (the same sample counts every run, "
                                "waveforms may differ), piper:deterministic both 0 (the same samples); under "
                                "either, identical requests share audio across realizations (reuse=always)."),
    store: Path = typer.Option(..., "--store", help="Audio store folder (created; reused and resumed)."),
    out: Path = typer.Option(..., "--out", help="Request manifest (.parquet canonical, or .csv); the chunk "
                             "table goes beside it as <stem>.chunks.parquet."),
    realizations: int = typer.Option(1, "--realizations", min=1, help="Independent synthesis realizations."),
    max_chars: int | None = typer.Option(None, "--max-chars", min=1,
                                         help="Input-limit splitter (default: the backend's own limit)."),
    reuse: str | None = typer.Option(None, "--reuse", help="never | same-realization | always "
                                     "(default: always for seed-reproducible backends, else same-realization)."),
    executor: str = typer.Option("serial", "--executor", help="serial | process:N (N local worker processes) | "
                                 "ray (a local Ray instance) | ray:auto or ray:HOST:PORT (join a cluster)."),
    workers: int | None = typer.Option(None, "--workers", min=1,
                                       help="Ray: at most this many actors (default: as many as fit)."),
    worker_cpus: float = typer.Option(1.0, "--worker-cpus", min=0, help="Ray: CPUs reserved per actor."),
    worker_gpus: float = typer.Option(0.0, "--worker-gpus", min=0, help="Ray: GPUs per actor (1 for a GPU backend)."),
    retries: int = typer.Option(2, "--retries", min=0,
                                help="Times a request is retried after its worker died (killed, OOM, lost node)."),
    contention_sample: int = typer.Option(8, "--contention-sample", min=0,
                                          help="Parallel runs: re-time this many requests serially afterwards and "
                                          "report the median parallel/serial service-time ratio (0: off)."),
    worker_stats: bool = typer.Option(False, "--worker-stats", help="Print per-worker throughput at the end."),
    quiet: bool = typer.Option(False, "--quiet", help="No progress bar."),
):
    """Synthesize every request of the traces under each rule (or of a requests table,
    --requests) with a real TTS backend.

    One request at a time on a loaded, warmed-up backend; service time (seconds) covers
    text preparation, inference and transfer of samples, never loading, warm-up, logging
    or storage. Audio is stored once as FLAC, content-addressed; killing the command and
    running it again resumes. Exit code 1 when some requests failed: they are recorded
    in the manifest's error column and comparisons refuse their outputs. With
    --requests the manifest equals the one `synth TRACE… --rule …` writes for the same
    plan; its signature names the requests file and its SHA-256.

    \b
    Piper's noise, the demo's 757 distinct requests synthesized in two fresh processes:
    setting                        same count  same samples  |Δ duration| median/p95/max
    paper (noise 0.667, noise-w 0.8)   80/757         0/757  35 ms / 139 ms / 0.46 s
    durations=fixed (noise-w 0)       757/757         0/757  0
    deterministic (both 0)            757/757       757/757  0
    """
    from simulplay.backends import parse_backend
    from simulplay.backends.executors import parse_executor
    from simulplay.backends.run import synthesize_requests, synthesize_to_manifest
    from simulplay.backends.store import AudioStore
    from simulplay.grouping import parse_rule, unique_rules
    from simulplay.grouping.requests_file import read_requests
    from simulplay.tables import check_distinct, check_writable
    from simulplay.traces import read_traces, streams_from_frame

    trace = trace or []
    _check_plan_source(trace, rule, requests)
    check_writable(out, (".parquet", ".csv"))
    check_distinct({"--out": out}, [*trace, *([requests] if requests else [])])
    rules = unique_rules([parse_rule(r) for r in rule])
    config = parse_backend(backend if reuse is None else f"{backend}{',' if ':' in backend else ':'}reuse={reuse}")
    spec = parse_executor(executor, worker_cpus=worker_cpus, worker_gpus=worker_gpus, retries=retries,
                          workers=workers)
    opts = {"realizations": realizations, "max_chars": max_chars, "progress": not quiet, "executor": spec,
            "contention_sample": contention_sample}
    if requests:
        plan = read_requests(requests)
        res = synthesize_requests(plan, config, AudioStore(store), out, **opts)
    else:
        streams = streams_from_frame(read_traces(trace))
        res = synthesize_to_manifest(streams, rules, config, AudioStore(store), out, **opts, traces=trace)
    st = res.stats
    typer.echo(f"{len(res.manifest)} requests → {out}: synthesized {st.synthesized}, already in store "
               f"{st.skipped}, failed {st.failed}; reused rows {int(res.manifest['reused'].sum())}")
    _print_parallel_summary(st, spec.label(), worker_stats)
    if (res.manifest["error"] != "").any():
        n = int((res.manifest["error"] != "").sum())
        print(f"simulplay: {n} request(s) failed; see the manifest's error column "
              f"(first: {res.manifest.loc[res.manifest['error'] != '', 'error'].iloc[0]})", file=sys.stderr)
        raise typer.Exit(1)


def _check_plan_source(trace: list[Path], rule: list[str], requests: Path | None) -> None:
    """`synth` plans from TRACE… --rule or from --requests, never both, never neither."""
    if requests and (trace or rule):
        given = " and ".join(x for x, on in (("TRACE", trace), ("--rule", rule)) if on)
        raise InputError.at("--requests", f"is given with {given}",
                            accepted="either --requests REQUESTS or TRACE… --rule RULE…, not both")
    if not requests and not (trace and rule):
        missing = " and ".join(x for x, on in (("TRACE", trace), ("--rule", rule)) if not on)
        raise InputError.at("synth", f"no plan: {missing} missing",
                            accepted="TRACE… with --rule RULE…, or --requests REQUESTS")


def _print_parallel_summary(st, executor: str, per_worker: bool) -> None:
    """Retries, worker deaths, service-time inflation and (on request) per-worker throughput."""
    if executor == "serial":
        return
    line = f"executor {executor}: {st.retries} retried request(s), {st.worker_deaths} worker death(s)"
    if st.contention_ratio is not None:
        line += (f"; median service time parallel/serial {st.contention_ratio:.3f} on {st.contention_sample} "
                 "re-timed requests (parallel workers on shared cores inflate service times)")
    typer.echo(line)
    if per_worker and st.per_worker:
        import pandas as pd

        from simulplay.console import print_table
        from simulplay.signature import base_signature

        rows = [{"worker": w, "requests": v.requests, "audio_s": v.audio_s, "service_s": v.service_s,
                 "rtf": v.service_s / v.audio_s if v.audio_s else float("nan")} for w, v in st.per_worker.items()]
        print_table(pd.DataFrame(rows), base_signature(table="workers", executor=executor),
                    title="per-worker throughput")


@app.command()
def eta(
    summary: Path = typer.Argument(..., help="Playback summary from `simulplay replay`."),
    a: str = typer.Option(..., "--a", help="Translator A (δ = L(A) − L(F); negative: A finishes earlier)."),
    f: str = typer.Option(..., "--f", help="Translator F."),
    reference: str = typer.Option(..., "--reference", help="Reference condition (e.g. immediate)."),
    out: Path = typer.Option(..., "--out", help="η table, one row per other condition. " + OUT_HELP),
    draws: int = typer.Option(10_000, "--draws", min=1, help="Paired talk-bootstrap draws."),
    seed: int = typer.Option(1032026, "--seed", min=0, help="Bootstrap seed (0 is a seed)."),
    quantile_method: str = typer.Option("linear", "--quantile-method",
                                        help="NumPy quantile method for the interval ends."),
    confidence: float = typer.Option(0.95, "--confidence", help="Interval coverage, in (0, 1)."),
    per_talk: Path | None = typer.Option(None, "--per-talk", help="Also write per-talk δ and η. " + OUT_HELP),
    contrast: list[str] = typer.Option([], "--contrast", help="Buffered-policy contrast P1,P2: "
                                       "δ(P1) − δ(P2) per talk with the same bootstrap; repeatable."),
    contrast_out: Path | None = typer.Option(
        None, "--contrast-out", help="Contrast table (default: OUT with .contrasts before the suffix)."),
    allow_incomplete: bool = typer.Option(False, "--allow-incomplete",
                                          help="Exclude talks with missing outputs and count them."),
):
    """Completion gaps δ, their change η under grouping, its duration and idle parts, and
    paired talk-bootstrap intervals (all conditions of a talk resampled together).

    Columns: condition, n_talks, delta_ref_s (mean δ(0)), delta_s (mean δ(w)), eta_s,
    ci_low_s, ci_high_s, n_negative / n_positive (talks with η < 0 / > 0),
    duration_part_s, idle_part_s (they sum to eta_s), signature. Means weight talks
    equally; each backend and realization is a separate panel.
    """
    from simulplay.analysis import Bootstrap, compute_eta, read_summary
    from simulplay.console import print_table
    from simulplay.tables import check_distinct, check_writable, write_table

    check_writable(out)
    for p in (per_talk, contrast_out):
        if p:
            check_writable(p)
    check_distinct({"--out": out, "--per-talk": per_talk, "--contrast-out": contrast_out}, [summary])
    pairs = [_pair(c) for c in contrast]
    try:
        boot = Bootstrap(draws=draws, seed=seed, method=quantile_method, confidence=confidence)
    except ValueError as e:
        raise InputError.at("--seed/--draws/--quantile-method/--confidence", str(e),
                            accepted="seed ≥ 0, draws ≥ 1, a NumPy quantile method and 0 < confidence < 1") from e
    df, upstream = read_summary(summary)
    res = compute_eta(df, a=a, f=f, reference=reference, boot=boot, contrasts=pairs,
                      allow_incomplete=allow_incomplete, upstream=upstream, source=str(summary))
    write_table(res.table, out, res.table_signatures, kind="eta", signature_column=True)
    print_table(res.table, res.table_signatures, title=f"η: {a} vs {f}, reference {reference}")
    if per_talk:
        write_table(res.per_talk, per_talk, res.per_talk_signatures, kind="eta-per-talk")
    if pairs:
        target = contrast_out or out.with_name(out.stem + ".contrasts" + out.suffix)
        write_table(res.contrasts, target, res.contrast_signatures, kind="contrast", signature_column=True)
        print_table(res.contrasts, res.contrast_signatures, title="Buffered-policy contrasts δ(P1) − δ(P2)")
    if res.excluded:
        typer.echo(f"excluded {len(res.excluded)} missing output(s); their talks are not in the means")


def _pair(text: str, flag: str = "--contrast") -> tuple[str, str]:
    """Two conditions separated by a comma; rule strings may hold commas themselves
    (``punct:cap=2,min_words=3,timer:w=2``), so the split that gives two rule strings wins."""
    cuts = [i for i, ch in enumerate(text) if ch == ","]
    candidates = [(text[:i].strip(), text[i + 1:].strip()) for i in cuts]
    candidates = [(p, q) for p, q in candidates if p and q]
    for p, q in candidates:
        if _is_rule(p) and _is_rule(q):
            return p, q
    if len(candidates) == 1:
        return candidates[0]
    raise InputError.at(f"{flag} '{text}'", "is not two conditions",
                        accepted="P1,P2 with rule strings (e.g. punct,timer:w=2 or punct:cap=2,min_words=3,timer:w=2) "
                        "or two condition names without commas")


def _is_rule(text: str) -> bool:
    from simulplay.grouping import parse_rule

    try:
        parse_rule(text)
    except InputError:
        return False
    return True


@app.command("import-simuleval")
def import_simuleval_command(
    log: Path = typer.Argument(..., help="SimulEval instances.log: one JSON object per line, times in ms."),
    system: str = typer.Option(..., "--system", help="System name written on every row."),
    out: Path = typer.Option(..., "--out", help="Trace: .parquet (canonical), .csv or .jsonl, chosen by the "
                             "suffix; with --as-manifest a request manifest: .parquet or .csv."),
    clock: str = typer.Option("source", "--clock",
                              help="source: a unit is available at its `delays` entry (source audio read so far); "
                              "computation-aware: at its `elapsed` entry (adds the agent's computation time)."),
    unit: str = typer.Option("auto", "--unit",
                             help="Output units: word (prediction split on spaces), char (one character per delay, "
                             "no spaces; imported with glue), spm (the prediction_spm pieces) or auto."),
    as_manifest: bool = typer.Option(False, "--as-manifest",
                                     help="Speech-to-speech log (durations present) → request manifest for "
                                     "`replay`: ready_s = the segment's time, audio_s = its duration, dispatch_s "
                                     "= its delay, service_s empty, condition `logged`."),
    segmentation: Path | None = typer.Option(
        None, "--segmentation", help="Short-form log → long-form streams: the MuST-C/IWSLT segmentation YAML "
        "(a list of {duration, offset, speaker_id, wav}, seconds, in talk order). Each instance becomes its "
        "segment's part of the talk, its times offset + delays/1000 (or + elapsed/1000)."),
    wavs: Path | None = typer.Option(None, "--wavs", help="With --segmentation: folder of the talks' wavs (the "
                                     "YAML's wav names); source_s = the wav's duration. Default: the end of the "
                                     "talk's last segment."),
    match: str | None = typer.Option(None, "--match", help="With --segmentation: name (instance wav "
                                     "<talk>_<N>.wav is segment N of <talk>.wav, 0-based, in the YAML's order), "
                                     "position (n-th instance = n-th YAML entry) or auto (default: name when "
                                     "every wav stem ends in _<N>, position when none does)."),
):
    """Import a SimulEval instances.log: speech-to-text as a trace,
    speech-to-speech as a request manifest.

    The log's times are milliseconds; the output's are seconds (ms / 1000)
    from source start. Consecutive units with the same time form one update
    available at that time; `</s>` is dropped with its delay. talk_id = the
    stem of the source wav name (the index when there is no source);
    source_s = source_length / 1000. Prints per stream: updates, whitespace
    words, retractions (none in SimulEval logs), characters of the assembled
    text, which must equal the log's prediction without `</s>`.

    With --segmentation a short-form log (one instance per segment) becomes
    one long-form stream per talk: segments joined in order with a space
    between them; an update that would precede the previous one waits for
    it (counted as held); every segment needs one instance whose
    source_length equals its duration within 10 ms, and a talk's segments
    may not overlap. Prints per talk: segments, empty segments, updates,
    words, first and last time (s), held updates, source_s.
    """
    from simulplay.tables import check_writable
    from simulplay.traces.importers import import_simuleval, import_simuleval_segmented
    from simulplay.traces.readers import TRACE_SUFFIXES

    for flag, value in (("--wavs", wavs), ("--match", match)):
        if value is not None and segmentation is None:
            raise InputError.at(flag, "is used only with --segmentation", accepted="--segmentation SEGMENTS.yaml")
    if segmentation is not None and as_manifest:
        raise InputError.at("--as-manifest", "cannot be combined with --segmentation",
                            accepted="a speech-to-text short-form log (segmented speech output is not supported)")
    check_writable(out, (".parquet", ".csv") if as_manifest else TRACE_SUFFIXES)
    if segmentation is not None:
        res = import_simuleval_segmented(log, segmentation, system=system, clock=clock, unit=unit, wavs=wavs,
                                         match=match or "auto")
    else:
        res = import_simuleval(log, system=system, clock=clock, unit=unit, as_manifest=as_manifest)
    _write_import(res, log, out)


@app.command("import-simulstream")
def import_simulstream_command(
    log: Path = typer.Argument(..., help="simulstream metrics log: JSON lines, times in seconds."),
    system: str = typer.Option(..., "--system", help="System name written on every row."),
    out: Path = typer.Option(..., "--out", help="Trace: .parquet (canonical), .csv or .jsonl, chosen by the suffix."),
    clock: str = typer.Option("source", "--clock",
                              help="source: a packet's text is available at total_audio_processed; "
                              "computation-aware: packet k starts at the later of its arrival and the end of "
                              "packet k−1 and is available computation_time later."),
    wavs: Path | None = typer.Option(None, "--wavs",
                                     help="Folder of the talks' wavs (wav_name, or its base name): source_s = the "
                                     "wav's duration. Default: the talk's last total_audio_processed."),
    retractions: str = typer.Option("refuse", "--retractions",
                                    help="refuse: stop at the first packet with deleted_tokens (re-translation); "
                                    "final: keep only text never deleted later, available when last emitted "
                                    "(an offline upper bound, marked in the signature)."),
    unit: str = typer.Option("spm", "--unit",
                             help="Token kind: spm (SentencePiece; '▁' starts a word, other pieces attach), word "
                             "(joined with spaces) or char (joined without)."),
):
    """Import a simulstream metrics log as a trace: one update per packet
    that generated text.

    Times are seconds from source start, as in the log. SentencePiece pieces
    are detokenized; an update whose first piece continues the previous word
    or is attaching punctuation gets glue (no space before it). Whitespace is
    one word boundary however it is written (a lone '▁' piece, '▁▁', spaces):
    a packet of only whitespace makes no update. talk_id = the stem of the wav
    name. Prints per stream: updates, whitespace words, retractions (packets
    with deleted tokens), retracted tokens, characters of the assembled text,
    which must equal the log's full detokenized output with whitespace runs
    counted as one space (else the error names the packet's line).
    """
    from simulplay.tables import check_writable
    from simulplay.traces.importers import import_simulstream
    from simulplay.traces.readers import TRACE_SUFFIXES

    check_writable(out, TRACE_SUFFIXES)
    res = import_simulstream(log, system=system, clock=clock, wavs=wavs, retractions=retractions, unit=unit)
    _write_import(res, log, out)


def _write_import(res, log: Path, out: Path) -> None:
    from simulplay.console import print_table
    from simulplay.tables import write_table
    from simulplay.traces import write_trace

    if res.kind == "manifest":
        upstream = {k: v for k, v in res.signature.items() if k != "table"}
        write_table(res.frame, out, res.signature, kind="request-manifest", extra_meta={"signature": upstream})
    else:
        write_trace(res.frame, out, res.signature)
    print_table(res.stats, res.signature, title=f"{len(res.stats)} stream(s) imported from {log}")
    typer.echo(f"wrote {len(res.frame)} {'requests' if res.kind == 'manifest' else 'updates'} to {out}")


@app.command()
def player(
    manifest: Path = typer.Argument(..., help="Request manifest (.parquet or .csv)."),
    out: Path = typer.Option(..., "--out", help="Player table, one row per output and pre-buffer. " + OUT_HELP),
    release: str = typer.Option("request", "--release",
                                help="request: a part is a whole request, ready when it is done (primary); "
                                "chunk: a part is a chunk, ready at its recorded time (needs --chunks)."),
    frame_ms: float = typer.Option(20.0, "--frame-ms", help="Playback frame in ms (> 0): first playable "
                                   "audio and the fluidity deadlines count whole frames only."),
    min_stall_ms: float = typer.Option(10.0, "--min-stall-ms", help="A wait counts as a stall only when "
                                       "strictly longer than this many ms (≥ 0)."),
    startup_delay_ms: float = typer.Option(0.0, "--startup-delay-ms", help="Fluidity start-up delay in ms "
                                           "(≥ 0): the first frame deadline, counted from the first playable "
                                           "frame."),
    prebuffer_s: str = typer.Option("0,0.5,1.5", "--prebuffer-s", help="Pre-buffers in seconds, comma-"
                                    "separated (each ≥ 0, no repeats): playback starts this long after the "
                                    "first part's readiness. One row per value, ascending."),
    service: str = typer.Option("measured", "--service", help="measured, zero, or scale=F (service time × F)."),
    chunks: Path | None = typer.Option(None, "--chunks", help="Chunk table for --release chunk "
                                       "(default: MANIFEST's sibling *.chunks.parquet)."),
    store: Path | None = typer.Option(None, "--store", help="Audio store of `simulplay synth`: adds "
                                      "first_audible_s (needs audio_key, sample_rate, n_samples columns)."),
    allow_incomplete: bool = typer.Option(False, "--allow-incomplete",
                                          help="Exclude outputs with failed requests instead of "
                                          "refusing; the count is recorded in every signature."),
):
    """Streaming player metrics of each output's replayed timeline (after Veeksha).

    Parts play in order; a part with no audio is skipped; a part is usable once it and
    every earlier part are ready, and parts ready at the same instant are one arrival.
    Times are seconds from source start, rounded to whole nanoseconds, so a part that
    arrives exactly when needed is on time.

    Columns: prebuffer_s; n_parts, n_arrivals, audio_s; first_ready_s (first part with
    audio); first_playable_s (first arrival by which the audio reaches one whole frame;
    a partial frame never counts); first_audible_s (with --store: the arrival of the part
    ending the first 10 ms window whose RMS is at or above -40 dBFS, full scale 1.0;
    windows cut from the output's start, a final short window kept); stall_count,
    stall_total_s, stall_longest_s (playback from the first readiness; a stall is a wait
    for the next part strictly longer than --min-stall-ms; shorter waits still delay
    playback); required_startup_delay_s = max(0, max over k ≥ 1 of r_k - r_0 - audio
    before k), the smallest wait removing every wait; stall_free_prebuffer_s (smallest
    pre-buffer with no stall over --min-stall-ms); n_frames, fluidity_deadlines,
    fluidity_missed, fluidity_index = met / all deadlines (first deadline the start-up
    delay, then one frame after the previous frame plus slack; an early frame adds slack,
    a late one misses every deadline elapsed while waiting and resets the slack);
    prebuffer_first_sound_s, prebuffer_stall_count, prebuffer_stall_total_s,
    prebuffer_stall_longest_s, prebuffer_end_s (playback with the row's pre-buffer).
    """
    from simulplay.sim import read_chunks, read_manifest
    from simulplay.sim.player_table import player_config, player_metrics, store_loader
    from simulplay.sim.service import parse_service
    from simulplay.tables import check_writable, write_table

    check_writable(out)
    config = player_config(frame_ms=frame_ms, min_stall_ms=min_stall_ms, startup_delay_ms=startup_delay_ms,
                           prebuffer_s=prebuffer_s)
    if release not in ("request", "chunk"):
        raise InputError.at(f"--release '{release}'", "unknown release", accepted="request or chunk")
    model = parse_service(service)
    load_audio = store_loader(store) if store else None
    df, meta = read_manifest(manifest)
    chunk_df = read_chunks(manifest, chunks) if release == "chunk" else None
    res = player_metrics(df, config=config, release=release, service=model, chunks=chunk_df,
                         allow_incomplete=allow_incomplete, upstream=meta.get("signature"), source=str(manifest),
                         load_audio=load_audio)
    write_table(res.table, out, res.signatures, kind="player")
    note = f" ({len(res.excluded)} incomplete output(s) excluded)" if res.excluded else ""
    typer.echo(f"wrote player metrics of {len(res.table) // len(config.prebuffers_s)} output(s) to {out}{note}")


@app.command()
def edges(
    manifest: Path = typer.Argument(..., help="Synthesized request manifest (from `simulplay synth`; needs "
                                    "audio_key, sample_rate, n_samples)."),
    store: Path = typer.Option(..., "--store", help="The audio store the manifest was synthesized into; speech "
                               "probabilities are cached in STORE/vad/<model id>/."),
    out: Path = typer.Option(..., "--out", help="Playback summary, one row per (threshold, output). " + OUT_HELP),
    thresholds: str = typer.Option("0.3,0.5,0.7", "--thresholds",
                                   help="Speech-probability thresholds in (0, 1], comma-separated."),
    guard_ms: float = typer.Option(100.0, "--guard-ms", help="Milliseconds kept before the first and after the "
                                   "last speech frame (≥ 0)."),
    eta_out: Path | None = typer.Option(None, "--eta-out", help="η per threshold (needs --a, --f, --reference). "
                                        + OUT_HELP),
    a: str | None = typer.Option(None, "--a", help="Translator A for --eta-out (δ = L(A) − L(F))."),
    f: str | None = typer.Option(None, "--f", help="Translator F for --eta-out."),
    reference: str | None = typer.Option(None, "--reference", help="Reference condition for --eta-out and "
                                         "--share-out."),
    share_out: Path | None = typer.Option(None, "--share-out", help="Share of the audio-duration reduction "
                                          "that is detected non-speech, per system, pair and threshold. " + OUT_HELP),
    pair: list[str] = typer.Option([], "--pair", help="REF,COND for --share-out, repeatable (default: "
                                   "--reference against every other condition)."),
    vad_model: str = typer.Option("onnx", "--vad-model", help="Bundled Silero VAD file: onnx (silero_vad.onnx), "
                                  "sequence (its block-wise export, same probabilities, faster) or jit."),
    draws: int = typer.Option(10_000, "--draws", min=1, help="Paired talk-bootstrap draws."),
    seed: int = typer.Option(1032026, "--seed", min=0, help="Bootstrap seed (0 is a seed)."),
    quantile_method: str = typer.Option("linear", "--quantile-method", help="NumPy quantile method."),
    confidence: float = typer.Option(0.95, "--confidence", help="Interval coverage, in (0, 1)."),
    allow_incomplete: bool = typer.Option(False, "--allow-incomplete",
                                          help="Exclude outputs with failed requests and count them."),
    quiet: bool = typer.Option(False, "--quiet", help="No progress bar."),
):
    """Edge-silence replay: trim each request's leading and trailing non-speech, keep its
    readiness, replay playback (request release, measured service).

    Each waveform is resampled to 16 kHz (soxr) and scored by Silero VAD on consecutive
    512-sample frames (32 ms; state reset per waveform; the last frame zero-padded for
    the model but counted at its real length). A frame is speech when its probability is
    ≥ the threshold. Kept: from the first speech frame's start minus the guard to the
    last speech frame's end plus the guard, clipped to the waveform; interior pauses
    stay; no padding or gap merging; no speech frame: the request keeps no audio (it
    still occupies the synthesizer). Probabilities are computed once per audio key and
    model and cached in the store, so another sweep runs no inference.

    Summary columns: threshold, then those of `simulplay replay`, plus
    untrimmed_audio_s and n_removed (requests without a speech frame). --eta-out: the
    `simulplay eta` columns with threshold (one panel per threshold). --share-out:
    system, reference, condition, threshold, n_talks, reduction_s (mean untrimmed audio
    REF − COND, seconds), nonspeech_s (its part in frames below the threshold, interior
    pauses included), speech_s (the rest), share_pct (100 · Σ nonspeech / Σ reduction
    over talks), edge_s (the part the edge replay removes).
    """
    from simulplay.analysis import Bootstrap
    from simulplay.analysis.edge_replay import check_guard, parse_thresholds, run_edges
    from simulplay.analysis.vad import SileroVad
    from simulplay.backends.store import AudioStore
    from simulplay.console import print_table
    from simulplay.sim import read_manifest
    from simulplay.tables import check_writable, write_table

    for p in (out, eta_out, share_out):
        if p:
            check_writable(p)
    levels = parse_thresholds(thresholds)
    check_guard(guard_ms)
    vad = SileroVad(vad_model)
    if eta_out and not (a and f and reference):
        raise InputError.at("--eta-out", "needs --a, --f and --reference", accepted="the translators and the "
                            "reference condition, as for `simulplay eta`")
    pairs = [_pair(p, "--pair") for p in pair]
    for flag, given, needs in (("--a", a, eta_out), ("--f", f, eta_out), ("--pair", pairs, share_out)):
        if given and not needs:
            raise InputError.at(flag, f"is used only with {'--eta-out' if flag != '--pair' else '--share-out'}",
                                accepted="the table that uses it, or leave it out")
    if share_out and not pairs and not reference:
        raise InputError.at("--share-out", "needs --pair REF,COND or --reference", accepted="the conditions to pair")
    try:
        boot = Bootstrap(draws=draws, seed=seed, method=quantile_method, confidence=confidence)
    except ValueError as e:
        raise InputError.at("--seed/--draws/--quantile-method/--confidence", str(e),
                            accepted="seed ≥ 0, draws ≥ 1, a NumPy quantile method and 0 < confidence < 1") from e
    df, meta = read_manifest(manifest)
    audio_store = AudioStore(store, create=False)
    res = run_edges(df, audio_store, levels, guard_ms=guard_ms, vad=vad, a=a if eta_out else None, f=f,
                    reference=reference, boot=boot, pairs=pairs if share_out else None,
                    allow_incomplete=allow_incomplete, upstream=meta.get("signature"), source=str(manifest),
                    progress=not quiet)
    er = res.result
    write_table(er.summary, out, er.signatures, kind="edges-summary", extra_meta={"vad": er.vad})
    st = er.stats
    typer.echo(f"silero-vad {vad.variant}: inferred {st.inferred} waveform(s) ({st.audio_s:.1f} s of audio in "
               f"{st.inference_s:.1f} s), {st.cached} from the cache; {len(er.summary)} row(s) → {out}")
    if eta_out:
        write_table(res.eta.table, eta_out, res.eta.table_signatures, kind="eta-edges", signature_column=True)
        print_table(res.eta.table, res.eta.table_signatures, title=f"η after edge trimming: {a} vs {f}, "
                    f"reference {reference}")
    if share_out:
        write_table(res.share, share_out, res.share_signatures, kind="edges-nonspeech", signature_column=True)
        print_table(res.share, res.share_signatures, title="non-speech share of the audio-duration reduction")
    if er.excluded:
        typer.echo(f"excluded {len(er.excluded)} incomplete output(s)")


@app.command()
def report(
    inputs: list[Path] = typer.Argument(..., help="A run folder (`simulplay run`/`demo`), or the tables of "
                                        "step-by-step work: files (.parquet, .csv; traces also .jsonl) and folders "
                                        "holding them, in any order, under any names."),
    out: Path = typer.Option(..., "--out", help="Report folder (created; its report files are replaced)."),
    condition: str | None = typer.Option(None, "--condition", help="Grouped condition of Figures 2-3 (ΔQ and the "
                                         "timeline), compared with the reference; default: the timer with the "
                                         "longest wait, else the first other rule."),
    talk: str | None = typer.Option(None, "--talk", help="Talk of the timeline (Figure 3); default: the talk with "
                                    "the largest |η| under --condition."),
    trace: list[Path] = typer.Option([], "--trace", help="Trace file(s) for the trace statistics (Table 11), "
                                     "instead of those run.json, the inputs or the manifest name; repeatable."),
):
    """Tables and figures of a run folder or of step-by-step tables, each with its signature.

    Writes report.md; report.html, self-contained (figures embedded, no
    network requests, readable on a phone); tables/ as CSV (full precision,
    one signature per row) and LaTeX (booktabs); figures/ as PNG and SVG.

    Step-by-step work (tables given by path, or a folder without run.json):
    each table is recognised by the kind in its Parquet metadata, or by its
    columns (CSV); file names do not matter. Required: a request manifest,
    the playback summary of its replay (`simulplay replay`: request release,
    measured service) and an η table from that summary (`simulplay eta`);
    A, F and the reference come from the η table's signature. Used when
    present: per-talk η (else rebuilt from the summary), contrasts, η tables
    of sensitivity replays, edge-silence, content, word-timing and player
    tables, traces. Two tables of one role that differ are refused (exit 2);
    identical copies (a Parquet table and its CSV) are fine. The report's
    Inputs table lists every file: kind, use, rows, signature fingerprint.

    Tables (times in seconds, the paper's shapes): playback per system and
    condition (equal-talk means of first playback, audio D, idle I, offset
    L; requests per talk); η with intervals and direction counts; per-talk
    δ and η with duration and idle parts; every rule side by side with the
    sensitivity replays; buffered-policy contrasts; trace statistics;
    requests and trigger shares per condition; edge-silence η per threshold,
    content diagnostics and player metrics when the inputs have them.

    Figures: per-talk η with mean and interval; the ready-audio queue change
    ΔQ(u) on 101 points of source progress u = t / S (mean and 25th-75th
    percentile band across talks, one panel per backend); one talk's
    playback timeline; request audio durations per condition.
    """
    from simulplay.analysis.report import build_report, write_report

    rep = build_report(inputs, condition=condition, talk=talk, traces=trace)
    files = write_report(rep, out)
    typer.echo(f"wrote {len(rep.tables)} tables and {len(rep.figures)} figures ({len(files)} files) to {out}; "
               f"open {out / 'report.html'}")


@app.command()
def serve(
    backend: str = typer.Option("piper", "--backend", help="Request backend to serve: piper[:…], "
                                "xtts:model_dir=PATH[,…] (every setting is a parameter)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on."),
    port: int = typer.Option(8000, "--port", min=0, max=65535, help="Port (0: any free port, printed)."),
    model: str | None = typer.Option(None, "--model", help="Model id clients must send "
                                     "(default: the backend's label, e.g. piper:en_US-joe-medium)."),
    api_key_env: str | None = typer.Option(None, "--api-key-env", help="Name of an environment variable "
                                           "holding the API key clients must send (Authorization: Bearer)."),
    quiet: bool = typer.Option(False, "--quiet", help="No request log on stderr."),
):
    """Serve a TTS backend as an OpenAI-compatible speech API (POST /v1/audio/speech).

    The backend loads and warms up before the server listens. Requests are synthesized one
    at a time; each chunk the backend yields is sent as it is produced (chunked transfer):
    response_format pcm (16-bit little-endian mono; the rate in the X-Sample-Rate header)
    or wav. GET /v1/simulplay/identity returns the backend identity that the http client
    backend records. Synthesize against it with
    --backend http:base_url=http://HOST:PORT/v1,model=MODEL. Stop with Ctrl-C.
    """
    from simulplay.backends import parse_backend
    from simulplay.backends.server import log_stderr, make_server

    server = make_server(parse_backend(backend).create(), host, port, model=model, api_key_env=api_key_env,
                         log=None if quiet else log_stderr)
    typer.echo(f"serving model '{server.model}' (voice '{server.voice}') at {server.url}", nl=True)
    sys.stdout.flush()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        server.backend.close()


@app.command()
def blocks(
    trace: list[Path] = typer.Argument(..., help="Trace files (.parquet, .csv or .jsonl)."),
    backend: str = typer.Option(..., "--backend", help="Session backend: cosyvoice:checkout=PATH,model_dir=PATH,"
                                "prompt_wav=PATH,prompt_text=TEXT[,seed=5242,speed=1,text_frontend=false,fp16=false]."),
    out: Path = typer.Option(..., "--out", help="Session summary, one row per (block, condition). " + OUT_HELP),
    compare: Path = typer.Option(..., "--compare", help="Paired comparison, one row per (system, condition). "
                                 + OUT_HELP),
    rule: list[str] = typer.Option(["immediate", "timer:w=4"], "--rule", help="Feed conditions, repeatable "
                                   "(default: immediate and timer:w=4)."),
    reference: str = typer.Option("immediate", "--reference", help="Reference feed condition."),
    min_words: int = typer.Option(64, "--min-words", min=1, help="Fewest whitespace words in a block."),
    max_words: int = typer.Option(151, "--max-words", min=1, help="Most whitespace words in a block."),
    seed: int = typer.Option(20261007, "--seed", min=0, help="Block selection seed (0 is a seed)."),
    store: Path | None = typer.Option(None, "--store", help="Also keep each session's audio (FLAC) here."),
    parts: Path | None = typer.Option(None, "--parts", help="Per-chunk arrival table. " + OUT_HELP),
    feeds: Path | None = typer.Option(None, "--feeds", help="Per-feed table (when each text entered). " + OUT_HELP),
    max_wall_s: float = typer.Option(180.0, "--max-wall-s", help="Stop a session after this many seconds "
                                     "(recorded as a failure)."),
    max_audio_s: float = typer.Option(240.0, "--max-audio-s", help="Stop a session after this much audio "
                                      "(seconds; recorded as a failure)."),
    draws: int = typer.Option(10_000, "--draws", min=1, help="Paired source-bootstrap draws."),
    boot_seed: int = typer.Option(1032026, "--boot-seed", min=0, help="Bootstrap seed (0 is a seed)."),
    quantile_method: str = typer.Option("linear", "--quantile-method", help="NumPy quantile method."),
    confidence: float = typer.Option(0.95, "--confidence", help="Interval coverage, in (0, 1)."),
    allow_incomplete: bool = typer.Option(False, "--allow-incomplete",
                                          help="Exclude blocks with a failed session and count them."),
):
    """Continuing-session block protocol (the paper's Appendix F) for a session backend.

    One block per stream: consecutive updates whose word count lies in
    [--min-words, --max-words], drawn with --seed. Each block runs once per feed
    condition in a fresh session (state kept across feeds, reset between sessions); the
    block's updates are grouped by the rule as a stream of their own (its last update
    releases pending text). Feeding runs in real time: time zero is the block's first
    update, every time in the tables is seconds from it, and each chunk's arrival is its
    readiness (feed waits, inference and the host loop included; loading, the voice
    prompt and the seed reset before the clock). Chunks play serially; B = C_last −
    a_last (seconds after the block's last original update). The comparison gives, per
    system, mean ΔB = B(condition) − B(reference) over blocks with a paired source
    bootstrap interval, blocks finishing later/earlier, pairs with identical samples, and
    the duration and idle parts of ΔB.
    """
    from simulplay.analysis import Bootstrap
    from simulplay.backends import parse_backend
    from simulplay.backends.store import AudioStore
    from simulplay.block_protocol import run_block_protocol
    from simulplay.console import print_table
    from simulplay.grouping import parse_rule
    from simulplay.tables import check_writable, write_table
    from simulplay.traces import read_traces, streams_from_frame

    for p in (out, compare, parts, feeds):
        if p:
            check_writable(p)
    try:
        boot = Bootstrap(draws=draws, seed=boot_seed, method=quantile_method, confidence=confidence)
    except ValueError as e:
        raise InputError.at("--seed/--draws/--quantile-method/--confidence", str(e),
                            accepted="seed ≥ 0, draws ≥ 1, a NumPy quantile method and 0 < confidence < 1") from e
    rules = [parse_rule(r) for r in rule]
    config = parse_backend(backend)
    streams = streams_from_frame(read_traces(trace))
    res = run_block_protocol(streams, config, rules, reference=reference, min_words=min_words, max_words=max_words,
                             seed=seed, boot=boot, store=AudioStore(store) if store else None, max_wall_s=max_wall_s,
                             max_audio_s=max_audio_s, allow_incomplete=allow_incomplete)
    write_table(res.summary, out, res.signature, kind="blocks", extra_meta={"identity": res.identity})
    write_table(res.comparison, compare, res.compare_signature, kind="blocks-compare", signature_column=True)
    if parts:
        write_table(res.parts, parts, res.signature, kind="blocks-parts")
    if feeds:
        write_table(res.feeds, feeds, res.signature, kind="blocks-feeds")
    print_table(res.comparison, res.compare_signature, title=f"ΔB = B(condition) − B({reference}), seconds")
    failed = int((res.summary["error"] != "").sum())
    if failed:
        print(f"simulplay: {failed} session(s) failed; see the summary's error column", file=sys.stderr)
        raise typer.Exit(1)


@app.command()
def asr(
    manifest: Path = typer.Argument(..., help="Request manifest (.parquet or .csv) from `simulplay synth`."),
    store: Path = typer.Option(..., "--store", help="The audio store the manifest was synthesized into."),
    language: str = typer.Option(..., "--language", help="ISO 639-1 code of the audio's language, e.g. en; "
                                 "set for every window, never detected."),
    out: Path = typer.Option(..., "--out", help="Transcripts table (.parquet), one row per output."),
    recognizer: str = typer.Option("whisper", "--recognizer", help="whisper (faster-whisper; default model: the "
                                   "bundled tiny.en, English only; whisper:model=PATH for a local CTranslate2 "
                                   "folder; settings device, compute_type, beam_size, cpu_threads, max_new_tokens) "
                                   "or qwen3-asr:model=PATH (local Qwen3-ASR weights; package qwen-asr)."),
    window_s: float = typer.Option(15.0, "--window-s", help="Recognition window in seconds of compact audio."),
    aligner: Path | None = typer.Option(None, "--aligner", help="Local Qwen3-ForcedAligner weights: word times "
                                        "from forced alignment of each window's transcript instead of the "
                                        "recognizer's timestamps."),
    quiet: bool = typer.Option(False, "--quiet", help="No progress bar."),
):
    """Transcribe every output's compact waveform (its requests' audio concatenated in
    seq order, no idle) in consecutive windows, with no intended text as a prompt.

    A window whose decode reaches the recognizer's decoding capacity is split into
    halves, then quarters (each half on its own); a quarter that still reaches it, or a
    decode that fails, is recorded as a failed window and its output is incomplete
    (content scoring refuses it unless allowed). Word times are seconds of compact audio
    (the window's offset added). Columns: the output keys, intended, recognized,
    audio_s, n_windows, n_pieces, n_failed_windows, complete, error, and list columns
    request_*, piece_* (window, level 0/1/2, start/end s, tokens, text, error) and
    word_* (text, start/end s, probability, piece). The recognizer's identity (package
    version, model folder hash, compute type, beam size), the language and the window
    rule are in every signature. Exit code 1 when a window failed.
    """
    from simulplay.analysis.asr import parse_recognizer
    from simulplay.analysis.diagnostics import forced_aligner, recognize, window_rule, write_transcripts
    from simulplay.backends.store import AudioStore
    from simulplay.sim import read_manifest
    from simulplay.tables import check_writable

    check_writable(out, (".parquet",))
    config = parse_recognizer(recognizer)
    rule = window_rule(window_s)
    align = forced_aligner(aligner)
    audio_store = AudioStore(store, create=False)
    df, meta = read_manifest(manifest)
    res = recognize(df, meta.get("signature"), audio_store, config, language=language, rule=rule, aligner=align,
                    source=str(manifest), progress=not quiet)
    write_transcripts(res, out)
    table = res.table
    typer.echo(f"transcribed {len(table)} output(s), {int(table['n_windows'].sum())} window(s) "
               f"({int(table['n_pieces'].sum())} piece(s)) → {out}")
    if res.failed_outputs:
        print(f"simulplay: {len(res.failed_outputs)} output(s) incomplete (first: {res.failed_outputs[0]}); "
              "content scoring refuses them unless --allow-incomplete", file=sys.stderr)
        raise typer.Exit(1)


@app.command()
def content(
    transcripts: Path = typer.Argument(..., help="Transcripts table from `simulplay asr` (.parquet)."),
    out: Path = typer.Option(..., "--out", help="Per-condition table. " + OUT_HELP),
    pairs: list[str] = typer.Option([], "--pairs", help="FROM,TO: the change from one condition to another per "
                                    "backend and system, e.g. immediate,timer:w=4; repeatable."),
    pairs_out: Path | None = typer.Option(None, "--pairs-out", help="Pair table (default: OUT with .pairs "
                                          "before the suffix)."),
    per_talk: Path | None = typer.Option(None, "--per-talk", help="Also write per-output counts. " + OUT_HELP),
    allow_incomplete: bool = typer.Option(False, "--allow-incomplete", help="Exclude outputs with a failed "
                                          "window instead of refusing; the count is in every signature."),
):
    """Word edits of recognized against intended words (jiwer), under two normalizations:
    punct (lowercase, whitespace tokens, punctuation kept) and normalized (lowercase,
    Unicode letters, numbers and ASCII apostrophes kept, empty tokens dropped).

    Columns: [backend, realization,] system, condition, normalization, n_talks, then
    pooled counts intended_words (N = H + S + D), recognized_words, hits,
    substitutions, deletion_mismatches, insertions, and mean_error_rate_pct (equal-talk
    mean of (S + D + I) / N) and pooled_error_rate_pct. Deletions are recognition
    mismatches, not verified omissions. The pair table (Tables 13–14 shape) gives each
    count and the mean rate before and after, the change, and the talks with more
    deletions or a higher rate. Not a translation-quality score.
    """
    from simulplay.analysis.content import DELETION_NOTE, parse_pair
    from simulplay.analysis.diagnostics import content_from_file, write_content
    from simulplay.console import print_table
    from simulplay.tables import check_writable

    check_writable(out)
    target = (pairs_out or out.with_name(out.stem + ".pairs" + out.suffix)) if pairs else None
    for p in (target, per_talk):
        if p:
            check_writable(p)
    parsed = [parse_pair(p) for p in pairs]
    res = content_from_file(transcripts, pairs=parsed, allow_incomplete=allow_incomplete)
    write_content(res, out, pairs_out=target, per_talk=per_talk)
    shown = [c for c in res.table.columns if c not in ("recognized_words", "hits", "pooled_error_rate_pct")]
    print_table(res.table[shown], res.table_signatures, title="Recognized vs intended words")
    if len(res.pairs):
        cols = [c for c in res.pairs.columns if not c.startswith(("hits", "intended"))]
        print_table(res.pairs[cols], res.pair_signatures, title="Condition pairs (from → to)")
    typer.echo(f"deletions are {DELETION_NOTE}")
    if res.excluded:
        typer.echo(f"excluded {len(res.excluded)} incomplete output(s)")


@app.command()
def wordtiming(
    transcripts: Path = typer.Argument(..., help="Transcripts table from `simulplay asr` (.parquet)."),
    manifest: Path = typer.Option(..., "--manifest", help="The manifest the transcripts were made from."),
    trace: list[Path] = typer.Option(..., "--trace", help="The trace file(s) the manifest was synthesized from "
                                     "(word availability: the manifest keeps no update times); repeatable."),
    reference: str = typer.Option(..., "--reference", help="Reference condition, e.g. immediate."),
    out: Path = typer.Option(..., "--out", help="Table 17 shape, one row per other condition. " + OUT_HELP),
    words: Path | None = typer.Option(None, "--words", help="Also write one row per intended word and output. "
                                      + OUT_HELP),
    per_talk: Path | None = typer.Option(None, "--per-talk", help="Also write per-talk quantiles. " + OUT_HELP),
    draws: int = typer.Option(10_000, "--draws", min=1, help="Paired talk-bootstrap draws."),
    seed: int = typer.Option(1032026, "--seed", min=0, help="Bootstrap seed (0 is a seed)."),
    quantile_method: str = typer.Option("linear", "--quantile-method",
                                        help="NumPy quantile method (within-talk quantiles and interval ends)."),
    confidence: float = typer.Option(0.95, "--confidence", help="Interval coverage, in (0, 1)."),
    allow_incomplete: bool = typer.Option(False, "--allow-incomplete", help="Exclude incomplete transcripts "
                                          "(and their talks) instead of refusing; counted in every signature."),
):
    """Added delay of recognizable intended words: playback end minus availability (s).

    Availability: the latest time_s of the word's characters in the trace. A word counts
    only when every optimal unit-cost edit alignment of intended and recognized units
    (lowercase letters, numbers, apostrophes) matches it to the same recognized word
    with a valid time (finite, start < end, inside its window piece); otherwise it is
    unknown, never zero. Its end u in compact audio maps to playback p_j + (u − q_j) in
    the part j holding it (request release, measured service; an end at a join belongs
    to the earlier part). Per talk, on the words accepted in every condition, the change
    of the median and 90th percentile from the reference; columns: condition, reference,
    n_talks, n_common_words, mean_coverage_pct, delta_median_s, median_ci_low_s,
    median_ci_high_s, delta_p90_s, p90_ci_low_s, p90_ci_high_s, n_lower_median (talks,
    not words). Equal-talk means; paired talk bootstrap. Recognizer and timestamp error
    are not in the intervals.
    """
    from simulplay.analysis import Bootstrap
    from simulplay.analysis.diagnostics import timing_from_files, write_timing
    from simulplay.console import print_table
    from simulplay.tables import check_writable

    for p in (out, words, per_talk):
        if p:
            check_writable(p)
    try:
        boot = Bootstrap(draws=draws, seed=seed, method=quantile_method, confidence=confidence)
    except ValueError as e:
        raise InputError.at("--seed/--draws/--quantile-method/--confidence", str(e),
                            accepted="seed ≥ 0, draws ≥ 1, a NumPy quantile method and 0 < confidence < 1") from e
    res = timing_from_files(transcripts, manifest, trace, reference=reference, boot=boot,
                            allow_incomplete=allow_incomplete)
    write_timing(res, out, words=words, per_talk=per_talk)
    print_table(res.table, res.table_signatures, title=f"Added delay on the common word subset vs {reference}")


def _print_diagnostics(diag) -> None:
    from simulplay.analysis.content import DELETION_NOTE
    from simulplay.console import print_table

    table = diag.content.table
    shown = [c for c in table.columns if c not in ("recognized_words", "hits", "pooled_error_rate_pct")]
    print_table(table[shown], diag.content.table_signatures, title=f"Recognized vs intended words "
                f"(deletions are {DELETION_NOTE})")
    if diag.timing is not None:
        print_table(diag.timing.table, diag.timing.table_signatures, title="Added delay on the common word subset")


def _print_noise(check, one_realization_hint: str) -> None:
    """Under the η table: how much η moves between realizations (the synthesis noise floor)."""
    from simulplay.console import compact_signatures, print_table

    if check is None or check.spread.empty:
        if one_realization_hint:
            typer.echo(one_realization_hint)
        return
    replays = check.spread["replay"].tolist()
    shown = [s for r in dict.fromkeys(replays)  # one signature line per replay, rules marked (per row)
             for s in compact_signatures([x for x, y in zip(check.spread_signatures, replays) if y == r])]
    print_table(check.spread, shown, title="η across realizations (synthesis noise): "
                "eta_range_s is how much the realizations disagree, in seconds")
    print_table(check.durations, check.duration_signatures, title="Same text, another realization: durations")
    for note in check.notes:
        typer.echo(f"note: {note}")


@app.command()
def run(
    experiment: Path = typer.Argument(..., help="EXPERIMENT.toml (see the README for its keys)."),
    allow_incomplete: bool = typer.Option(False, "--allow-incomplete",
                                          help="Exclude outputs with failed requests and count them."),
    quiet: bool = typer.Option(False, "--quiet", help="No progress bar."),
):
    """Run an experiment: synthesize (resumable) → replay → η, plus the sensitivity
    replays it lists, writing every table with its signature into its output folder.

    With realizations = N ≥ 2 it also prints and writes (eta_spread.csv/.md) the spread of
    η per rule across the realizations — max − min and standard deviation, seconds, per
    replay — and how far the same request's duration differs between realizations
    (duration_noise.csv). With Piper's paper settings a fresh realization draws new
    durations; under piper:durations=fixed and service=zero the spread is exactly 0."""
    from simulplay.experiment import load_experiment
    from simulplay.pipeline import run_experiment

    exp = load_experiment(experiment)
    _finish_run(run_experiment(exp, allow_incomplete=allow_incomplete, progress=not quiet), exp)


def _finish_run(res, exp, one_realization_hint: str = "") -> None:
    from simulplay.console import print_table

    st = res.synth.stats
    typer.echo(f"{len(res.synth.manifest)} requests: synthesized {st.synthesized}, already in store {st.skipped}, "
               f"failed {st.failed} ({res.timings['synthesis_s']:.1f} s); analysis {res.timings['analysis_s']:.1f} s")
    _print_parallel_summary(st, exp.executor, False)
    print_table(res.eta.table, res.eta.table_signatures, title=f"η: {exp.a} vs {exp.f}, reference {exp.reference}")
    _print_noise(getattr(res, "noise", None), one_realization_hint)
    if len(res.eta.contrasts):
        print_table(res.eta.contrasts, res.eta.contrast_signatures, title="Buffered-policy contrasts δ(P1) − δ(P2)")
    for name, (_, eta_v) in res.variants.items():
        print_table(eta_v.table[["condition", "eta_s", "ci_low_s", "ci_high_s"]], eta_v.table_signatures,
                    title=f"sensitivity replay {name}")
    if res.edges is not None:
        print_table(res.edges.eta.table[["threshold", "condition", "eta_s", "ci_low_s", "ci_high_s"]],
                    res.edges.eta.table_signatures, title="edge-silence replay (η per VAD threshold)")
    if getattr(res, "content", None) is not None:
        _print_diagnostics(res.content)
    typer.echo(f"outputs in {exp.out.resolve()} (audio store {exp.store.resolve()})")
    typer.echo(f"report: {(exp.out / 'report' / 'report.html').resolve()}")


@app.command()
def demo(
    out_dir: Path = typer.Option(Path("simulplay-demo"), "--out-dir", help="Folder for the demo's store and outputs."),
    realizations: int = typer.Option(1, "--realizations", min=1, help="Independent synthesis realizations; with 2 "
                                     "or more the demo prints how much their η disagree under the η table."),
    piper: str = typer.Option("", "--piper", help="More Piper settings, e.g. durations=fixed (noise_w_scale=0: the "
                              "same durations every run), deterministic (both noises 0: the same samples), "
                              "intra_op_threads=2."),
    quiet: bool = typer.Option(False, "--quiet", help="No progress bar."),
):
    """The embedded demo: the bundled sample traces (3 talks, translators `eager` and
    `batched`) synthesized with Piper's en_US-joe-medium voice on the CPU under immediate,
    timer:w=2, timer:w=4, punct and words; replayed (also with chunk release, zero
    service and edge silence removed at VAD thresholds 0.3/0.5/0.7); η with intervals
    printed and a report written. A second run reuses the store. onnxruntime uses
    min(4, CPU cores) intra-op threads here.

    Piper draws fresh noise in every run (onnxruntime seeds it once per process), so η
    moves from run to run: noise_w_scale (0.8) draws each phoneme's duration, noise_scale
    (0.667) the waveform's fine detail. Measured on the demo's 757 distinct requests in two
    fresh runs: paper settings, 80/757 keep their sample count, durations differ by median
    35 ms, p95 139 ms, up to 0.46 s; durations=fixed, all keep their sample counts and no
    waveform repeats; deterministic, every sample repeats. With --piper durations=fixed two
    demo runs write byte-identical zero-service η tables (eta.service-zero.csv)."""
    import dataclasses
    import os
    from importlib.resources import files

    from simulplay.experiment import load_experiment
    from simulplay.pipeline import run_experiment

    exp = load_experiment(Path(str(files("simulplay").joinpath("data/demo.toml"))))
    threads = min(4, os.cpu_count() or 1)
    out = out_dir.resolve()
    settings = ",".join(filter(None, ["" if "intra_op_threads=" in piper else f"intra_op_threads={threads}", piper]))
    exp = dataclasses.replace(exp, backend=f"piper:{settings}", out=out, store=out / "store", realizations=realizations)
    typer.echo(f"demo folder: {out}")
    _finish_run(run_experiment(exp, progress=not quiet), exp, "η of one realization; `simulplay demo --realizations 2` "
                "shows how much two realizations disagree (Piper's noise floor)")


def main() -> None:
    """Console entry point: one-line errors and exit code 2 for bad input."""
    try:
        rv = app(standalone_mode=False)
    except Abort:
        print("simulplay: aborted", file=sys.stderr)
        sys.exit(130)
    except TyperException as e:  # usage errors: unknown flag, bad value, missing argument
        ctx = getattr(e, "ctx", None)
        if type(e).__name__ == "NoArgsIsHelpError":  # typer has printed the help
            sys.exit(0)
        name = ctx.command_path if ctx is not None else "simulplay"
        message = " ".join(e.format_message().split())
        print(f"{name}: error: {message} (see '{name} --help')", file=sys.stderr)
        sys.exit(2)
    except SimulplayError as e:
        for line in str(e).splitlines():
            print(f"simulplay: error: {line}", file=sys.stderr)
        sys.exit(2)
    sys.exit(rv if isinstance(rv, int) else 0)
