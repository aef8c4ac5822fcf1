"""Comparisons for notebooks: η and the paired talk bootstrap of any per-talk table
(``simulplay.eta``, ``bootstrap``)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from simulplay.api.checks import (
    PathLike,
    as_flag,
    as_pair,
    as_path,
    as_sequence,
    as_strings,
    as_table,
    as_text,
    bootstrap_settings,
    frame_of,
    renamed,
)
from simulplay.api.results import (
    EtaOutput,
    ReplayOutput,
    SignedTable,
    fresh,
    shared_signature,
    signatures_of,
)


@renamed(method="quantile_method", rng="bootstrap_rng", contrasts="contrast", interactions="interaction")
def eta(summary: ReplayOutput | SignedTable | pd.DataFrame | PathLike, *, a: str, f: str, reference: str | None = None,
        contrast: Sequence[str | tuple[str, str]] = (), interaction: Sequence[str | tuple[str, str]] = (),
        allow_incomplete: bool = False, draws: int = 10_000, seed: int = 1032026, quantile_method: str | None = None,
        confidence: float = 0.95, bootstrap_rng: str | None = None, bootstrap: str | None = None,
        talk_order: str = "sorted", tie_tolerance: float = 1e-6, reference_commit: str | None = None) -> EtaOutput:
    """η of translator ``a`` against ``f`` under each grouping condition, against the
    ``reference`` condition, with paired talk-bootstrap intervals (``simulplay eta``).

    δ = L(a) − L(f) per talk (L: ``offset_s``, seconds; negative: ``a`` finishes earlier),
    η = δ(condition) − δ(reference), averaged with equal weight per talk. Each backend and
    realization is a panel with its own index matrix, which resamples every condition of a
    talk together. Under 10 talks, read the direction counts first (a note says so).

    Args:
        summary: A [`replay`][simulplay.api.replay] result (its rows' signatures go into η's), a playback
            summary DataFrame, or its file (``simulplay replay --out``).
        a: Translator A, as the summary's ``system`` column names it.
        f: Translator F.
        reference: The reference condition (e.g. ``"immediate"``); every other condition
            gets a row. Give it or ``reference_commit``.
        contrast: Buffered-policy contrasts, each ``"P1,P2"`` or a tuple ``(P1, P2)``:
            δ(P1) − δ(P2) per talk with the same bootstrap (default: none). ``contrasts=``
            is its old name (deprecated).
        interaction: Cross-backend interactions, each ``"B1,B2"`` or a tuple (backend
            labels as in the summary's ``backend`` column): per talk and condition η(B1) −
            η(B2), its mean and interval over the talks both backends hold (default: none).
            ``interactions=`` is its old name (deprecated).
        allow_incomplete: False (default): a talk with a missing or incomplete output (a
            failed request, a system or condition missing) stops the comparison with an
            error naming it. True: such talks are left out of the means, listed in
            ``excluded`` and counted in every signature.
        draws: Paired talk-bootstrap draws (default 10,000; ``--draws``).
        seed: The bootstrap seed (default 1032026; 0 is a seed).
        quantile_method: How the interval ends are read off the sorted bootstrap means:
            ``"order:floor((n+1)a)"`` (the default; 10,000 draws at 95 %: the 250th and
            9,751st), ``"order:floor(na)+1"``, ``"order:int(nq)"`` (the ``paper`` preset's)
            or a NumPy quantile method (``"linear"``, ``"inverted_cdf"``, …); None: the
            default, or the preset's. ``method=`` is its old name (deprecated).
        confidence: The interval's coverage, in (0, 1) (default 0.95).
        bootstrap_rng: The generator of the draws × talks index matrix: ``"numpy"``
            (``default_rng(seed)``, the default) or ``"python"`` (``random.Random(seed)``,
            one ``randrange`` per cell; the ``paper`` preset's); None: the default, or the
            preset's. In the signature as ``boot_rng``. ``rng=`` is its old name
            (deprecated).
        bootstrap: A named setting (``--bootstrap``): ``"paper"`` sets
            ``bootstrap_rng="python"`` and ``quantile_method="order:int(nq)"``, which with
            the default seed and draws give every interval Truong & Le (2026) print from
            their per-talk values (with the talks in their table's order,
            ``talk_order="given"``); a different ``bootstrap_rng`` or ``quantile_method``
            with it is an error. None (default): no preset.
        talk_order: Which talk each column of the index matrix is (it changes the draws):
            ``"sorted"`` (default: talk ids as text) or ``"given"`` (the input's order, e.g.
            a paper table's rows). In the signature.
        tie_tolerance: A per-talk value whose magnitude is below this is a tie: taken as 0
            and counted in ``n_zero``, neither negative nor positive (default 1e-6, in the
            values' unit: 1 µs for seconds; ``--tie-tolerance``). In the signature.
        reference_commit: Instead of ``reference``, a commit policy (``--reference-commit``,
            e.g. ``"eager"`` or ``"final"``): each condition ``P+RULE`` against
            ``reference_commit+RULE``, the rule fixed (a plain rule is after ``eager``); the
            tables gain ``rule`` and ``reference`` after ``condition``; no ``contrast`` or
            ``interaction`` with it (docs/retranslation.md).

    Returns:
        An [`EtaOutput`][simulplay.api.EtaOutput]: the η table (``backend, realization, condition, n_talks,
        delta_ref_s, delta_s, eta_s, ci_low_s, ci_high_s, n_negative, n_zero, n_positive,
        duration_part_s, idle_part_s``; seconds), the per-talk rows, the contrasts and the
        interaction with their per-talk rows, each with its signatures, the small-panel
        notes and the excluded talks.

    Raises:
        InputError: a summary with a missing column, an unknown system or condition, a
            malformed pair, a bad bootstrap setting, an incomplete talk without
            ``allow_incomplete``.
    """
    from simulplay.analysis.interaction import combine_interactions, parse_backend_pair
    from simulplay.grouping import parse_pair
    from simulplay.workflows.steps import eta_of_summary

    names = {k: as_text(v, k) for k, v in (("a", a), ("f", f))}
    names |= {k: None if v is None else as_text(v, k) for k, v in (("reference", reference),
                                                                    ("reference_commit", reference_commit))}
    pairs = [as_pair(p, "contrast", parse_pair) for p in as_sequence(contrast, "contrast")]
    backends = [as_pair(p, "interaction", parse_backend_pair) for p in as_sequence(interaction, "interaction")]
    boot = bootstrap_settings(draws=draws, seed=seed, quantile_method=quantile_method, confidence=confidence,
                              bootstrap_rng=bootstrap_rng, bootstrap=bootstrap, talk_order=talk_order,
                              tie_tolerance=tie_tolerance)
    given = frame_of(summary, "summary")
    table = given[0] if given is not None else as_path(summary, "summary", "a summary DataFrame or file")
    res = eta_of_summary(table, **names, boot=boot, contrasts=pairs, interactions=backends,
                         upstream=None if given is None else given[1],
                         allow_incomplete=as_flag(allow_incomplete, "allow_incomplete"))
    both = combine_interactions(res.interactions)
    sigs = signatures_of(res.table_signatures)
    return EtaOutput(fresh(res.table), sigs, fresh(res.per_talk), signatures_of(res.per_talk_signatures),
                     fresh(res.contrasts), signatures_of(res.contrast_signatures),
                     None if both is None else both.table, None if both is None else signatures_of(both.signatures),
                     None if both is None else both.per_talk,
                     None if both is None else signatures_of(both.per_talk_signatures), shared_signature(sigs),
                     tuple(res.notes), tuple(res.contrast_notes), tuple(res.excluded))


@renamed(method="quantile_method", rng="bootstrap_rng", pairs="pair")
def bootstrap(table: SignedTable | pd.DataFrame | PathLike, *, value: str | Sequence[str],
              by: str | Sequence[str] = (), pair: Sequence[str] = (), talk: str = "talk_id", draws: int = 10_000,
              seed: int = 1032026, quantile_method: str | None = None, confidence: float = 0.95,
              bootstrap_rng: str | None = None, bootstrap: str | None = None,
              talk_order: str = "sorted", tie_tolerance: float = 1e-6) -> SignedTable:
    """Paired talk-bootstrap intervals of equal-talk means for any per-talk table (an
    [`eta`][simulplay.api.eta] ``per_talk`` table, numbers from another pipeline, or a paper's per-talk
    values): the table ``simulplay bootstrap`` prints.

    One index matrix (draws × talks) resamples every condition and each pair, so the
    conditions of a talk stay together: ``bootstrap(per_talk, value="eta_s",
    by="condition")`` gives η's intervals. Every talk needs a number under every condition.

    Args:
        table: The per-talk table: a result, a DataFrame or a ``.csv``/``.parquet`` file.
        value: The value column(s). Wide table (one row per talk): a list, each column a
            condition. Long table (with ``by``): one column.
        by: The condition column(s) of a long table (one row per talk and condition); a
            condition is their values joined by ``/``. Default: none (a wide table).
        pair: Differences, each ``"A,B"``: the per-talk A − B of two conditions (value
            columns of a wide table, conditions of a long one), resampled with the same
            draws (default: none). ``pairs=`` is its old name (deprecated).
        talk: The talk id column (default ``"talk_id"``).
        draws: Paired talk-bootstrap draws (default 10,000; ``--draws``).
        seed: The bootstrap seed (default 1032026; 0 is a seed).
        quantile_method: How the interval ends are read off the sorted bootstrap means:
            ``"order:floor((n+1)a)"`` (the default; 10,000 draws at 95 %: the 250th and
            9,751st), ``"order:floor(na)+1"``, ``"order:int(nq)"`` (the ``paper`` preset's)
            or a NumPy quantile method (``"linear"``, ``"inverted_cdf"``, …); None: the
            default, or the preset's. ``method=`` is its old name (deprecated).
        confidence: The interval's coverage, in (0, 1) (default 0.95).
        bootstrap_rng: The generator of the draws × talks index matrix: ``"numpy"``
            (``default_rng(seed)``, the default) or ``"python"`` (``random.Random(seed)``,
            one ``randrange`` per cell; the ``paper`` preset's); None: the default, or the
            preset's. In the signature as ``boot_rng``. ``rng=`` is its old name
            (deprecated).
        bootstrap: A named setting (``--bootstrap``): ``"paper"`` sets
            ``bootstrap_rng="python"`` and ``quantile_method="order:int(nq)"``, which with
            the default seed and draws give every interval Truong & Le (2026) print from
            their per-talk values (with the talks in their table's order,
            ``talk_order="given"``); a different ``bootstrap_rng`` or ``quantile_method``
            with it is an error. None (default): no preset.
        talk_order: Which talk each column of the index matrix is (it changes the draws):
            ``"sorted"`` (default: talk ids as text) or ``"given"`` (the input's order, e.g.
            a paper table's rows). In the signature.
        tie_tolerance: A per-talk value whose magnitude is below this is a tie: taken as 0
            and counted in ``n_zero``, neither negative nor positive (default 1e-6, in the
            values' unit: 1 µs for seconds; ``--tie-tolerance``). In the signature.

    Returns:
        A [`SignedTable`][simulplay.api.SignedTable] with the columns ``condition`` (a value column, a ``by``
        label, or ``A − B`` for a pair), ``n_talks``, ``mean`` (equal-talk), ``ci_low``,
        ``ci_high`` (in the value's unit: seconds for ``_s`` columns), ``n_negative``,
        ``n_zero``, ``n_positive`` (talks below / within ``tie_tolerance`` of / above zero),
        and the small-panel note in ``notes``.

    Raises:
        InputError: a missing column, a cell that is no number, a repeated talk, a talk
            missing under a condition (naming the row), a bad bootstrap setting.
    """
    from simulplay.analysis.table_bootstrap import bootstrap_table

    boot = bootstrap_settings(draws=draws, seed=seed, quantile_method=quantile_method, confidence=confidence,
                              bootstrap_rng=bootstrap_rng, bootstrap=bootstrap, talk_order=talk_order,
                              tie_tolerance=tie_tolerance)
    values = [as_text(value, "value")] if isinstance(value, str) else as_strings(value, "value", "column names")
    keys = as_strings(by, "by", "a column name or a list of them") if by else []
    df, _, source = as_table(table)
    res = bootstrap_table(df, value=values, by=keys, pairs=as_strings(pair, "pair", "'A,B' strings") if pair
                          else [], talk=as_text(talk, "talk"), boot=boot, source=source)
    return SignedTable(fresh(res.table), signatures_of([res.signature] * len(res.table)), dict(res.signature),
                       notes=tuple(res.notes))
