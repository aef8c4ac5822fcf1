"""``validate``, ``group``, ``import-simuleval`` and ``import-simulstream``: traces in, checked,
grouped into requests, or imported from translator logs."""

from __future__ import annotations

import warnings
from pathlib import Path

import typer

from simulplay.cli.options import (
    check_outputs,
    commit_option,
    events_option,
    out_option,
    table_option,
    talks_from_option,
    talks_option,
)


def validate(
    traces: list[Path] = typer.Argument(..., help="Trace files (.parquet, .csv or .jsonl)."),
    out: Path | None = table_option("--out", "Also save the statistics table."),
):
    """Check trace files and print per-stream update statistics.

    Columns: updates, whitespace words, median and 90th-percentile words per update,
    % of updates with ≤ 2 words, % ending in terminal punctuation (the `punct` rule's
    sentence end: . ? ! … 。 ？ ！ ؟ । then any closing quotes/brackets and spaces), and
    updates available after the source end (valid, counted). A warning line names the
    streams with most of their updates after the source end (milliseconds given as seconds,
    or a computation-aware clock far behind).
    """
    from simulplay.cli.console import print_table
    from simulplay.core.errors import SimulplayWarning
    from simulplay.core.signature import base_signature
    from simulplay.core.tables import write_table
    from simulplay.traces import read_trace, streams_from_frame, trace_stats
    from simulplay.traces.validate import late_streams

    check_outputs(out)
    frames = [read_trace(p) for p in traces]
    stats = trace_stats(frames)
    if late := late_streams(stats):
        warnings.warn(late, SimulplayWarning, stacklevel=1)
    sig = base_signature(table="trace-stats")
    print_table(stats, sig, title=f"{len(stats)} stream(s) valid")
    echo_events([s for f in frames for s in streams_from_frame(f, revising=True)])
    if out:
        write_table(stats, out, sig, kind="trace-stats")


def spoken(
    traces: list[Path] = typer.Argument(..., help="Trace files (.parquet, .csv or .jsonl), revising or not."),
    commit: list[str] = typer.Option(..., "--commit", help="Commit policy, repeatable: eager, stable[:k=2] "
                                     "(unit=char: by character), hold[:t=1] (seconds), mask[:k=3], final (a "
                                     "non-causal oracle); or a family in the grid syntax of sweep: "
                                     "stable:k=1..4, hold:t=0.25..2:0.25, mask:k=0..6."),
    out: Path | None = table_option("--out", "Also save the table."),
):
    """What a listener hears of each stream under each commit policy (no synthesis).

    Columns: words of the final hypothesis and words spoken, spoken-then-retracted words
    and their characters, WER and CER (%) of the spoken text against the final hypothesis
    (content scoring's normalized words), commit lag per word (p50, p90, max; seconds from
    the update that last wrote the word to its commit) and the stream's normalized erasure.
    """
    from simulplay.analysis.spoken import spoken_table
    from simulplay.cli.console import print_table
    from simulplay.core.tables import write_table
    from simulplay.grouping import unique_commits
    from simulplay.grouping.grid import parse_commit_grids
    from simulplay.traces import read_traces, streams_from_frame

    check_outputs(out)
    policies = unique_commits([p for g in parse_commit_grids(commit) for p in g.rules()])
    table, sig = spoken_table(streams_from_frame(read_traces(traces), revising=True), policies)
    print_table(table, sig, title=f"{len(table)} output(s): what the listener hears")
    if out:
        write_table(table, out, sig, kind="spoken")


