"""``asr``, ``content`` and ``wordtiming``: content diagnostics — recognition of every
output's audio, word edits against the intended text, and the added delay of words."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from simulplay.cli.options import (
    WORD_TIMING_QUANTILE,
    WORD_TIMING_SEED,
    allow_incomplete_option,
    beside,
    bootstrap,
    check_outputs,
    confidence_option,
    draws_option,
    out_option,
    quantile_option,
    quiet_option,
    seed_option,
    table_option,
)


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
    quiet: bool = quiet_option(),
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
    from simulplay.cli.console import progress_bar
    from simulplay.manifest import read_manifest
    from simulplay.recognizers import parse_recognizer
    from simulplay.store.store import AudioStore
    from simulplay.workflows.diagnostics import forced_aligner, recognize, window_rule, write_transcripts

    check_outputs(out, allowed=(".parquet",))
    config = parse_recognizer(recognizer)
    rule = window_rule(window_s)
    align = forced_aligner(aligner)
    audio_store = AudioStore.open(store, create=False)
    df, meta = read_manifest(manifest)
    res = recognize(df, meta.get("signature"), audio_store, config, language=language, rule=rule, aligner=align,
                    source=str(manifest), progress=progress_bar(quiet))
    write_transcripts(res, out)
    table = res.table
    typer.echo(f"transcribed {len(table)} output(s), {int(table['n_windows'].sum())} window(s) "
               f"({int(table['n_pieces'].sum())} piece(s)) → {out}")
    if res.failed_outputs:
        print(f"simulplay: {len(res.failed_outputs)} output(s) incomplete (first: {res.failed_outputs[0]}); "
              "content scoring refuses them unless --allow-incomplete", file=sys.stderr)
        raise typer.Exit(1)


def content(
    transcripts: Path = typer.Argument(..., help="Transcripts table from `simulplay asr` (.parquet)."),
    out: Path = out_option("Per-condition table."),
    pairs: list[str] = typer.Option([], "--pairs", help="FROM,TO: the change from one condition to another per "
                                    "backend and system, e.g. immediate,timer:w=4; repeatable."),
    pairs_out: Path | None = typer.Option(None, "--pairs-out", help="Pair table (default: OUT with .pairs "
                                          "before the suffix)."),
    per_talk: Path | None = table_option("--per-talk", "Also write per-output counts."),
    allow_incomplete: bool = allow_incomplete_option("Exclude outputs with a failed window instead of refusing; "
                                                     "the count is in every signature."),
):
    """Word edits of recognized against intended words (jiwer), under two normalizations:
    punct (lowercase, whitespace tokens, punctuation kept) and normalized (lowercase,
    Unicode letters, numbers and ASCII apostrophes kept, empty tokens dropped).

    Columns: backend and realization (when the transcripts have them), system, condition,
    normalization, n_talks, then
    pooled counts intended_words (N = H + S + D), recognized_words, hits,
    substitutions, deletion_mismatches, insertions, and mean_error_rate_pct (equal-talk
    mean of (S + D + I) / N) and pooled_error_rate_pct. Deletions are recognition
    mismatches, not verified omissions. The pair table (Truong & Le (2026), Tables 13–14
    shape) gives each count and the mean rate before and after, the change, and the talks with more
    deletions or a higher rate. Not a translation-quality score.
    """
    from simulplay.analysis.content import DELETION_NOTE
    from simulplay.grouping import parse_pair
    from simulplay.workflows.diagnostics import content_from_file, write_content

    target = (pairs_out or beside(out, ".pairs")) if pairs else None
    check_outputs(out, target, per_talk)
    parsed = [parse_pair(p, "--pairs") for p in pairs]
    res = content_from_file(transcripts, pairs=parsed, allow_incomplete=allow_incomplete)
    write_content(res, out, pairs_out=target, per_talk=per_talk)
    print_content(res, title="Recognized vs intended words")
    if len(res.pairs):
        from simulplay.cli.console import print_table

        cols = [c for c in res.pairs.columns if not c.startswith(("hits", "intended"))]
        print_table(res.pairs[cols], res.pair_signatures, title="Condition pairs (from → to)")
    typer.echo(f"deletions are {DELETION_NOTE}")
    if res.excluded:
        typer.echo(f"excluded {len(res.excluded)} incomplete output(s)")


def wordtiming(
    transcripts: Path = typer.Argument(..., help="Transcripts table from `simulplay asr` (.parquet)."),
    manifest: Path = typer.Option(..., "--manifest", help="The manifest the transcripts were made from."),
    trace: list[Path] = typer.Option(..., "--trace", help="The trace file(s) the manifest was synthesized from "
                                     "(word availability: the manifest keeps no update times); repeatable."),
    reference: str = typer.Option(..., "--reference", help="Reference condition, e.g. immediate."),
    out: Path = out_option("Truong & Le (2026), Table 17 shape, one row per other condition."),
    words: Path | None = table_option("--words", "Also write one row per intended word and output."),
    per_talk: Path | None = table_option("--per-talk", "Also write per-talk quantiles."),
    draws: int = draws_option(),
    seed: int = seed_option(help="Bootstrap seed (0 is a seed; Truong & Le (2026), Table 17, used 20261005).",
                            default=WORD_TIMING_SEED),
    quantile_method: str = quantile_option("NumPy quantile method of the within-talk median and 90th percentile "
                                           "and of the interval ends (Truong & Le (2026), Table 17: linear).",
                                           default=WORD_TIMING_QUANTILE),
    confidence: float = confidence_option(),
    allow_incomplete: bool = allow_incomplete_option("Exclude incomplete transcripts (and their talks) instead of "
                                                     "refusing; counted in every signature."),
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
    from simulplay.cli.console import print_table
    from simulplay.workflows.diagnostics import timing_from_files, write_timing

    check_outputs(out, words, per_talk)
    boot = bootstrap(draws, seed, quantile_method, confidence)
    res = timing_from_files(transcripts, manifest, trace, reference=reference, boot=boot,
                            allow_incomplete=allow_incomplete)
    write_timing(res, out, words=words, per_talk=per_talk)
    print_table(res.table, res.table_signatures, title=f"Added delay on the common word subset vs {reference}")


def print_content(res, *, title: str) -> None:
    """The per-condition content table without the columns that repeat others."""
    from simulplay.cli.console import print_table

    shown = [c for c in res.table.columns if c not in ("recognized_words", "hits", "pooled_error_rate_pct")]
    print_table(res.table[shown], res.table_signatures, title=title)


def print_diagnostics(diag) -> None:
    """The content and word-timing tables of ``simulplay run``'s diagnostics."""
    from simulplay.analysis.content import DELETION_NOTE
    from simulplay.cli.console import print_table

    print_content(diag.content, title=f"Recognized vs intended words (deletions are {DELETION_NOTE})")
    if diag.timing is not None:
        print_table(diag.timing.table, diag.timing.table_signatures, title="Added delay on the common word subset")
