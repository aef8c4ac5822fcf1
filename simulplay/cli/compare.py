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
from simulplay.errors import InputError


def eta(
    summary: Path = typer.Argument(..., help="Playback summary from `simulplay replay`."),
    a: str = typer.Option(..., "--a", help="Translator A (δ = L(A) − L(F); negative: A finishes earlier)."),
    f: str = typer.Option(..., "--f", help="Translator F."),
    reference: str = typer.Option(..., "--reference", help="Reference condition (e.g. immediate)."),
    out: Path = out_option("η table, one row per other condition."),
    draws: int = draws_option(),
    seed: int = seed_option(),
    quantile_method: str = quantile_option("NumPy quantile method for the interval ends."),
    confidence: float = confidence_option(),
    per_talk: Path | None = table_option("--per-talk", "Also write per-talk δ and η."),
    contrast: list[str] = typer.Option([], "--contrast", help="Buffered-policy contrast P1,P2: "
                                       "δ(P1) − δ(P2) per talk with the same bootstrap; repeatable."),
    contrast_out: Path | None = typer.Option(
        None, "--contrast-out", help="Contrast table (default: OUT with .contrasts before the suffix)."),
    allow_incomplete: bool = allow_incomplete_option("Exclude talks with missing outputs and count them."),
    talk_spread: Path | None = table_option(
        "--talk-spread", "With two realizations or more: each talk's η per realization (eta_s[r=R]), its mean, "
        "min, max, range and sample SD (ddof 1) across realizations, seconds; the summary per condition (median and "
        "maximum per-talk SD, the talk with the largest range) goes beside it (.summary before the suffix) and is "
        "printed."),
):
    """Completion gaps δ, their change η under grouping, its duration and idle parts, and
    paired talk-bootstrap intervals (all conditions of a talk resampled together).

    Columns: condition, n_talks, delta_ref_s (mean δ(0)), delta_s (mean δ(w)), eta_s,
    ci_low_s, ci_high_s, n_negative / n_positive (talks with η < 0 / > 0),
    duration_part_s, idle_part_s (they sum to eta_s), signature. Means weight talks
    equally; each backend and realization is a separate panel. Columns ending in _s are
    seconds. A panel of fewer than 10 talks gets a note under the table (printed, and in a
    Markdown --out): its interval is close to the range of the per-talk η; read the
    direction counts first.
    """
    from simulplay.analysis import compute_eta, read_summary
    from simulplay.cli.console import print_table
    from simulplay.grouping import parse_pair
    from simulplay.tables import check_distinct, write_table

    check_outputs(out, per_talk, contrast_out, talk_spread)
    check_distinct({"--out": out, "--per-talk": per_talk, "--contrast-out": contrast_out,
                    "--talk-spread": talk_spread}, [summary])
    pairs = [parse_pair(c, "--contrast") for c in contrast]
    boot = bootstrap(draws, seed, quantile_method, confidence)
    df, upstream = read_summary(summary)
    check_realizations(df, talk_spread, summary)
    res = compute_eta(df, a=a, f=f, reference=reference, boot=boot, contrasts=pairs,
                      allow_incomplete=allow_incomplete, upstream=upstream, source=str(summary))
    write_table(res.table, out, res.table_signatures, kind="eta", signature_column=True, notes=res.notes)
    print_table(res.table, res.table_signatures, title=f"η: {a} vs {f}, reference {reference}", notes=res.notes)
    if per_talk:
        write_table(res.per_talk, per_talk, res.per_talk_signatures, kind="eta-per-talk")
    if pairs:
        target = contrast_out or beside(out, ".contrasts")
        write_table(res.contrasts, target, res.contrast_signatures, kind="contrast", signature_column=True,
                    notes=res.contrast_notes)
        print_table(res.contrasts, res.contrast_signatures, title="Buffered-policy contrasts δ(P1) − δ(P2)",
                    notes=res.contrast_notes)
    if talk_spread:
        write_talk_spread(res, talk_spread)
    if res.excluded:
        typer.echo(f"excluded {len(res.excluded)} missing output(s); their talks are not in the means")


def check_realizations(df, talk_spread: Path | None, summary: Path) -> None:
    """--talk-spread needs two realizations or more (checked before anything is written)."""
    if talk_spread and not ("realization" in df and df["realization"].nunique() >= 2):
        raise InputError.at(summary, "has one realization", field="realization",
                            accepted="a summary with two realizations or more for --talk-spread "
                            "(synth --realizations N)")


def write_talk_spread(res, path: Path) -> None:
    """The per-talk spread across realizations and its summary (printed), or why not."""
    from simulplay.analysis.realizations import realization_tables, write_realization_tables
    from simulplay.cli.console import print_table

    tables = realization_tables(res)
    write_realization_tables(tables, path, beside(path, ".summary"))
    print_table(tables.summary, tables.summary_signatures,
                title="η across realizations, talk by talk: sample SD of each talk's η (s), the widest talk")
