"""``render``: what the listener hears, as audio files on the source clock."""

from __future__ import annotations

from pathlib import Path

import typer

from simulplay.cli.options import allow_incomplete_option, quiet_option


def render(
    manifest: Path = typer.Argument(..., help="Synthesized request manifest (from `simulplay synth`; needs "
                                    "audio_key, sample_rate, n_samples)."),
    store: Path = typer.Option(..., "--store", help="The audio store the manifest was synthesized into."),
    out: Path = typer.Option(..., "--out", help="Folder for the files and render.parquet/.csv (new, or empty; "
                             "written in full or not at all)."),
    talk: list[str] = typer.Option([], "--talk", help="Render only this talk; repeatable (default: every talk)."),
    condition: list[str] = typer.Option([], "--condition", help="Render only this condition (a RULE string or "
                                        "the manifest's label); repeatable (default: every condition)."),
    release: str = typer.Option("request", "--release",
                                help="request: a part is a whole request, ready when it is done (primary); "
                                "chunk: a part is a chunk, ready at its recorded time, its samples cut by the "
                                "chunk table's n_samples (needs --chunks)."),
    service: str = typer.Option("measured", "--service", help="measured, zero, or scale=F (service time × F)."),
    chunks: Path | None = typer.Option(None, "--chunks", help="Chunk table for --release chunk "
                                       "(default: MANIFEST's sibling *.chunks.parquet)."),
    source_audio: Path | None = typer.Option(None, "--source-audio", help="Folder of the talks' source audio, "
                                             "<talk_id>.wav or .flac: write stereo, the source on the left from "
                                             "source time 0, the translation on the right (source resampled "
                                             "with soxr HQ to the translation's rate; its duration must be "
                                             "within 1 s of source_s)."),
    fmt: str = typer.Option("flac", "--format", help="flac or wav (16-bit PCM either way)."),
    allow_incomplete: bool = allow_incomplete_option("Leave out outputs with failed requests instead of refusing; "
                                                     "the count is recorded in every signature."),
    quiet: bool = quiet_option(),
):
    """Write one audio file per output: what the listener hears from source start.

    Silence until the first part plays and during every idle gap; each part's stored
    samples from its playback start in the replay (the same clock as `simulplay replay`
    with these --release and --service). Placement on the sample grid of the output's
    rate: a part that starts as the previous one ends follows it without a gap; any other
    part starts at the sample nearest its playback start (floor(p × rate + 1/2), p in
    seconds). So the file lasts end_s × rate samples (to the nearest sample) and its sound
    regions are the replay's playback intervals to the sample. Mono at the output's rate,
    or stereo with --source-audio (then as long as the longer channel).

    Prints and saves (OUT/render.parquet and render.csv, with signatures) one row per file:
    file, channels, sample_rate (Hz), n_samples (frames), duration_s, n_parts (parts
    played), first_play_s, audio_s (translation sound), idle_s (its silence before the last
    part ends, the initial wait included), end_s, source_s, source_audio, source_audio_s.
    Seconds from sample counts, counted from source start. An output without any audio
    gets no file (file empty). File names are made of talk, system and condition
    (characters outside A-Z a-z 0-9 . _ - replaced, with a short hash added).

    The manifest and the store are only read (a read-only archive is fine); only --out is
    written: its parent folder is checked with a test file before any work (exit code 2
    when it cannot be written), and a full disk while writing leaves no folder behind
    (exit code 1).
    """
    from simulplay.cli.console import print_table, progress_bar
    from simulplay.core.paths import check_new_folder
    from simulplay.formats.service_spec import with_tables
    from simulplay.manifest import read_chunks, read_manifest
    from simulplay.sim.variants import parse_release, parse_service
    from simulplay.store.store import AudioStore
    from simulplay.workflows.render import check_format, render_outputs

    check_new_folder(out)
    rel, model, fmt = parse_release(release), with_tables(service, parse_service), check_format(fmt)
    loader = AudioStore.open(store, create=False).load_audio
    df, meta = read_manifest(manifest)
    chunk_df = read_chunks(manifest, chunks) if rel.needs_chunks else None
    res = render_outputs(df, loader, out, talks=talk, conditions=condition, release=rel, service=model,
                         chunks=chunk_df, source_audio=source_audio, fmt=fmt, allow_incomplete=allow_incomplete,
                         upstream=meta.get("signature"), source=str(manifest), progress=progress_bar(quiet))
    shown = ["file", "channels", "sample_rate", "duration_s", "n_parts", "audio_s", "idle_s", "end_s"]
    print_table(res.table[shown], res.signatures, title=f"rendered audio (seconds) in {out}")
    note = f" ({len(res.excluded)} incomplete output(s) left out)" if res.excluded else ""
    typer.echo(f"wrote {int((res.table['file'] != '').sum())} file(s) and render.parquet/.csv to {out}{note}")
