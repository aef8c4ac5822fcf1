"""Writing η results: the one place that turns an :class:`~simulplay.analysis.eta.EtaResult`,
its realization spread and a run's noise check into files (``simulplay eta`` and
``simulplay run`` both call it). The computations stay in :mod:`simulplay.analysis`, which
writes nothing."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from simulplay.analysis.eta import EtaResult
from simulplay.analysis.interaction import combine_interactions
from simulplay.analysis.noise import NoiseCheck
from simulplay.analysis.realizations import RealizationTables
from simulplay.core.tables import write_table


def write_eta_tables(res: EtaResult, out: Path | Sequence[Path], *, per_talk: Path | None = None,
                     contrasts: Path | None = None, interaction: Path | None = None,
                     interaction_per_talk: Path | None = None) -> list[Path]:
    """The η table at ``out`` (one path or several formats; small-panel notes in Markdown
    and Parquet metadata) and each other table whose path is given; the paths written.
    An interaction table is written only when the result holds interactions."""
    paths = [write_table(res.table, p, res.table_signatures, kind="eta", signature_column=True, notes=res.notes)
             for p in ([out] if isinstance(out, Path) else out)]
    if per_talk:
        paths.append(write_table(res.per_talk, per_talk, res.per_talk_signatures, kind="eta-per-talk"))
    if contrasts:
        paths.append(write_table(res.contrasts, contrasts, res.contrast_signatures, kind="contrast",
                                 signature_column=True, notes=res.contrast_notes))
    both = combine_interactions(res.interactions)
    if interaction and both:
        paths.append(write_table(both.table, interaction, both.signatures, kind="interaction",
                                 signature_column=True))
    if interaction_per_talk and both:
        paths.append(write_table(both.per_talk, interaction_per_talk, both.per_talk_signatures,
                                 kind="interaction-per-talk"))
    return paths


def write_realization_tables(tables: RealizationTables, spread_path: Path,
                             summary_path: Path | None = None) -> list[Path]:
    """The per-talk spread at ``spread_path`` and the summary at ``summary_path`` (any
    table format; ``signature`` column in both); the paths written."""
    paths = [write_table(tables.spread, spread_path, tables.spread_signatures, kind="eta-talk-spread",
                         signature_column=True)]
    if summary_path is not None:
        paths.append(write_table(tables.summary, summary_path, tables.summary_signatures, kind="eta-talk-sd",
                                 signature_column=True))
    return paths


def write_noise_check(check: NoiseCheck, out: Path) -> list[Path]:
    """``eta_spread.csv``/``.md``, ``duration_noise.csv`` and, talk by talk,
    ``eta_talk_spread.csv`` and ``eta_talk_sd.csv``/``.md`` in ``out`` (nothing when the run
    has one realization)."""
    if check.spread.empty:
        return []
    paths = [write_table(check.spread, out / f"eta_spread{ext}", check.spread_signatures, kind="eta-spread",
                         signature_column=True) for ext in (".csv", ".md")]
    paths.append(write_table(check.durations, out / "duration_noise.csv", check.duration_signatures,
                             kind="duration-noise", signature_column=True))
    if check.talks is not None:
        paths += write_realization_tables(check.talks, out / "eta_talk_spread.csv", out / "eta_talk_sd.csv")
        paths.append(write_table(check.talks.summary, out / "eta_talk_sd.md", check.talks.summary_signatures,
                                 kind="eta-talk-sd", signature_column=True))
    return paths
