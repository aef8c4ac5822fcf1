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
    preset_option,
    quantile_option,
    rng_option,
    seed_option,
    table_option,
    talk_order_option,
    tie_option,
)
from simulplay.core.errors import InputError


def eta(
    summary: Path = typer.Argument(..., help="Playback summary from `simulplay replay`."),
    a: str = typer.Option(..., "--a", help="Translator A (δ = L(A) − L(F); negative: A finishes earlier)."),
    f: str = typer.Option(..., "--f", help="Translator F."),
    reference: str | None = typer.Option(None, "--reference", help="Reference condition (e.g. immediate); or "
                                         "--reference-commit."),
    reference_commit: str | None = typer.Option(None, "--reference-commit", help="Compare commit policies "
                                                "instead: each condition POLICY+RULE against REFERENCE_COMMIT+RULE, "
                                                "the rule fixed (e.g. eager or final; a plain rule is after eager); "
                                                "the table gains the columns rule and reference."),
    out: Path = out_option("η table, one row per other condition."),
    draws: int = draws_option(),
    seed: int = seed_option(),
    quantile_method: str | None = quantile_option(),
    confidence: float = confidence_option(),
    bootstrap_rng: str | None = rng_option(),
    preset: str | None = preset_option(),
    talk_order: str = talk_order_option(),
    tie_tolerance: float = tie_option(),
    per_talk: Path | None = table_option("--per-talk", "Also write per-talk δ and η."),
    contrast: list[str] = typer.Option([], "--contrast", help="Buffered-policy contrast P1,P2: "
                                       "δ(P1) − δ(P2) per talk with the same bootstrap; repeatable."),
    contrast_out: Path | None = typer.Option(
        None, "--contrast-out", help="Contrast table (default: OUT with .contrasts before the suffix)."),
    interaction: list[str] = typer.Option([], "--interaction", help="Cross-backend interaction B1,B2 (backend "
                                          "labels as in the summary's backend column): per talk and condition "
                                          "η(B1) − η(B2), its equal-talk mean, paired talk-bootstrap interval (one "
                                          "index matrix over the talks both backends hold) and direction counts; "
                                          "repeatable. Needs the same talks under both backends."),
    interaction_out: Path | None = typer.Option(
        None, "--interaction-out", help="Interaction table (default: OUT with .interaction before the suffix)."),
    interaction_per_talk: Path | None = table_option("--interaction-per-talk", "Also write per-talk interactions."),
    allow_incomplete: bool = allow_incomplete_option("Exclude talks with missing outputs and count them."),
    talk_spread: Path | None = table_option(
        "--talk-spread", "With two realizations or more: each talk's η per realization, its mean, range and SD "
        "across realizations (seconds); a summary per condition goes beside it (.summary) and is printed."),
):
    """Completion gaps δ, their change η under grouping, its duration and idle parts, and
    paired talk-bootstrap intervals (all conditions of a talk resampled together).

    Columns (columns ending in _s are seconds): backend, realization, condition, n_talks,
    delta_ref_s (mean δ(0)), delta_s (mean δ(w)), eta_s, ci_low_s, ci_high_s, n_negative /
    n_zero / n_positive (talks with η < 0 / within --tie-tolerance of 0 / > 0; a per-talk
    value within it is taken as 0), duration_part_s + idle_part_s (= eta_s),
    signature. Talks weigh equally; each backend and realization is a panel. Under 10 talks,
    read the direction counts first (a note says so). --interaction adds η(B1) − η(B2) per
    condition with its interval. With --reference-commit P, each condition P2+RULE against
    P+RULE (columns rule and reference after condition). Details:
    docs/concepts.md#the-comparison.
    """
    from simulplay.analysis.interaction import parse_backend_pair
    from simulplay.core.tables import check_distinct
    from simulplay.grouping import parse_pair
    from simulplay.workflows.steps import eta_of_summary

    check_outputs(out, per_talk, contrast_out, interaction_out, interaction_per_talk, talk_spread)
    check_distinct({"--out": out, "--per-talk": per_talk, "--contrast-out": contrast_out,
                    "--interaction-out": interaction_out, "--interaction-per-talk": interaction_per_talk,
                    "--talk-spread": talk_spread}, [summary])
    pairs = [parse_pair(c, "--contrast") for c in contrast]
    backends = [parse_backend_pair(p) for p in interaction]
    boot = bootstrap(draws, seed, quantile_method, confidence, rng=bootstrap_rng, preset=preset,
                     talk_order=talk_order, tie_tolerance=tie_tolerance)
    res = eta_of_summary(summary, a=a, f=f, reference=reference, boot=boot, contrasts=pairs, interactions=backends,
                         allow_incomplete=allow_incomplete, reference_commit=reference_commit,
                         check=lambda df: check_realizations(df, talk_spread, summary))
    _write_eta(res, out, title=f"η: {a} vs {f}, reference " + (reference or f"policy {reference_commit}, rule fixed"),
               per_talk=per_talk,
               contrast_out=(contrast_out or beside(out, ".contrasts")) if pairs else None,
               interaction_out=(interaction_out or beside(out, ".interaction")) if backends else None,
               interaction_per_talk=interaction_per_talk)
    if talk_spread:
        write_talk_spread(res, talk_spread)


def _write_eta(res, out: Path, *, title: str, per_talk: Path | None, contrast_out: Path | None,
               interaction_out: Path | None, interaction_per_talk: Path | None) -> None:
    """Write and print the η table (with its small-panel notes) and the extra tables that were asked for."""
    from simulplay.analysis.interaction import combine_interactions
    from simulplay.cli.console import print_table
    from simulplay.workflows.eta_tables import write_eta_tables

    write_eta_tables(res, out, per_talk=per_talk, contrasts=contrast_out, interaction=interaction_out,
                     interaction_per_talk=interaction_per_talk)
    print_table(res.table, res.table_signatures, title=title, notes=res.notes)
    if contrast_out:
        print_table(res.contrasts, res.contrast_signatures, title="Buffered-policy contrasts δ(P1) − δ(P2)",
                    notes=res.contrast_notes)
    if interaction_out and res.interactions:
        both = combine_interactions(res.interactions)
        print_table(both.table, both.signatures, title="Cross-backend interaction η(B1) − η(B2)")
    if res.excluded:
        typer.echo(f"excluded {len(res.excluded)} missing output(s); their talks are not in the means")
    excluded = sorted({x for r in res.interactions for x in r.excluded})
    if excluded:
        typer.echo(f"interaction: excluded {len(excluded)} talk(s) not under both backends")


def check_realizations(df, talk_spread: Path | None, summary: Path) -> None:
    """--talk-spread needs two realizations or more (checked before anything is written)."""
    if talk_spread and not ("realization" in df and df["realization"].nunique() >= 2):
        raise InputError.at(summary, "has one realization", field="realization",
                            accepted="a summary with two realizations or more for --talk-spread "
                            "(synth --realizations N)")


def write_talk_spread(res, path: Path) -> None:
    """The per-talk spread across realizations and its summary (printed), or why not."""
    from simulplay.analysis.realizations import realization_tables
    from simulplay.cli.console import print_table
    from simulplay.workflows.eta_tables import write_realization_tables

    tables = realization_tables(res)
    write_realization_tables(tables, path, beside(path, ".summary"))
    print_table(tables.summary, tables.summary_signatures,
                title="η across realizations, talk by talk: sample SD of each talk's η (s), the widest talk")
