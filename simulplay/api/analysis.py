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
    frame_of,
)
from simulplay.api.results import (
    EtaOutput,
    ReplayOutput,
    SignedTable,
    SweepOutput,
    fresh,
    shared_signature,
    signatures_of,
)
from simulplay.core.errors import InputError

RUN_FOLDER = "a run folder written by `simulplay run` or `simulplay demo`"


def eta(summary: ReplayOutput | SignedTable | pd.DataFrame | PathLike, *, a: str, f: str, reference: str,
        contrasts: Sequence[str | tuple[str, str]] = (), interactions: Sequence[str | tuple[str, str]] = (),
        allow_incomplete: bool = False, **options: Any) -> EtaOutput:
    """η of translator ``a`` against ``f`` under each grouping condition, against the
    ``reference`` condition, with paired talk-bootstrap intervals (``simulplay eta``).

    δ = L(a) − L(f) per talk (L: ``offset_s``, seconds; negative: ``a`` finishes earlier),
    η = δ(condition) − δ(reference), averaged with equal weight per talk; one index matrix
    per panel (backend, realization). ``summary``: a :func:`replay` result (its rows'
    signatures go into η's), a summary DataFrame or its file. Returns an
    :class:`EtaOutput`: the η table (``n_talks, delta_ref_s, delta_s, eta_s, ci_low_s,
    ci_high_s, n_negative, n_positive, duration_part_s, idle_part_s``, seconds), the
    per-talk rows, the ``contrasts`` (pairs ``"P1,P2"`` or tuples: δ(P1) − δ(P2)) and,
    for backend pairs in ``interactions``, the cross-backend interaction, each with its
    signatures, and the small-panel notes (fewer than 10 talks). ``options`` are the
    fields of :class:`~simulplay.analysis.bootstrap.Bootstrap` (``draws``, ``seed``,
    ``method``, ``confidence``, …), passed through.
    """
    from simulplay.analysis import compute_eta, read_summary
    from simulplay.analysis.eta import validate_summary
    from simulplay.analysis.interaction import combine_interactions, parse_backend_pair
    from simulplay.grouping import parse_pair

    names = {k: as_text(v, k) for k, v in (("a", a), ("f", f), ("reference", reference))}
    pairs = [as_pair(p, "contrasts", parse_pair) for p in as_sequence(contrasts, "contrasts")]
    backends = [as_pair(p, "interactions", parse_backend_pair) for p in as_sequence(interactions, "interactions")]
    boot = as_bootstrap(options)
    given = frame_of(summary, "summary")
    if given is not None:
        source, upstream = "summary", given[1]
        df = validate_summary(given[0], source)
    else:
        source = str(as_path(summary, "summary", "a summary DataFrame or file"))
        df, upstream = read_summary(source)
    res = compute_eta(df, **names, boot=boot, contrasts=pairs, interactions=backends, upstream=upstream,
                      allow_incomplete=as_flag(allow_incomplete, "allow_incomplete"), source=source)
    both = combine_interactions(res.interactions)
    sigs = signatures_of(res.table_signatures)
    return EtaOutput(fresh(res.table), sigs, fresh(res.per_talk), signatures_of(res.per_talk_signatures),
                     fresh(res.contrasts), signatures_of(res.contrast_signatures),
                     None if both is None else both.table, None if both is None else signatures_of(both.signatures),
                     None if both is None else both.per_talk,
                     None if both is None else signatures_of(both.per_talk_signatures), shared_signature(sigs),
                     tuple(res.notes), tuple(res.contrast_notes), tuple(res.excluded))


def bootstrap(table: SignedTable | pd.DataFrame | PathLike, *, value: str | Sequence[str],
              by: str | Sequence[str] = (), pairs: Sequence[str] = (), talk: str = "talk_id",
              **options: Any) -> SignedTable:
    """Paired talk-bootstrap intervals of equal-talk means for any per-talk table (an
    :func:`eta` ``per_talk`` table, or numbers from another pipeline) — the table
    ``simulplay bootstrap`` writes.

    Wide: one row per talk, ``value`` the condition columns (a list). Long: ``value`` one
    column and ``by`` the condition column(s) (one row per talk and condition; every talk
    under every condition). One index matrix resamples every condition and each difference
    in ``pairs`` (``"A,B"``: A − B per talk), so conditions of a talk stay together:
    ``bootstrap(per_talk, value="eta_s", by="condition")`` gives η's intervals.
    ``options`` (``draws``, ``seed``, ``method``, ``confidence``, ``rng``, ``talk_order``…)
    go to :class:`~simulplay.analysis.bootstrap.Bootstrap`. Returns a
    :class:`SignedTable` with the columns condition, n_talks, mean, ci_low, ci_high (in
    the value's unit: seconds for ``_s`` columns), n_negative, n_positive (talks below /
    above zero), and the small-panel note in ``notes``.
    """
    from simulplay.analysis.table_bootstrap import bootstrap_table

    boot = as_bootstrap(options)
    values = [as_text(value, "value")] if isinstance(value, str) else as_strings(value, "value", "column names")
    keys = as_strings(by, "by", "a column name or a list of them") if by else []
    df, _, source = as_table(table)
    res = bootstrap_table(df, value=values, by=keys, pairs=as_strings(pairs, "pairs", "'A,B' strings") if pairs
                          else [], talk=as_text(talk, "talk"), boot=boot, source=source)
    return SignedTable(fresh(res.table), signatures_of([res.signature] * len(res.table)), dict(res.signature),
                       notes=tuple(res.notes))


