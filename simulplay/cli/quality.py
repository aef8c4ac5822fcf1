"""``quality``: how each output sounds (DNSMOS, speaker similarity, joins) and what grouping changes."""

from __future__ import annotations

from pathlib import Path

import typer

from simulplay.cli.options import allow_incomplete_option, draws_option, quiet_option, seed_option


def quality(
    manifest: Path = typer.Argument(..., help="Synthesized request manifest (from `simulplay synth`)."),
    store: Path = typer.Option(..., "--store", help="The audio store the manifest was synthesized into."),
    out: Path = typer.Option(..., "--out", help="Per-output table (.parquet, .csv or .md); the per-request and "
                             "interval tables go beside it as OUT.requests and OUT.intervals, with the joins metric "
                             "one row per join as OUT.joins (same suffix)."),
    metrics: str = typer.Option("dnsmos,similarity,joins", "--metrics", help="Comma-separated subset of "
                                "dnsmos, similarity, joins."),
    reference: str | None = typer.Option(None, "--reference", help="Reference condition of the Δ intervals and "
                                         "of similarity_reference (default: immediate when present, else the "
                                         "manifest's first condition)."),
    draws: int = draws_option(),
    seed: int = seed_option(),
    allow_incomplete: bool = allow_incomplete_option(),
    quiet: bool = quiet_option(),
):
    """Score how every output sounds, per request and per output, with paired talk-bootstrap
    intervals per condition and Δ against the reference (docs/quality.md).

    DNSMOS P.835 SIG/BAK/OVRL and P.808 (speechmos' bundled models, 16 kHz via soxr, 9.01 s
    windows: longer audio in whole windows, the last aligned to the end, averaged) of each
    request and of each output's speech (its requests back to back). Speaker similarity:
    cosine of Resemblyzer GE2E embeddings, each request against its output's speech and
    against the same talk's speech under the reference condition; requests with under 1.2 s
    of speech are counted (n_too_short), never scored. Joins at every request boundary of
    the listener audio `render` writes: silence on each side, gap, level step (dB, 50 ms
    windows), discontinuity (dB); per output joins per minute of speech and per 100 words,
    median and p95 of |step|. Intervals: the conventions and signature of `simulplay
    bootstrap`, one panel per system, backend and realization.
    """
    from simulplay.cli.console import print_table, progress_bar
    from simulplay.cli.options import bootstrap as bootstrap_settings
    from simulplay.cli.options import check_outputs
    from simulplay.manifest import read_manifest
    from simulplay.store.store import AudioStore
    from simulplay.workflows.quality import (
        joins_path,
        parse_metrics,
        quality_paths,
        require_quality_extras,
        score_quality,
        write_quality,
    )

    chosen, boot = parse_metrics(metrics), bootstrap_settings(draws, seed, None, 0.95)
    require_quality_extras(chosen)
    check_outputs(*quality_paths(out), joins_path(out))
    loader = AudioStore.open(store, create=False).load_audio
    df, meta = read_manifest(manifest)
    res = score_quality(df, loader, metrics=chosen, reference=reference, boot=boot, allow_incomplete=allow_incomplete,
                        upstream=meta.get("signature"), source=str(manifest), progress=progress_bar(quiet))
    written = write_quality(res, out)
    print_table(res.deltas.drop(columns=["n_talks_left_out"]), res.delta_signatures or {},
                title=f"quality: per condition and Δ against {res.reference}")
    typer.echo("wrote " + ", ".join(map(str, written)))
