"""``report``: the tables and figures of a run folder or of step-by-step tables."""

from __future__ import annotations

from pathlib import Path

import typer

from simulplay.cli.options import talks_from_option, talks_option


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
    store: Path | None = typer.Option(None, "--store", help="Audio store of the manifest, for the Listen section "
                                      "(default: a run folder's own store; step-by-step tables need it)."),
    listen_s: float = typer.Option(30.0, "--listen-s", min=0.0, help="Seconds from source start rendered into "
                                   "the Listen section's clips (0: no Listen section)."),
    talks: list[str] = talks_option("Only these talk ids (repeatable; commas separate several): η, per-talk and "
                                    "contrast tables recomputed over them, whole-run summary tables left out."),
    talks_from: Path | None = talks_from_option(),
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

    Tables (times in seconds, in the shapes of Truong & Le (2026)): playback per system and
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

    Listen (with the audio store): the timeline's outputs as the audience
    hears them, rendered as `simulplay render` does, the first --listen-s
    seconds from source start of each as audio/*.mp3 (mono, variable bit
    rate), played by the HTML page's audio elements.

    The inputs and the store are only read (they may be on a read-only file
    system); only --out is written. Exit code 2 when --out cannot be made or
    written (checked with a test file before any work), 1 when writing the
    report fails (a full disk: the report is written whole or not at all).
    """
    from simulplay.core.paths import check_out_folder

    check_out_folder(out, beside=True)  # before the report's imports: a refusal comes at once
    from simulplay.report import build_report, write_report
    from simulplay.traces.select import talk_ids

    rep = build_report(inputs, condition=condition, talk=talk, traces=trace, store=store, listen_s=listen_s,
                       talks=talk_ids(talks, talks_from))
    files = write_report(rep, out)
    clips = f", {len(rep.audio.clips)} audio clips" if rep.audio else ""
    typer.echo(f"wrote {len(rep.tables)} tables and {len(rep.figures)} figures{clips} ({len(files)} files) to {out}; "
               f"open {out / 'report.html'}")
