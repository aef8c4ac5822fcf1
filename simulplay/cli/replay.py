"""``replay``, ``player`` and ``edges``: request clocks through serial playback — the
summary, streaming player metrics, and the edge-silence sweep."""

from __future__ import annotations

from pathlib import Path

import typer

from simulplay.cli.options import (
    SILENT_PARTS_HELP,
    allow_incomplete_option,
    bootstrap,
    check_outputs,
    chunks_option,
    confidence_option,
    draws_option,
    out_option,
    quantile_option,
    quiet_option,
    release_option,
    seed_option,
    silent_parts_option,
    table_option,
)
from simulplay.errors import InputError

SERVICE_HELP = ("measured, zero, scale=F (service time × F), or fit: a modelled clock, each request's service "
                "time predicted as b0 + b1·audio_s + b2·chars by a least-absolute-deviations fit over the replayed "
                "requests, one per backend and realization (coefficients in the signature's 'fit').")


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
):
    """Replay request clocks through a serial synthesizer and serial playback.

    Summary columns (one row per output): n_parts, first_play_s (first part's playback
    start: the first audible part's under --silent-parts skip), audio_s (D), idle_s (I,
    including the initial wait), end_s (C_m), offset_s (L = C_m − S), source_s (S),
    limiting_seq (the part k maximizing r_k + Σ_{j≥k} d_j). Parts with no audio occupy
    the synthesizer; by default they are not played (--silent-parts). Columns ending in
    _s are seconds; first_play_s and end_s count from source start.
    """
    from simulplay.sim import read_chunks, read_manifest
    from simulplay.sim import replay as run_replay
    from simulplay.sim.variants import parse_release, parse_service, parse_silent_parts
    from simulplay.tables import check_distinct, write_table

    check_outputs(out, parts)
    check_distinct({"--out": out, "--parts": parts}, [manifest])
    rel, model, silent = parse_release(release), parse_service(service), parse_silent_parts(silent_parts)
    df, meta = read_manifest(manifest)
    chunk_df = read_chunks(manifest, chunks) if rel.needs_chunks else None
    res = run_replay(df, service=model, release=rel, chunks=chunk_df, allow_incomplete=allow_incomplete,
                     upstream=meta.get("signature"), source=str(manifest), silent_parts=silent)
    write_table(res.summary, out, res.signatures, kind="playback-summary")
    if parts:
        write_table(res.parts, parts, res.part_signatures(), kind="playback-parts")
    note = f" ({len(res.excluded)} incomplete output(s) excluded)" if res.excluded else ""
    typer.echo(f"replayed {len(res.summary)} output(s) to {out}{note}")


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
    from simulplay.sim import read_chunks, read_manifest
    from simulplay.sim.player_table import player_config, player_metrics, store_loader
    from simulplay.sim.variants import parse_release, parse_service, parse_silent_parts
    from simulplay.tables import write_table

    check_outputs(out)
    config = player_config(frame_ms=frame_ms, min_stall_ms=min_stall_ms, startup_delay_ms=startup_delay_ms,
                           prebuffer_s=prebuffer_s)
    rel, model, silent = parse_release(release), parse_service(service), parse_silent_parts(silent_parts)
    load_audio = store_loader(store) if store else None
    df, meta = read_manifest(manifest)
    chunk_df = read_chunks(manifest, chunks) if rel.needs_chunks else None
    res = player_metrics(df, config=config, release=rel, service=model, chunks=chunk_df,
                         allow_incomplete=allow_incomplete, upstream=meta.get("signature"), source=str(manifest),
                         load_audio=load_audio, silent_parts=silent)
    write_table(res.table, out, res.signatures, kind="player")
    note = f" ({len(res.excluded)} incomplete output(s) excluded)" if res.excluded else ""
    typer.echo(f"wrote player metrics of {len(res.table) // len(config.prebuffers_s)} output(s) to {out}{note}")