@dataclasses.dataclass(frozen=True)
class Run:
    """A run folder written by ``simulplay run`` or ``simulplay demo``, each table a
    :class:`SignedTable` (the rows, their signatures, the file it came from). Tables keep
    the files' columns (an η table its ``signature`` column, the display string of each
    row's signature).

    Attributes:
        folder: the run folder.
        record: ``run.json``.
        a: the experiment's translator A.
        f: its translator F.
        reference: its reference condition.
        rules: its grouping rules.
        manifest: the request manifest.
        summary: the playback summary (seconds); :func:`eta` takes it.
        eta: the η table.
        per_talk: its per-talk rows.
        contrasts: the contrasts (None when the run has none).
        variants: each sensitivity replay's η table, by name (e.g. ``service-zero``).
        tables: the other tables present (``latency``, ``eta_edges``, ``content``, …).
        traces: the traces named in ``run.json`` (None when a file is missing; ``notes``
            says so).
        notes: what could not be read, and why.
    """

    folder: Path
    record: dict[str, Any]
    a: str
    f: str
    reference: str
    rules: list[str]
    manifest: SignedTable
    summary: SignedTable
    eta: SignedTable
    per_talk: SignedTable
    contrasts: SignedTable | None
    variants: dict[str, SignedTable]
    tables: dict[str, SignedTable]
    traces: SignedTable | None
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
        if t is None:
            return None
        sigs = signatures_of(t.signatures)
        return SignedTable(fresh(t.frame), sigs, shared_signature(sigs), (str(t.path),))

    return Run(data.folder, data.record, data.a, data.f, data.reference, data.rules, frame(data.manifest),
               frame(data.summary), frame(data.eta), frame(data.per_talk), frame(data.contrasts),
               {k: frame(v) for k, v in data.variants.items()}, {k: frame(v) for k, v in data.optional.items()},
               None if data.traces is None else SignedTable(fresh(data.traces), signature=dict(data.trace_signature)),
               list(data.notes))


def sweep(run_dir: PathLike, rules: str | Sequence[str], *, out: PathLike | None = None, confirm: int = 0,
          by: str = "L", train: str | Sequence[str] = (), folds: int = 5, service: str = "fit",
          duration_terms: str = "auto", servers: str | int | Sequence[int] | None = None, share: str = "panel",
          load_curve: PathLike | None = None, progress: Any = None) -> SweepOutput:
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
    ``phonemes``. ``servers``: the number of shared TTS servers as a grid axis (``"1..8"``,
    ``[1, 2, 4]`` or ``4``; with ``share`` and ``load_curve`` as ``simulplay replay --servers``
    reads them, docs/many-listeners.md): every point replayed on each, the table gaining the
    column ``servers``. ``progress``: a :class:`~simulplay.core.progress.Progress` that
    the confirming synthesis reports to (None: nothing).

    Returns a :class:`SweepOutput`. Its ``table`` holds the rows of ``sweep.parquet`` (its
    ``signature`` column left out): one per panel (backend, realization) × family × grid
    point with ``family``,
    ``rule``, the grid's parameters, ``modelled_eta_s`` and its interval
    ``modelled_ci_low_s``/``modelled_ci_high_s``, ``modelled_L_a_s``/``modelled_L_f_s``
    with theirs, ``n_requests_a``/``n_requests_f``, ``measured``, ``confirmed`` and the
    measured η and L with their intervals (NaN where the point was not synthesized); times
    in seconds. Every ``modelled_`` value is a model's, not a measurement. Beside it: the
    self-check ``check`` (modelled vs measured per panel and measured condition,
    ``sweep_check.parquet``) and ``check_per_talk``, the fitted ``models``
    (``sweep_models.csv``), each with its own signatures; ``notes``: the self-check's
    summary and its warnings (each also issued as a Python warning); ``confirmed``: the
    rules this call synthesized; ``path``: the ``sweep.parquet`` written.
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
                    servers=_servers_text(servers), share=as_text(share, "share"),
                    load_curve=None if load_curve is None else as_path(load_curve, "load_curve", "a load table"),
                    progress=progress or NO_PROGRESS)
    check = res.check
    for w in check.warnings:
        warnings.warn(w, stacklevel=2)
    models, model_signatures = model_table(res.result, res.signatures)
    sigs = signatures_of(res.signatures)
    return SweepOutput(fresh(res.table), sigs, shared_signature(sigs), fresh(check.table),
                       signatures_of(check.signatures), fresh(check.per_talk),
                       signatures_of(check.per_talk_signatures), fresh(models), signatures_of(model_signatures),
                       (check.summary, *check.warnings), tuple(res.confirmed), str(res.out / "sweep.parquet"))


def _servers_text(servers: str | int | Sequence[int] | None) -> str | None:
    """``servers`` as ``--servers`` reads it: a text as it is, a number or a list joined."""
    if servers is None or isinstance(servers, str):
        return servers
    if isinstance(servers, bool):
        raise InputError.at("servers", f"is {servers!r}", accepted="a number of servers, a list of them or '1..8'")
    if isinstance(servers, int):
        return str(servers)
    values = list(servers)
    if not values or not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        raise InputError.at("servers", f"is {servers!r}", accepted="a number of servers, a list of them or '1..8'")
    return ",".join(map(str, values))
