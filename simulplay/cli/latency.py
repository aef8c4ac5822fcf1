"""``latency``, ``export-simuleval`` and ``textlatency``: latency in the field's terms —
SimulEval's speech-output metrics of every replay, a replay as SimulEval output folders,
and OmniSTEval's text latency beside speech completion."""

from __future__ import annotations

from pathlib import Path

import typer

from simulplay.cli.options import (
    allow_incomplete_option,
    check_outputs,
    chunks_option,
    out_option,
    release_option,
    table_option,
)


def latency(
    manifest: Path = typer.Argument(..., help="Request manifest (.parquet or .csv)."),
    out: Path = out_option("Latency table, one row per output."),
    release: str = release_option(),
    chunks: Path | None = chunks_option(),
    allow_incomplete: bool = allow_incomplete_option(),
):
    """SimulEval 1.1.4's speech-output latency metrics of every replayed output, in ms.

    Columns (one row per output): start_offset_ms (first part's delay), end_offset_ms
    (end of playback − source length), atd_ms (Average Token Delay with 300 ms pseudo-tokens
    of source and target speech, as SimulEval's ATDScorer), num_chunks (parts with audio),
    discontinuity_sum_ms / _ave_ms / _num (silences between parts; the wait before the
    first part is not one), rtf (end of playback / source length, no unit). Plain columns:
    each part's delay is its dispatch time, service zero. `_ca` columns: its ready time under
    the measured serial synthesizer clock (not SimulEval's own --computation-aware, whose
    EndOffset ignores compute time). Parts without audio are left out but still occupy the
    synthesizer. Times are ms from source start, computed in SimulEval's float operations.
    The manifest is only read; only --out is written (its folder checked before any work:
    exit code 2 when it cannot be written).
    """
    from simulplay.analysis.latency_table import latency_table
    from simulplay.core.tables import check_distinct, write_table
    from simulplay.manifest import read_chunks, read_manifest
    from simulplay.sim.variants import parse_release

    check_outputs(out)
    check_distinct({"--out": out}, [manifest])
    rel = parse_release(release)
    df, meta = read_manifest(manifest)
    chunk_df = read_chunks(manifest, chunks) if rel.needs_chunks else None
    res = latency_table(df, release=rel, chunks=chunk_df, allow_incomplete=allow_incomplete,
                        upstream=meta.get("signature"), source=str(manifest))
    write_table(res.table, out, res.signatures, kind="latency")
    note = f" ({len(res.excluded)} incomplete output(s) excluded)" if res.excluded else ""
    typer.echo(f"wrote SimulEval speech-output metrics of {len(res.table)} output(s) to {out}{note}")


def export_simuleval_command(
    manifest: Path = typer.Argument(..., help="Synthesized request manifest (needs audio_key, sample_rate, "
                                    "n_samples)."),
    store: Path = typer.Option(..., "--store", help="The audio store the manifest was synthesized into."),
    out: Path = out_option("New (or empty) folder: one SimulEval output folder per system and condition, and "
                           "exports.csv.", table=False),
    delays: str = typer.Option("ready", "--delays", help="ready: each part's delay is its ready time under the "
                               "measured synthesizer clock (the _ca columns of `simulplay latency`); dispatch: its "
                               "dispatch time, service zero (the plain columns)."),
    release: str = release_option(),
    chunks: Path | None = chunks_option(),
    allow_incomplete: bool = allow_incomplete_option(),
):
    """Write each replay as SimulEval 1.1.4 speech-output folders: instances.log (delays,
    durations, intervals in ms), wavs/<index>_pred.wav (the stored samples from the first
    part's start, SimulEval's zero samples in each gap) and config.yaml, one folder per
    system and condition (one log line per talk); exports.csv lists the folders with the
    means `simuleval --score-only --output FOLDER` reproduces: StartOffset, EndOffset and
    NumChunks (ms, ms, count). Score-only reads a log as text output, so its ATD and RTF are
    not the speech-output values of `simulplay latency`, and its Discontinuity scorers fail.
    """
    from simulplay.core.paths import check_new_folder
    from simulplay.manifest import read_chunks, read_manifest
    from simulplay.sim.variants import parse_release
    from simulplay.store.store import AudioStore
    from simulplay.workflows.export_simuleval import export_simuleval

    check_new_folder(out)
    rel = parse_release(release)
    load_audio = AudioStore.open(store, create=False).load_audio
    df, meta = read_manifest(manifest)
    chunk_df = read_chunks(manifest, chunks) if rel.needs_chunks else None
    res = export_simuleval(df, load_audio, out, delays=delays, release=rel, chunks=chunk_df,
                           allow_incomplete=allow_incomplete, upstream=meta.get("signature"), source=str(manifest))
    note = f" ({len(res.excluded)} incomplete output(s) excluded)" if res.excluded else ""
    typer.echo(f"wrote {len(res.table)} SimulEval folder(s) to {out}{note}; score one with: simuleval --score-only "
               f"--output {out}/{res.table['folder'].iloc[0]} --latency-metrics StartOffset EndOffset NumChunks")


