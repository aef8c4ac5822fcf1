"""``bootstrap``: paired talk-bootstrap intervals for a per-talk table made anywhere."""

from __future__ import annotations

from pathlib import Path

import typer

from simulplay.cli.options import bootstrap as bootstrap_settings
from simulplay.cli.options import (
    check_outputs,
    confidence_option,
    draws_option,
    preset_option,
    quantile_option,
    rng_option,
    seed_option,
    table_option,
    talk_order_option,
    tie_option,
)


def bootstrap(
    table: Path = typer.Argument(..., help="Per-talk table, .csv or .parquet."),
    value: list[str] = typer.Option(..., "--value", help="Value column(s), comma-separated or repeated. Wide "
                                    "table (one row per talk): each column is a condition. Long table (--by): "
                                    "one column."),
    by: list[str] = typer.Option([], "--by", help="Condition column(s) of a long table (one row per talk and "
                                 "condition), comma-separated or repeated; a condition is their values joined "
                                 "by /."),
    pair: list[str] = typer.Option([], "--pair", help="A,B: the per-talk difference A − B of two conditions "
                                   "(value columns of a wide table, conditions of a long one), resampled with "
                                   "the same draws; repeatable."),
    talk: str = typer.Option("talk_id", "--talk", help="Talk id column."),
    out: Path | None = table_option("--out", "Also write the table."),
    draws: int = draws_option(),
    seed: int = seed_option(),
    quantile_method: str | None = quantile_option(),
    confidence: float = confidence_option(),
    bootstrap_rng: str | None = rng_option(),
    preset: str | None = preset_option(),
    talk_order: str = talk_order_option(),
    tie_tolerance: float = tie_option(),
):
    """Paired talk-bootstrap intervals for a per-talk table: from `simulplay eta
    --per-talk`, another pipeline, or per-talk values typed from a paper.

    One index matrix (draws × talks) resamples the talks of every condition and pair
    together, with the conventions, signature and small-panel note of `simulplay eta`; the
    same settings give eta's intervals from its per-talk table. Columns: condition (a
    value column, a --by label, or A − B for a --pair), n_talks, mean (equal-talk mean),
    ci_low, ci_high, n_negative / n_zero / n_positive (talks below / within --tie-tolerance
    of / above zero), signature; values keep the table's unit. Every talk needs a number
    under every condition: a missing column, a cell that is no number, a repeated talk or
    a missing condition is an error naming the row.

    Truong & Le (2026)'s intervals: --bootstrap paper, with the talks in the order of the
    table they are typed from (--talk-order given): their Table 4's XTTS η(2) and η(4) as two
    value columns give the intervals of their Table 2.
    """
    from simulplay.analysis.table_bootstrap import bootstrap_table
    from simulplay.cli.console import print_table
    from simulplay.core.tables import check_distinct, read_table, write_table

    check_outputs(out)
    check_distinct({"--out": out}, [table])
    boot = bootstrap_settings(draws, seed, quantile_method, confidence, rng=bootstrap_rng, preset=preset,
                              talk_order=talk_order, tie_tolerance=tie_tolerance)
    df, _ = read_table(table)
    res = bootstrap_table(df, value=_names(value), by=_names(by), pairs=pair, talk=talk, boot=boot, source=str(table))
    if out:
        write_table(res.table, out, res.signature, kind="bootstrap", signature_column=True, notes=res.notes)
    print_table(res.table, res.signature, title=f"Paired talk bootstrap over {len(res.talks)} talks",
                notes=res.notes)


def _names(given: list[str]) -> list[str]:
    """Column names from repeated and comma-separated flags, in order, each once."""
    return list(dict.fromkeys(n.strip() for g in given for n in g.split(",") if n.strip()))