def group(
    trace: list[Path] = typer.Argument(..., help="Trace files (.parquet, .csv or .jsonl); a (talk_id, system) "
                                       "stream may appear in only one of them."),
    rule: list[str] = typer.Option(..., "--rule", help="Grouping rule, repeatable: immediate, "
                                   "timer[:w=SECONDS] (default w=4), punct[:cap=S,min_words=N] (defaults 2, 3), "
                                   "words[:n=N,cap=S] (defaults 8, 2). Seconds. unit=char on punct/words counts "
                                   "letters and digits instead of whitespace words (Chinese, Japanese, Thai)."),
    max_chars: int | None = typer.Option(None, "--max-chars", min=1,
                                            help="Input-limit splitter: at most N characters per request."),
    commit: list[str] | None = commit_option(),
    out: Path = out_option("Requests table."),
    talks: list[str] = talks_option(),
    talks_from: Path | None = talks_from_option(),
    events: str = events_option(),
):
    """Group traces' updates into synthesis requests (one row per request): the plan
    that `simulplay synth --requests` synthesizes, to inspect or edit before synthesis.

    Columns: talk_id, system, condition (canonical rule), seq (from 0 per output),
    dispatch_s (seconds from source start), trigger (immediate/timer/punct/words/eos),
    n_updates (size of the group the request came from), text, glue (continues the
    previous request without a space), group, source_s (seconds).
    """
    from simulplay.core.tables import check_distinct, write_table
    from simulplay.grouping import (
        Splitter,
        commit_rules,
        parse_rule,
        request_signatures,
        requests_frame,
        revising_allowed,
        unique_rules,
    )
    from simulplay.traces import read_traces, streams_from_frame
    from simulplay.traces.select import prepare_streams, talk_ids

    check_outputs(out)
    check_distinct({"--out": out}, trace)
    rules = commit_rules(unique_rules([parse_rule(r) for r in rule]), commit)
    splitter = Splitter(max_chars)
    frame = read_traces(trace)
    streams, fields = prepare_streams(streams_from_frame(frame, revising=revising_allowed(commit, rules)),
                                      talks=talk_ids(talks, talks_from), events=events)
    df = requests_frame(streams, rules, splitter)
    write_table(df, out, [{**s, **fields} for s in request_signatures(df, splitter)], kind="requests")
    typer.echo(f"wrote {len(df)} requests for {len(rules)} rule(s) to {out}")


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
    talks: list[str] = talks_option(),
    talks_from: Path | None = talks_from_option(),
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
    from simulplay.traces.importers import import_simuleval, import_simuleval_segmented
    from simulplay.traces.readers import TRACE_SUFFIXES
    from simulplay.traces.select import talk_ids

    _check_segmentation_flags(segmentation, wavs=wavs, match=match, as_manifest=as_manifest)
    check_outputs(out, allowed=(".parquet", ".csv") if as_manifest else TRACE_SUFFIXES)
    if segmentation is not None:
        res = import_simuleval_segmented(log, segmentation, system=system, clock=clock, unit=unit, wavs=wavs,
                                         match=match or "auto")
    else:
        res = import_simuleval(log, system=system, clock=clock, unit=unit, as_manifest=as_manifest)
    _write_import(res, log, out, talk_ids(talks, talks_from))


def _check_segmentation_flags(segmentation: Path | None, *, wavs: Path | None, match: str | None,
                              as_manifest: bool) -> None:
    """--wavs and --match need --segmentation; --as-manifest excludes it."""
    from simulplay.core.errors import InputError

    for flag, value in (("--wavs", wavs), ("--match", match)):
        if value is not None and segmentation is None:
            raise InputError.at(flag, "is used only with --segmentation", accepted="--segmentation SEGMENTS.yaml")
    if segmentation is not None and as_manifest:
        raise InputError.at("--as-manifest", "cannot be combined with --segmentation",
                            accepted="a speech-to-text short-form log (segmented speech output is not supported)")


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
    retractions: str = typer.Option("keep", "--retractions",
                                    help="keep: a revising trace (each packet's deleted_tokens become the update's "
                                    "retract, in characters; group, synth and run then need --commit); "
                                    "refuse: stop at the first packet with deleted_tokens (re-translation); "
                                    "final: keep only text never deleted later, available when last emitted "
                                    "(an offline upper bound, marked in the signature)."),
    unit: str = typer.Option("spm", "--unit",
                             help="Token kind: spm (SentencePiece; '▁' starts a word, other pieces attach), word "
                             "(joined with spaces) or char (joined without)."),
    talks: list[str] = talks_option(),
    talks_from: Path | None = talks_from_option(),
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
    from simulplay.traces.importers import import_simulstream
    from simulplay.traces.readers import TRACE_SUFFIXES
    from simulplay.traces.select import talk_ids

    check_outputs(out, allowed=TRACE_SUFFIXES)
    res = import_simulstream(log, system=system, clock=clock, wavs=wavs, retractions=retractions, unit=unit)
    _write_import(res, log, out, talk_ids(talks, talks_from))


def _write_import(res, log: Path, out: Path, talks: tuple[str, ...] = ()) -> None:
    """The imported trace (or manifest) of ``talks`` (all when empty) with its signature, and
    the per-stream statistics."""
    import dataclasses

    from simulplay.cli.console import print_table
    from simulplay.traces.importers import write_import
    from simulplay.traces.select import pick_rows

    if talks:
        res = dataclasses.replace(res, frame=pick_rows(res.frame, talks), stats=pick_rows(res.stats, talks))

    write_import(res, out)
    print_table(res.stats, res.signature, title=f"{len(res.stats)} stream(s) imported from {log}")
    if res.kind == "trace":
        from simulplay.traces import streams_from_frame

        echo_events(streams_from_frame(res.frame, revising=True))
    typer.echo(f"wrote {len(res.frame)} {'requests' if res.kind == 'manifest' else 'updates'} to {out}")


def echo_events(streams) -> None:
    """One line counting the streams' non-speech event tags, when there are any."""
    from simulplay.traces.events import event_counts

    counts = event_counts(streams)
    if counts.n_tags:
        typer.echo(f"events: {counts.line()}; group, synth, run and live speak them unless given --events drop")
