"""``eta``: completion gaps δ between two translators, their change η under grouping, and
buffered-policy contrasts, with paired talk-bootstrap intervals."""

from __future__ import annotations

from pathlib import Path

import typer

from simulplay.cli.options import (
    allow_incomplete_option,
    beside,
    bootstrap,
    check_outputs,
    confidence_option,
    draws_option,
    out_option,
    quantile_option,
    seed_option,
    table_option,
)


def eta(
    summary: Path = typer.Argument(..., help="Playback summary from `simulplay replay`."),
    a: str = typer.Option(..., "--a", help="Translator A (δ = L(A) − L(F); negative: A finishes earlier)."),
    f: str = typer.Option(..., "--f", help="Translator F."),
    reference: str = typer.Option(..., "--reference", help="Reference condition (e.g. immediate)."),
    out: Path = out_option("η table, one row per other condition."),
    draws: int = draws_option(),
    seed: int = seed_option(),
    quantile_method: str = quantile_option(),
    confidence: float = confidence_option(),
    per_talk: Path | None = table_option("--per-talk", "Also write per-talk δ and η."),
    contrast: list[str] = typer.Option([], "--contrast", help="Buffered-policy contrast P1,P2: "
                                       "δ(P1) − δ(P2) per talk with the same bootstrap; repeatable."),
    contrast_out: Path | None = typer.Option(
        None, "--contrast-out", help="Contrast table (default: OUT with .contrasts before the suffix)."),
    allow_incomplete: bool = allow_incomplete_option("Exclude talks with missing outputs and count them."),
):
    """Completion gaps δ, their change η under grouping, its duration and idle parts, and
    paired talk-bootstrap intervals (all conditions of a talk resampled together).

    Columns: condition, n_talks, delta_ref_s (mean δ(0)), delta_s (mean δ(w)), eta_s,
    ci_low_s, ci_high_s, n_negative / n_positive (talks with η < 0 / > 0),
    duration_part_s, idle_part_s (they sum to eta_s), signature. Means weight talks
    equally; each backend and realization is a separate panel. Columns ending in _s are
    seconds.
    """
    from simulplay.analysis import compute_eta, read_summary
    from simulplay.cli.console import print_table
    from simulplay.grouping import parse_pair
    from simulplay.tables import check_distinct, write_table

    check_outputs(out, per_talk, contrast_out)
    check_distinct({"--out": out, "--per-talk": per_talk, "--contrast-out": contrast_out}, [summary])
    pairs = [parse_pair(c, "--contrast") for c in contrast]
    boot = bootstrap(draws, seed, quantile_method, confidence)
    df, upstream = read_summary(summary)
    res = compute_eta(df, a=a, f=f, reference=reference, boot=boot, contrasts=pairs,
                      allow_incomplete=allow_incomplete, upstream=upstream, source=str(summary))
    write_table(res.table, out, res.table_signatures, kind="eta", signature_column=True)
    print_table(res.table, res.table_signatures, title=f"η: {a} vs {f}, reference {reference}")
    if per_talk:
        write_table(res.per_talk, per_talk, res.per_talk_signatures, kind="eta-per-talk")
    if pairs:
        target = contrast_out or beside(out, ".contrasts")
        write_table(res.contrasts, target, res.contrast_signatures, kind="contrast", signature_column=True)
        print_table(res.contrasts, res.contrast_signatures, title="Buffered-policy contrasts δ(P1) − δ(P2)")
    if res.excluded:
        typer.echo(f"excluded {len(res.excluded)} missing output(s); their talks are not in the means")