def textlatency(
    traces: list[Path] = typer.Argument(..., help="Trace files on the source clock (.parquet, .csv or .jsonl)."),
    references: Path = typer.Option(..., "--references", help="Reference translations, one line per segment."),
    segmentation: Path = typer.Option(..., "--segmentation", help="The references' segmentation: MuST-C YAML "
                                      "({wav, offset, duration} in seconds; wav stem = talk_id)."),
    summary: Path = typer.Option(..., "--summary", help="Playback summary (`simulplay replay`) of the outputs."),
    a: str = typer.Option(..., "--a", help="Translator A (δ = L(A) − L(F))."),
    f: str = typer.Option(..., "--f", help="Translator F."),
    out: Path = out_option("Comparison per condition and measure."),
    per_output: Path | None = table_option("--per-output", "Also one row per output."),
    ca_trace: list[Path] = typer.Option([], "--ca-trace", help="The same streams on the computation-aware clock "
                                        "(repeatable): adds the ca_ columns."),
    unit: str = typer.Option("word", "--unit", help="word (whitespace words) or char (characters, no spaces)."),
    lang: str | None = typer.Option(None, "--lang", help="Language code (en, de, …) for Moses tokenization "
                                    "before the alignment (runs perl); default: no tokenization (zh, ja: none)."),
    allow_incomplete: bool = allow_incomplete_option("Leave talks lacking A's or F's output out of the comparison "
                                                     "and count them, instead of refusing."),
):
    """Text latency (OmniSTEval 0.1.10, long-form) beside speech completion.

    Each stream is resegmented onto the reference segments by OmniSTEval's SoftSegmenter and
    scored per talk: long_yaal_ms, long_al_ms, long_laal_ms (ms; ca_ on the --ca-trace
    clock); a unit is emitted when the update completing it is available. Beside them:
    first_play_s and offset_s (L) of each output, in seconds. --out has, per condition and
    measure, equal-talk means of A and F, mean_a_minus_f (for offset_s: δ) and the talks where
    A is lower / higher. LongYAAL leaves out units emitted at or after the end of the talk's
    last reference segment (n_units_late counts them); LongAL and LongLAAL keep them.
    """
    from simulplay.core.tables import check_distinct, write_table
    from simulplay.workflows.textlatency import text_latency

    check_outputs(out, per_output)
    check_distinct({"--out": out, "--per-output": per_output}, [*traces, *ca_trace, references, segmentation, summary])
    res = text_latency(traces, references, segmentation, summary, a=a, f=f, ca_traces=ca_trace, unit=unit, lang=lang,
                       allow_incomplete=allow_incomplete)
    write_table(res.compare, out, res.compare_signatures, kind="text-latency-compare")
    if per_output:
        write_table(res.per_output, per_output, res.per_output_signatures, kind="text-latency")
    note = f"; {len(res.ignored_talks)} segmented talk(s) without a stream ignored" if res.ignored_talks else ""
    typer.echo(f"scored {len(res.per_output)} output(s) of {res.per_output['talk_id'].nunique()} talk(s); "
               f"wrote {out}{note}")
