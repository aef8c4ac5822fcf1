"""Comparisons and runs for notebooks: η, the paired talk bootstrap of any per-talk table,
a run folder read back and its modelled sweep (``simulplay.eta``, ``bootstrap``,
``load_run``, ``sweep``)."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from simulplay.api.checks import (
    PathLike,
    as_bootstrap,
    as_choice,
    as_flag,
    as_pair,
    as_path,
    as_sequence,
    as_strings,
    as_table,
    as_text,
    row_signatures,
    signed,
)
from simulplay.core.errors import InputError

ETA_TABLES = ("eta", "per_talk", "contrasts", "interaction", "interaction_per_talk")
RUN_FOLDER = "a run folder written by `simulplay run` or `simulplay demo`"


def eta(summary: pd.DataFrame | PathLike, *, a: str, f: str, reference: str,
        contrasts: Sequence[str | tuple[str, str]] = (), interactions: Sequence[str | tuple[str, str]] = (),
        allow_incomplete: bool = False, table: str = "eta", **options: Any) -> pd.DataFrame:
    """η of translator ``a`` against ``f`` under each grouping condition, against the
    ``reference`` condition, with paired talk-bootstrap intervals (``simulplay eta``).

    δ = L(a) − L(f) per talk (L: ``offset_s``, seconds; negative: ``a`` finishes earlier),
    η = δ(condition) − δ(reference), averaged with equal weight per talk; one index matrix
    per panel (backend, realization). ``summary``: a :func:`replay` summary or its file.
    ``table``: ``eta`` (``n_talks, delta_ref_s, delta_s, eta_s, ci_low_s, ci_high_s,
    n_negative, n_positive, duration_part_s, idle_part_s``, seconds), ``per_talk``,
    ``contrasts`` (``contrasts``: pairs ``"P1,P2"`` or tuples, δ(P1) − δ(P2)),
    ``interaction`` or ``interaction_per_talk`` (``interactions``: backend pairs).
    ``options`` are the fields of :class:`~simulplay.analysis.bootstrap.Bootstrap`
    (``draws``, ``seed``, ``method``, ``confidence``, …), passed through.
    ``attrs["notes"]``: the small-panel notes (fewer than 10 talks).
    """
    from simulplay.analysis import compute_eta, read_summary
    from simulplay.analysis.eta import validate_summary
    from simulplay.analysis.interaction import parse_backend_pair
    from simulplay.grouping import parse_pair
    from simulplay.workflows.eta_tables import interaction_table

    what = as_choice(table, "table", ETA_TABLES)
    names = {k: as_text(v, k) for k, v in (("a", a), ("f", f), ("reference", reference))}
    pairs = [as_pair(p, "contrasts", parse_pair) for p in as_sequence(contrasts, "contrasts")]
    backends = [as_pair(p, "interactions", parse_backend_pair) for p in as_sequence(interactions, "interactions")]
    boot = as_bootstrap(options)
    if isinstance(summary, pd.DataFrame):
        source, upstream = "summary", row_signatures(summary, "summary")
        df = validate_summary(summary, source)
    else:
        source = str(as_path(summary, "summary", "a summary DataFrame or file"))
        df, upstream = read_summary(source)
    res = compute_eta(df, **names, boot=boot, contrasts=pairs, interactions=backends, upstream=upstream,
                      allow_incomplete=as_flag(allow_incomplete, "allow_incomplete"), source=source)
    if what in ("interaction", "interaction_per_talk") and not res.interactions:
        raise InputError.at("table", f"'{what}' needs interactions", accepted="interactions=['B1,B2']")
    frame, sigs, notes = {
        "eta": lambda: (res.table, res.table_signatures, res.notes),
        "per_talk": lambda: (res.per_talk, res.per_talk_signatures, res.notes),
        "contrasts": lambda: (res.contrasts, res.contrast_signatures, res.contrast_notes),
        "interaction": lambda: (*interaction_table(res), []),
        "interaction_per_talk": lambda: (pd.concat([r.per_talk for r in res.interactions], ignore_index=True),
                                         [s for r in res.interactions for s in r.per_talk_signatures], []),
    }[what]()
    return signed(frame, sigs, notes=list(notes), excluded=res.excluded)


def bootstrap(table: pd.DataFrame | PathLike, *, value: str | Sequence[str], by: str | Sequence[str] = (),
              pairs: Sequence[str] = (), talk: str = "talk_id", **options: Any) -> pd.DataFrame:
    """Paired talk-bootstrap intervals of equal-talk means for any per-talk table (an
    :func:`eta` ``per_talk`` table, or numbers from another pipeline) — the table
    ``simulplay bootstrap`` writes.

    Wide: one row per talk, ``value`` the condition columns (a list). Long: ``value`` one
    column and ``by`` the condition column(s) (one row per talk and condition; every talk
    under every condition). One index matrix resamples every condition and each difference
    in ``pairs`` (``"A,B"``: A − B per talk), so conditions of a talk stay together:
    ``bootstrap(per_talk, value="eta_s", by="condition")`` gives η's intervals.
    ``options`` (``draws``, ``seed``, ``method``, ``confidence``, ``rng``, ``talk_order``…)
    go to :class:`~simulplay.analysis.bootstrap.Bootstrap`. Columns: condition, n_talks,
    mean, ci_low, ci_high (in the value's unit: seconds for ``_s`` columns), n_negative,
    n_positive (talks below / above zero). ``attrs["notes"]``: the small-panel note.
    """
    from simulplay.analysis.table_bootstrap import bootstrap_table

    boot = as_bootstrap(options)
    values = [as_text(value, "value")] if isinstance(value, str) else as_strings(value, "value", "column names")
    keys = as_strings(by, "by", "a column name or a list of them") if by else []
    df, _, source = as_table(table)
    res = bootstrap_table(df, value=values, by=keys, pairs=as_strings(pairs, "pairs", "'A,B' strings") if pairs
                          else [], talk=as_text(talk, "talk"), boot=boot, source=source)
    return signed(res.table, [res.signature] * len(res.table), notes=res.notes)


@dataclasses.dataclass
class Run:
    """A run folder written by ``simulplay run`` or ``simulplay demo``, as DataFrames with
    their signatures in ``attrs`` (see the module docstring): the request ``manifest``,
    the playback ``summary`` (seconds), the ``eta`` table and its ``per_talk`` rows, the
    ``contrasts`` (or None), each sensitivity replay's η table in ``variants`` (by name,
    e.g. ``service-zero``), the other tables present in ``tables`` (``latency``,
    ``eta_edges``, ``content``, …) and the ``traces`` named in ``run.json`` (None when a
    file is missing; ``notes`` says so). ``record`` is ``run.json``; ``a``, ``f``,
    ``reference`` and ``rules`` the experiment's. Tables keep the files' columns (an η
    table its ``signature`` column, the display string of each row's signature)."""

    folder: Path
    record: dict[str, Any]
    a: str
    f: str
    reference: str
    rules: list[str]
    manifest: pd.DataFrame
    summary: pd.DataFrame
    eta: pd.DataFrame
    per_talk: pd.DataFrame
    contrasts: pd.DataFrame | None
    variants: dict[str, pd.DataFrame]
    tables: dict[str, pd.DataFrame]
    traces: pd.DataFrame | None
    notes: list[str]


def load_run(folder: PathLike, *, traces: Sequence[PathLike] = ()) -> Run:
    """Read a run folder (``manifest.parquet``, ``summary.parquet``, ``eta.parquet``,
    ``eta_per_talk.csv``, ``run.json`` and the optional tables) the way ``simulplay
    report`` does, checked; ``traces`` replace the trace files ``run.json`` names.
    A table read from CSV keeps its rows' display signatures (strings) where no Parquet
    table of the run holds the structured one."""
    from simulplay.report.load import load_run as load

    root = as_path(folder, "folder", RUN_FOLDER)
    data = load(root, traces=[as_path(p, "traces", "trace file paths") for p in as_sequence(traces, "traces")])

    def frame(t):
        return None if t is None else signed(t.frame, t.signatures, path=str(t.path))

    return Run(data.folder, data.record, data.a, data.f, data.reference, data.rules, frame(data.manifest),
               frame(data.summary), frame(data.eta), frame(data.per_talk), frame(data.contrasts),
               {k: frame(v) for k, v in data.variants.items()}, {k: frame(v) for k, v in data.optional.items()},
               None if data.traces is None else signed(data.traces, signature=data.trace_signature),
               list(data.notes))


def sweep(run_dir: PathLike, rules: str | Sequence[str], *, out: PathLike | None = None, confirm: int = 0,
          by: str = "L", train: str | Sequence[str] = (), folds: int = 5, service: str = "fit",
          duration_terms: str = "auto", progress: Any = None) -> pd.DataFrame:
    """Model η and the end offset L at every point of grids of a grouping rule's parameters
    from a run folder's own requests, check the model against what the run measured, and
    write the sweep's files (``simulplay sweep``, docs/sweeps.md).

    ``rules``: one grid or a list, each a family ``NAME:key=VALUES,…``
    (``timer:w=0.5..8:0.5``, ``words:n=2..16``, ``punct:cap=1..4,min_words=2,3``). ``out``:
    the folder for the files (default ``run_dir/sweep``). ``confirm``: synthesize the K best
    unmeasured points for real with the run's backend into its store, ranked ``by`` ``L``
    (the lowest modelled mean end offset of A and F) or ``eta`` (the most negative modelled
    η). ``train``: fit the models on these conditions of the run only (default: all).
    ``folds``: folds of talks for the duration model's held-out error. ``service``: ``fit``,
    ``zero`` or ``scale=F``. ``duration_terms``: what the duration model reads, ``auto``
    (the backend's phonemes where it has a phonemizer, Piper; else the text), ``text`` or
    ``phonemes``. ``progress``: a :class:`~simulplay.core.progress.Progress` that
    the confirming synthesis reports to (None: nothing).

    Returns the sweep table, the rows of ``sweep.parquet`` (its ``signature`` column left
    out): one per panel (backend, realization) × family × grid point with ``family``,
    ``rule``, the grid's parameters, ``modelled_eta_s`` and its interval
    ``modelled_ci_low_s``/``modelled_ci_high_s``, ``modelled_L_a_s``/``modelled_L_f_s``
    with theirs, ``n_requests_a``/``n_requests_f``, ``measured``, ``confirmed`` and the
    measured η and L with their intervals (NaN where the point was not synthesized); times
    in seconds. Every ``modelled_`` value is a model's, not a measurement. ``attrs``:
    ``signatures`` (one per row) and ``signature``; ``check``: modelled vs measured per
    panel and measured condition (``sweep_check.parquet``), ``check_per_talk`` and
    ``models`` (the fitted models, ``sweep_models.csv``), each a DataFrame with its own
    signatures; ``notes``: the self-check's summary and its warnings (each also issued as a
    Python warning); ``confirmed``: the rules this call synthesized; ``path``: the
    ``sweep.parquet`` written.
    """
    from simulplay.analysis.sweep import sweep_service
    from simulplay.core.progress import NO_PROGRESS
    from simulplay.grouping.grid import parse_grids
    from simulplay.workflows.sweep import BY, TERMS, sweep_run
    from simulplay.workflows.sweep_files import model_table

    root = as_path(run_dir, "run_dir", RUN_FOLDER)
    texts = as_strings(rules, "rules", "a grid such as 'timer:w=0.5..8:0.5', or a list of them")
    if not texts:
        raise InputError.at("rules", "is empty", accepted="at least one grid NAME:key=VALUES")
    parse_grids(texts, source="rules")
    for name, value, least in (("confirm", confirm, 0), ("folds", folds, 2)):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise InputError.at(name, f"is {value!r}", accepted=f"a whole number ≥ {least}")
    sweep_service(as_text(service, "service"), source="service")
    res = sweep_run(root, texts, out=None if out is None else as_path(out, "out", "a folder for the sweep's files"),
                    confirm=confirm, by=as_choice(by, "by", BY), folds=folds, service=service,
                    terms=as_choice(duration_terms, "duration_terms", TERMS),
                    train=as_strings(train, "train", "a condition of the run, or a list of them"),
                    progress=progress or NO_PROGRESS)
    check = res.check
    for w in check.warnings:
        warnings.warn(w, stacklevel=2)
    models, model_signatures = model_table(res.result, res.signatures)
    return signed(res.table, res.signatures, check=signed(check.table, check.signatures),
                  check_per_talk=signed(check.per_talk, check.per_talk_signatures),
                  models=signed(models, model_signatures), notes=[check.summary, *check.warnings],
                  confirmed=list(res.confirmed), path=str(res.out / "sweep.parquet"))
