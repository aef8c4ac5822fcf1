"""``player``: streaming player metrics of each output's replayed timeline."""

from __future__ import annotations

from pathlib import Path

import typer

from simulplay.cli.options import (
    SERVICE_HELP,
    SILENT_PARTS_HELP,
    allow_incomplete_option,
    check_outputs,
    chunks_option,
    out_option,
    release_option,
    silent_parts_option,
)


def player(
    manifest: Path = typer.Argument(..., help="Request manifest (.parquet or .csv)."),
    out: Path = out_option("Player table, one row per output and pre-buffer."),
    release: str = release_option(),
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
    service: str = typer.Option("measured", "--service", help=SERVICE_HELP),
    chunks: Path | None = chunks_option(),
    store: Path | None = typer.Option(None, "--store", help="Audio store of `simulplay synth`: adds "
                                      "first_audible_s (needs audio_key, sample_rate, n_samples columns)."),
    silent_parts: str = silent_parts_option(SILENT_PARTS_HELP + " With hold, a silent part's readiness also "
                                            "delays later parts and the end of playback."),
    allow_incomplete: bool = allow_incomplete_option(),
):
    """Streaming player metrics of each output's replayed timeline (after Veeksha).

    Parts play in order; a part with no audio is skipped (--silent-parts hold: it holds
    the clock at its readiness); a part is usable once it and every earlier part are
    ready, and parts ready at the same instant are one arrival.
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
    from simulplay.analysis.player_table import player_config, player_metrics
    from simulplay.core.tables import write_table
    from simulplay.formats.service_spec import with_tables
    from simulplay.manifest import read_chunks, read_manifest
    from simulplay.sim.variants import parse_release, parse_service, parse_silent_parts
    from simulplay.store import AudioStore

    check_outputs(out)
    config = player_config(frame_ms=frame_ms, min_stall_ms=min_stall_ms, startup_delay_ms=startup_delay_ms,
                           prebuffer_s=prebuffer_s)
    rel, model, silent = parse_release(release), with_tables(service, parse_service), parse_silent_parts(silent_parts)
    load_audio = AudioStore.open(store, create=False).load_audio if store else None
    df, meta = read_manifest(manifest)
    chunk_df = read_chunks(manifest, chunks) if rel.needs_chunks else None
    res = player_metrics(df, config=config, release=rel, service=model, chunks=chunk_df,
                         allow_incomplete=allow_incomplete, upstream=meta.get("signature"), source=str(manifest),
                         load_audio=load_audio, silent_parts=silent)
    write_table(res.table, out, res.signatures, kind="player")
    note = f" ({len(res.excluded)} incomplete output(s) excluded)" if res.excluded else ""
    typer.echo(f"wrote player metrics of {len(res.table) // len(config.prebuffers_s)} output(s) to {out}{note}")