def edges(
    manifest: Path = typer.Argument(..., help="Synthesized request manifest (from `simulplay synth`; needs "
                                    "audio_key, sample_rate, n_samples)."),
    store: Path = typer.Option(..., "--store", help="The audio store the manifest was synthesized into; speech "
                               "probabilities are cached in STORE/vad/<model id>/."),
    out: Path = out_option("Playback summary, one row per (threshold, output)."),
    thresholds: str = typer.Option("0.3,0.5,0.7", "--thresholds",
                                   help="Speech-probability thresholds in (0, 1], comma-separated."),
    guard_ms: float = typer.Option(100.0, "--guard-ms", help="Milliseconds kept before the first and after the "
                                   "last speech frame (≥ 0)."),
    eta_out: Path | None = table_option("--eta-out", "η per threshold (needs --a, --f, --reference)."),
    a: str | None = typer.Option(None, "--a", help="Translator A for --eta-out (δ = L(A) − L(F))."),
    f: str | None = typer.Option(None, "--f", help="Translator F for --eta-out."),
    reference: str | None = typer.Option(None, "--reference", help="Reference condition for --eta-out and "
                                         "--share-out."),
    share_out: Path | None = table_option("--share-out", "Share of the audio-duration reduction that is detected "
                                          "non-speech, per system, pair and threshold."),
    pair: list[str] = typer.Option([], "--pair", help="REF,COND for --share-out, repeatable (default: "
                                   "--reference against every other condition)."),
    vad_model: str = typer.Option("onnx", "--vad-model", help="Bundled Silero VAD file: onnx (silero_vad.onnx), "
                                  "sequence (its block-wise export, same probabilities, faster) or jit."),
    draws: int = draws_option(),
    seed: int = seed_option(),
    quantile_method: str = quantile_option(),
    confidence: float = confidence_option(),
    silent_parts: str = silent_parts_option(SILENT_PARTS_HELP + " A request trimmed to nothing is such a part."),
    allow_incomplete: bool = allow_incomplete_option("Exclude outputs with failed requests and count them."),
    quiet: bool = quiet_option(),
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
    from simulplay.backends.store import AudioStore
    from simulplay.cli.console import progress_bar
    from simulplay.sim import read_manifest
    from simulplay.sim.variants import parse_silent_parts
    from simulplay.vad import SileroVad
    from simulplay.workflows.edges import check_guard, parse_thresholds, run_edges, write_edges

    check_outputs(out, eta_out, share_out)
    levels, silent = parse_thresholds(thresholds), parse_silent_parts(silent_parts)
    check_guard(guard_ms)
    vad = SileroVad(vad_model)
    pairs = _edges_pairs(eta_out, share_out, a=a, f=f, reference=reference, pair=pair)
    boot = bootstrap(draws, seed, quantile_method, confidence)
    df, meta = read_manifest(manifest)
    res = run_edges(df, AudioStore.open(store, create=False), levels, guard_ms=guard_ms, vad=vad,
                    a=a if eta_out else None, f=f, reference=reference, boot=boot,
                    pairs=pairs if share_out else None, allow_incomplete=allow_incomplete,
                    upstream=meta.get("signature"), source=str(manifest), progress=progress_bar(quiet),
                    silent_parts=silent)
    write_edges(res, out, eta=eta_out, share=share_out)
    _print_edges(res, vad, out, title=f"η after edge trimming: {a} vs {f}, reference {reference}")


def _edges_pairs(eta_out: Path | None, share_out: Path | None, *, a: str | None, f: str | None,
                 reference: str | None, pair: list[str]) -> list[tuple[str, str]]:
    """The --pair conditions, parsed; --eta-out needs --a, --f and --reference, and --a,
    --f and --pair are used only with the table that needs them."""
    from simulplay.grouping import parse_pair

    if eta_out and not (a and f and reference):
        raise InputError.at("--eta-out", "needs --a, --f and --reference", accepted="the translators and the "
                            "reference condition, as for `simulplay eta`")
    pairs = [parse_pair(p, "--pair") for p in pair]
    for flag, given, needs in (("--a", a, eta_out), ("--f", f, eta_out), ("--pair", pairs, share_out)):
        if given and not needs:
            raise InputError.at(flag, f"is used only with {'--eta-out' if flag != '--pair' else '--share-out'}",
                                accepted="the table that uses it, or leave it out")
    if share_out and not pairs and not reference:
        raise InputError.at("--share-out", "needs --pair REF,COND or --reference", accepted="the conditions to pair")
    return pairs


def _print_edges(res, vad, out: Path, *, title: str) -> None:
    """What the VAD did, and the η and non-speech share tables that were computed."""
    from simulplay.cli.console import print_table

    er, st = res.result, res.result.stats
    typer.echo(f"silero-vad {vad.variant}: inferred {st.inferred} waveform(s) ({st.audio_s:.1f} s of audio in "
               f"{st.inference_s:.1f} s), {st.cached} from the cache; {len(er.summary)} row(s) → {out}")
    if res.eta is not None:
        print_table(res.eta.table, res.eta.table_signatures, title=title, notes=res.eta.notes)
    if res.share is not None:
        print_table(res.share, res.share_signatures, title="non-speech share of the audio-duration reduction")
    if er.excluded:
        typer.echo(f"excluded {len(er.excluded)} incomplete output(s)")
