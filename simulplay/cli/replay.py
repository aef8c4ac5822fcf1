"""``replay``: request clocks through a serial synthesizer and serial playback — the
playback summary and, on request, the parts table."""

from __future__ import annotations

from pathlib import Path

import typer

from simulplay.cli.options import (
    LOAD_CURVE_HELP,
    SERVERS_HELP,
    SERVICE_HELP,
    SHARE_HELP,
    SLOWDOWN_HELP,
    allow_incomplete_option,
    check_outputs,
    chunks_option,
    out_option,
    release_option,
    silent_parts_option,
    table_option,
    talks_from_option,
    talks_option,
)


def replay(
    manifest: Path = typer.Argument(..., help="Request manifest (.parquet or .csv)."),
    out: Path = out_option("Playback summary."),
    release: str = release_option("request: audio ready when the whole request is done (primary); "
                                  "chunk: each chunk ready at its recorded time (needs --chunks)."),
    service: str = typer.Option("measured", "--service", help=SERVICE_HELP),
    parts: Path | None = table_option("--parts", "Also write per-part playback."),
    chunks: Path | None = chunks_option(),
    silent_parts: str = silent_parts_option(),
    allow_incomplete: bool = allow_incomplete_option(),
    servers: int | None = typer.Option(None, "--servers", help=SERVERS_HELP),
    share: str = typer.Option("panel", "--share", help=SHARE_HELP),
    discipline: str = typer.Option("fifo", "--discipline", help="Queue discipline of --servers: fifo (eligible "
                                   "requests start in order of eligibility; ties: talk, system, condition, seq)."),
    load_curve: Path | None = typer.Option(None, "--load-curve", help=LOAD_CURVE_HELP),
    slowdown: str | None = typer.Option(None, "--slowdown", help=SLOWDOWN_HELP),
    talks: list[str] = talks_option(),
    talks_from: Path | None = talks_from_option(),
):
    """Replay request clocks through a serial synthesizer and serial playback.

    Summary columns (one row per output): n_parts, first_play_s (first part's playback
    start: the first audible part's under --silent-parts skip), audio_s (D), idle_s (I,
    including the initial wait), end_s (C_m), offset_s (L = C_m − S), source_s (S),
    limiting_seq (the part k maximizing r_k + Σ_{j≥k} d_j). Parts with no audio occupy
    the synthesizer; by default they are not played (--silent-parts). Columns ending in
    _s are seconds; first_play_s and end_s count from source start. With --servers, the
    summary adds queue_s (the output's total wait for a worker) and the parts table
    queue_s (each request's wait; a chunk's is its request's).

    The manifest is only read (a read-only archive of a finished run is fine); only --out
    and --parts are written, their folders checked with a test file before any work (exit
    code 2 when one cannot be written; 1 when the disk fills while writing, leaving no
    partial file).
    """
    from simulplay.core.tables import check_distinct, write_table
    from simulplay.traces.select import talk_ids
    from simulplay.workflows.steps import replay_manifest, replay_settings

    check_outputs(out, parts)
    check_distinct({"--out": out, "--parts": parts}, [manifest])
    settings = replay_settings(release, service, silent_parts, servers=servers, share=share, discipline=discipline,
                               load_curve=load_curve, slowdown=slowdown)
    res = replay_manifest(manifest, settings, chunks=chunks, allow_incomplete=allow_incomplete,
                          talks=talk_ids(talks, talks_from))
    write_table(res.summary, out, res.signatures, kind="playback-summary")
    if parts:
        write_table(res.parts, parts, res.part_signatures(), kind="playback-parts")
    note = f" ({len(res.excluded)} incomplete output(s) excluded)" if res.excluded else ""
    typer.echo(f"replayed {len(res.summary)} output(s) to {out}{note}")
