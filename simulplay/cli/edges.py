"""``edges``: the edge-silence replay (leading and trailing non-speech trimmed at VAD thresholds)."""

from __future__ import annotations

from pathlib import Path

import typer

from simulplay.cli.options import (
    SILENT_PARTS_HELP,
    allow_incomplete_option,
    bootstrap,
    check_outputs,
    confidence_option,
    draws_option,
    out_option,
    preset_option,
    quantile_option,
    quiet_option,
    rng_option,
    seed_option,
    silent_parts_option,
    table_option,
    talk_order_option,
)
from simulplay.core.errors import InputError


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
    quantile_method: str | None = quantile_option(),
    confidence: float = confidence_option(),
    bootstrap_rng: str | None = rng_option(),
    preset: str | None = preset_option(),
    talk_order: str = talk_order_option(),
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
    from simulplay.cli.console import progress_bar
    from simulplay.durationmodel.replay_again import has_closed_loop, recorded_streams
    from simulplay.manifest import read_manifest
    from simulplay.sim.variants import parse_silent_parts
    from simulplay.store.store import AudioStore
    from simulplay.vad import SileroVad
    from simulplay.workflows.edges import check_guard, parse_thresholds, run_edges, write_edges

    check_outputs(out, eta_out, share_out)
    levels, silent = parse_thresholds(thresholds), parse_silent_parts(silent_parts)
    check_guard(guard_ms)
    vad = SileroVad(vad_model)
    pairs = _edges_pairs(eta_out, share_out, a=a, f=f, reference=reference, pair=pair)
    boot = bootstrap(draws, seed, quantile_method, confidence, rng=bootstrap_rng, preset=preset,
                     talk_order=talk_order)
    df, meta = read_manifest(manifest)
    res = run_edges(df, AudioStore.open(store, create=False), levels, guard_ms=guard_ms, vad=vad,
                    a=a if eta_out else None, f=f, reference=reference, boot=boot,
                    pairs=pairs if share_out else None, allow_incomplete=allow_incomplete,
                    upstream=meta.get("signature"), source=str(manifest), progress=progress_bar(quiet),
                    silent_parts=silent, streams=recorded_streams(meta.get("traces")) if has_closed_loop(df) else None)
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
