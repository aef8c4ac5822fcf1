"""``blocks``: the continuing-session block protocol (Truong & Le (2026), Appendix F)."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from simulplay.cli.options import (
    allow_incomplete_option,
    bootstrap,
    check_outputs,
    confidence_option,
    draws_option,
    out_option,
    preset_option,
    quantile_option,
    rng_option,
    seed_option,
    table_option,
)


def blocks(
    trace: list[Path] = typer.Argument(..., help="Trace files (.parquet, .csv or .jsonl)."),
    backend: str = typer.Option(..., "--backend", help="Session backend spec cosyvoice:KEY=VALUE,… (joined by "
                                "commas, no spaces) with checkout=PATH, model_dir=PATH, prompt_wav=PATH and "
                                "prompt_text=TEXT (required) and seed=5242, speed=1, text_frontend=false, "
                                "fp16=false (defaults)."),
    out: Path = out_option("Session summary, one row per (block, condition)."),
    compare: Path = out_option("Paired comparison, one row per (system, condition).", flag="--compare"),
    rule: list[str] = typer.Option(["immediate", "timer:w=4"], "--rule", help="Feed conditions, repeatable "
                                   "(default: immediate and timer:w=4)."),
    reference: str = typer.Option("immediate", "--reference", help="Reference feed condition."),
    min_words: int = typer.Option(64, "--min-words", min=1, help="Fewest whitespace words in a block."),
    max_words: int = typer.Option(151, "--max-words", min=1, help="Most whitespace words in a block."),
    seed: int = typer.Option(20261007, "--seed", min=0, help="Block selection seed (0 is a seed)."),
    store: Path | None = typer.Option(None, "--store", help="Also keep each session's audio (FLAC) here."),
    parts: Path | None = table_option("--parts", "Per-chunk arrival table."),
    feeds: Path | None = table_option("--feeds", "Per-feed table (when each text entered)."),
    max_wall_s: float = typer.Option(180.0, "--max-wall-s", help="Stop a session after this many seconds "
                                     "(recorded as a failure)."),
    max_audio_s: float = typer.Option(240.0, "--max-audio-s", help="Stop a session after this much audio "
                                      "(seconds; recorded as a failure)."),
    draws: int = draws_option("Paired source-bootstrap draws."),
    boot_seed: int = seed_option("--boot-seed"),
    quantile_method: str | None = quantile_option(),
    confidence: float = confidence_option(),
    bootstrap_rng: str | None = rng_option(),
    preset: str | None = preset_option(),
    allow_incomplete: bool = allow_incomplete_option("Exclude blocks with a failed session and count them."),
):
    """Continuing-session block protocol (Truong & Le (2026), Appendix F) for a session backend.

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
    from simulplay.backends import parse_backend
    from simulplay.blocks import run_block_protocol, write_blocks
    from simulplay.cli.console import print_table
    from simulplay.grouping import parse_rule
    from simulplay.store.store import AudioStore
    from simulplay.traces import read_traces, streams_from_frame

    check_outputs(out, compare, parts, feeds)
    boot = bootstrap(draws, boot_seed, quantile_method, confidence, seed_flag="--boot-seed", rng=bootstrap_rng,
                     preset=preset)
    rules = [parse_rule(r) for r in rule]
    config = parse_backend(backend)
    streams = streams_from_frame(read_traces(trace))
    res = run_block_protocol(streams, config, rules, reference=reference, min_words=min_words, max_words=max_words,
                             seed=seed, boot=boot, store=AudioStore.open(store) if store else None,
                             max_wall_s=max_wall_s, max_audio_s=max_audio_s, allow_incomplete=allow_incomplete)
    write_blocks(res, out, compare, parts=parts, feeds=feeds)
    print_table(res.comparison, res.compare_signature, title=f"ΔB = B(condition) − B({reference}), seconds")
    failed = int((res.summary["error"] != "").sum())
    if failed:
        print(f"simulplay: {failed} session(s) failed; see the summary's error column", file=sys.stderr)
        raise typer.Exit(1)
