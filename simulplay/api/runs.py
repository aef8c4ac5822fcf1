"""Run folders for notebooks: a run folder read back and its modelled sweep
(``simulplay.load_run``, ``sweep``)."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from simulplay.api.checks import (
    PathLike,
    as_choice,
    as_path,
    as_sequence,
    as_strings,
    as_text,
    renamed,
    slowdown_text,
)
from simulplay.api.results import SignedTable, SweepOutput, fresh, shared_signature, signatures_of
from simulplay.core.errors import InputError

RUN_FOLDER = "a run folder written by `simulplay run` or `simulplay demo`"


@dataclasses.dataclass(frozen=True)
class Run:
    """A run folder written by ``simulplay run`` or ``simulplay demo``, each table a
    [`SignedTable`][simulplay.api.SignedTable] (the rows, their signatures, the file it came from). Tables keep
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
        summary: the playback summary (seconds); [`eta`][simulplay.api.eta] takes it.
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


@renamed(traces="trace")
def load_run(folder: PathLike, *, trace: Sequence[PathLike] = ()) -> Run:
    """Read a run folder back, checked, as ``simulplay report`` reads it.

    A table read from CSV keeps its rows' display signatures (strings) where no Parquet
    table of the run holds the structured one.

    Args:
        folder: A run folder written by ``simulplay run`` or ``simulplay demo``
            (``manifest.parquet``, ``summary.parquet``, ``eta.parquet``,
            ``eta_per_talk.csv``, ``run.json`` and the optional tables).
        trace: Trace files that replace those ``run.json`` names (a list; default: none,
            the run's own). ``traces=`` is its old name (deprecated).

    Returns:
        A [`Run`][simulplay.api.Run]: each table of the folder as a [`SignedTable`][simulplay.api.SignedTable], the
        experiment's A, F, reference and rules, and ``notes`` on what could not be read.

    Raises:
        InputError: a missing folder or required table, a table that fails its checks.
    """
    from simulplay.report.read_run import load_run as load

    root = as_path(folder, "folder", RUN_FOLDER)
    data = load(root, traces=[as_path(p, "trace", "trace file paths") for p in as_sequence(trace, "trace")])

    def frame(t):
        if t is None:
            return None
        sigs = signatures_of(t.signatures)
        return SignedTable(fresh(t.frame), sigs, shared_signature(sigs), (str(t.path),))

    return Run(data.folder, data.run_record.data, data.a, data.f, data.reference, data.rules, frame(data.manifest),
               frame(data.summary), frame(data.eta), frame(data.per_talk), frame(data.contrasts),
               {k: frame(v) for k, v in data.variants.items()}, {k: frame(v) for k, v in data.optional.items()},
               None if data.traces is None else SignedTable(fresh(data.traces), signature=dict(data.trace_signature)),
               list(data.notes))


@renamed(rules="rule")
def sweep(run_dir: PathLike, rule: str | Sequence[str], *, out: PathLike | None = None, confirm: int = 0,
          by: str = "L", train: str | Sequence[str] = (), service: str = "fit", folds: int = 5,
          duration_terms: str = "auto", servers: str | int | Sequence[int] | None = None, share: str = "panel",
          load_curve: PathLike | None = None, slowdown: float | PathLike | None = None,
          progress: Any = None, commit: str | Sequence[str] = ()) -> SweepOutput:
    """Model η and the end offset L at every point of grids of a grouping rule's parameters
    from a run folder's own requests, check the model against what the run measured, and
    write the sweep's files (``simulplay sweep``, docs/sweeps.md).

    Every ``modelled_`` value is a model's, not a measurement: a duration model and the
    fitted service clock are fitted on the run's requests, and every grid point is
    grouped from the run's traces, replayed and compared as [`replay`][simulplay.api.replay] and
    [`eta`][simulplay.api.eta] do. The run's measured conditions are modelled too and set beside their
    measurements (the self-check).

    Args:
        run_dir: A run folder written by ``simulplay run`` or ``simulplay demo``.
        rule: One grid or a list (``--rule``, repeatable), each a rule family
            ``NAME:key=VALUES,…``; VALUES a value, a list ``1,2,4``, a range of integers
            ``a..b`` or ``a..b:step`` (from a in steps up to b; b only when on a step:
            ``0.5..7.9:0.5`` ends at 7.5): ``"timer:w=0.5..8:0.5"`` (w in seconds),
            ``"words:n=2..16"``, ``"punct:cap=1..4,min_words=2,3"``. At most 10,000 points
            in all. ``rules=`` is its old name (deprecated).
        out: The folder for the sweep's tables and figures (default None:
            ``run_dir/sweep``).
        confirm: Synthesize the K best unmeasured grid points for real with the run's
            backend, into its store (resumable), and set them beside the model (default
            0: none).
        by: What ``confirm`` ranks by: ``"L"`` (default: the lowest modelled mean end
            offset of A and F) or ``"eta"`` (the most negative modelled η).
        train: Fit the models on these conditions of the run only (one or a list;
            default: every condition it synthesized).
        service: ``"fit"`` (default: modelled requests on the fitted clock, measured ones
            on their measured times), ``"zero"`` or ``"scale=F"`` (both sides replayed so;
            ``zero`` isolates the duration model).
        folds: Folds of talks for the duration model's held-out error (a whole number ≥ 2,
            default 5).
        duration_terms: What the duration model reads: ``"auto"`` (default: the
            backend's phonemes where it has a phonemizer, Piper; else the text),
            ``"text"`` (characters, words, punctuation, sentence end) or ``"phonemes"``.
        servers: The number of shared TTS servers as a grid axis (``--servers``): ``"1..8"``,
            ``[1, 2, 4]`` or ``4`` (default None: every output its own synthesizer). Every
            point is replayed on each number, the table gaining the column ``servers``
            (docs/many-listeners.md); needs ``service="fit"``.
        share: Which outputs share the servers, with ``servers``: ``"panel"`` (default),
            ``"talk"``, ``"system"`` or ``"output"``.
        load_curve: A ``simulplay load`` table whose median service at each concurrency over
            the level-1 median gives the slowdown (default None: no slowdown), with ``servers``.
        slowdown: The calibrated slowdown, with ``servers``: a factor or a calibration
            table's file (``in_flight``, ``slowdown``), as in [`replay`][simulplay.api.replay]
            (default None: 1).
        progress: A ``Progress`` (``simulplay.core.progress.Progress``) that the confirming
            synthesis reports to (default None: nothing; the command line shows a
            progress bar unless ``--quiet``).
        commit: Families of commit policies in the grid's syntax (``--commit``, one or a
            list): ``"stable:k=1..4"``, ``"hold:t=0.25..2:0.25"``, ``"mask:k=0..6"``,
            ``"final"``; each crossed with every grid of ``rule`` (conditions
            ``POLICY+RULE``, the run's traces may revise), the table gaining ``commit``
            and, per translator, ``spoken_then_retracted_a``/``_f``,
            ``retracted_per_min_a``/``_f``, ``wer_pct_a``/``_f`` and ``cer_pct_a``/``_f``:
            what the listener got, exact (default: none; docs/retranslation.md).

    Returns:
        A [`SweepOutput`][simulplay.api.SweepOutput]. Its ``table`` holds the rows of ``sweep.parquet`` (its
        ``signature`` column left out): one per panel (backend, realization) × family ×
        grid point with ``family``, ``rule``, the grid's parameters, ``modelled_eta_s``
        and its interval ``modelled_ci_low_s``/``modelled_ci_high_s``,
        ``modelled_L_a_s``/``modelled_L_f_s`` with theirs,
        ``n_requests_a``/``n_requests_f``, ``measured``, ``confirmed`` and the measured η
        and L with their intervals (NaN where the point was not synthesized); times in
        seconds. Beside it: the self-check ``check`` (modelled vs measured per panel and
        measured condition, ``sweep_check.parquet``) and ``check_per_talk``, the fitted
        ``models`` (``sweep_models.csv``), each with its own signatures; ``notes``: the
        self-check's summary and its warnings (each also issued as a Python warning);
        ``confirmed``: the rules this call synthesized; ``path``: the ``sweep.parquet``
        written.

    Raises:
        InputError: an empty or malformed grid, an unknown rule, a bad ``confirm``,
            ``by``, ``folds``, ``service`` or ``duration_terms``, a folder that is not a
            run.
    """
    from simulplay.analysis.sweep import sweep_service
    from simulplay.core.progress import NO_PROGRESS
    from simulplay.formats.service_spec import as_written, read_spec_tables
    from simulplay.grouping.grid import parse_grids
    from simulplay.workflows.sweep import BY, TERMS, sweep_run
    from simulplay.workflows.sweep_files import model_table

    root = as_path(run_dir, "run_dir", RUN_FOLDER)
    texts = as_strings(rule, "rule", "a grid such as 'timer:w=0.5..8:0.5', or a list of them")
    if not texts:
        raise InputError.at("rule", "is empty", accepted="at least one grid NAME:key=VALUES")
    parse_grids(texts, source="rule")
    for name, value, least in (("confirm", confirm, 0), ("folds", folds, 2)):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise InputError.at(name, f"is {value!r}", accepted=f"a whole number ≥ {least}")
    written = as_text(service, "service")
    service = read_spec_tables(written)  # the tables a servers=K,… service names, read once
    with as_written(written, service):
        sweep_service(service, source="service")
    res = sweep_run(root, texts, out=None if out is None else as_path(out, "out", "a folder for the sweep's files"),
                    confirm=confirm, by=as_choice(by, "by", BY), folds=folds, service=service,
                    terms=as_choice(duration_terms, "duration_terms", TERMS),
                    train=as_strings(train, "train", "a condition of the run, or a list of them"),
                    servers=_servers_text(servers), share=as_text(share, "share"),
                    load_curve=None if load_curve is None else as_path(load_curve, "load_curve", "a load table"),
                    slowdown=slowdown_text(slowdown),
                    progress=progress or NO_PROGRESS,
                    commits=as_strings(commit, "commit", "a family of commit policies, or a list of them"))
    check = res.check
    for w in check.warnings:
        warnings.warn(w, stacklevel=3)  # the caller of sweep, past @renamed
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
