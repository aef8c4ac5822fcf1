"""``simulplay sweep``: a run folder's modelled sweep, its self-check, confirmed points and files.

Reads the run (``run.json``, ``manifest.parquet``, the traces it names, its store; ``simulplay
run`` hands them over in memory, :class:`RunInputs`), models
every grid point (:mod:`simulplay.analysis.sweep`), sets the model beside every measured
condition (:mod:`simulplay.analysis.sweep_check`) and, with ``confirm``, synthesizes the
best unmeasured points for real with the run's backend into the run's store
(:func:`simulplay.synthesis.run.synthesize_to_manifest`: resumable, a killed confirm run
again synthesizes only what is missing). The confirmed requests, with the reference's,
form ``confirmed.parquet`` in the sweep folder, beside the run's own manifest (which stays
as the run wrote it, so its summary and η tables still describe it); a later sweep into
the same folder reads them back as measured points.

Files in the sweep folder (default ``RUN_DIR/sweep``): ``sweep.parquet``/``.csv``/``.md``
(one row per panel × family × grid point), ``sweep_check.parquet``/``.csv``/``.md`` and
``sweep_check_per_talk.csv`` (modelled vs measured), ``sweep_models.csv`` (the fitted
coefficients and their cross-validated error), ``sweep_<k>_<rule>.png``/``.svg`` (one
figure per family), ``confirmed.parquet`` and its chunk table (with ``confirm``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from simulplay.analysis.bootstrap import Bootstrap
from simulplay.analysis.sweep import SweepResult, replay_eta, run_sweep, sweep_service, with_servers
from simulplay.analysis.sweep_check import SweepCheck, check_sweep
from simulplay.core.errors import InputError
from simulplay.core.paths import check_out_folder
from simulplay.core.progress import NO_PROGRESS, Progress
from simulplay.formats.load import read_load_curve
from simulplay.formats.service_spec import as_written, read_slowdown, read_spec_tables
from simulplay.grouping import parse_rule
from simulplay.grouping.grid import MAX_POINTS, RuleGrid, crossed_grids, parse_axis, parse_commit_grids, parse_grids
from simulplay.grouping.registry import canonical_condition
from simulplay.manifest.validate import read_manifest, validate_manifest
from simulplay.report.record import RunRecord, RunSettings
from simulplay.sim.servers import Servers, servers_model
from simulplay.sim.slowdown import parse_flight
from simulplay.synthesis.run import SynthResult
from simulplay.traces import read_traces, streams_from_frame
from simulplay.traces.model import Stream
from simulplay.workflows.sweep_files import measured_columns, pick_points, write_sweep

BY = ("L", "eta")
#: What the duration model's terms are made of: the backend's phonemes where it has a
#: phonemizer (auto), the text's counts, or the phonemes (refused without a phonemizer).
TERMS = ("auto", "text", "phonemes")
CONFIRMED = "confirmed.parquet"


@dataclass
class RunInputs:
    """What a sweep reads from a run folder: settings, the validated manifest and its
    signature, the streams, the backend spec and store, the bootstrap and silent parts."""

    folder: Path
    exp: RunSettings
    manifest: pd.DataFrame
    signature: dict[str, Any]
    streams: list[Stream]
    backend: str
    store: Path
    boot: Bootstrap
    silent: str


def read_run(folder: str | Path, *, revising: bool = False) -> RunInputs:
    """Read and check a run folder written by ``simulplay run`` or ``demo`` (``revising``:
    streams with retractions allowed, for commit policies; a run with policies allows them)."""
    root = Path(folder)
    if not (root / "run.json").is_file() or not (root / "manifest.parquet").is_file():
        raise InputError.at(root, "has no run.json and manifest.parquet",
                            accepted="a run folder written by `simulplay run` or `simulplay demo`")
    exp = RunRecord.read(root / "run.json").settings
    manifest, meta = read_manifest(root / "manifest.parquet")
    missing = [str(p) for p in exp.traces if not p.is_file()]
    if missing or not exp.traces:
        raise InputError.at(root / "run.json", f"trace file(s) not found: {', '.join(missing) or 'none named'}",
                            field="experiment.traces", accepted="the trace files the run was synthesized from")
    from simulplay.traces.select import prepare_streams

    revising = revising or bool(exp.commit)
    streams, _ = prepare_streams(streams_from_frame(read_traces(list(exp.traces)), revising=revising), talks=exp.talks,
                                 events=exp.events, events_flag="the run's events")
    return RunInputs(root, exp, manifest, meta.get("signature", {}), streams, exp.backend, exp.store or root / "store",
                     exp.bootstrap, exp.silent_parts)


@dataclass
class SweepRun:
    """A sweep of a run folder: the modelled result, the sweep table with its measured
    columns, the self-check, the points confirmed by this call and the files written."""

    result: SweepResult
    table: pd.DataFrame
    signatures: list[dict[str, Any]]
    check: SweepCheck
    out: Path
    servers: list[Servers] = field(default_factory=list)
    confirmed: list[str] = field(default_factory=list)
    synth: SynthResult | None = None
    files: list[Path] = field(default_factory=list)


def check_sweep_args(rules: list[str] | list[RuleGrid], *, by: str, confirm: int, service: str = "fit",
                     terms: str = "auto", commits: list[str] | list[RuleGrid] = ()) -> list[RuleGrid]:
    """The arguments that need no run, checked before it is read; the grids (``rules``: the
    ``--rule`` texts, parsed here, or grids parsed before, taken as they are; ``commits``:
    families of commit policies, the same, crossed with the rules)."""
    grids = _grids(list(rules), parse_grids)
    if commits:
        grids = crossed_grids(_grids(list(commits), parse_commit_grids), grids)
    sweep_service(service)
    if terms not in TERMS:
        raise InputError.at(f"--duration-terms '{terms}'", "unknown choice", accepted=", ".join(TERMS))
    if by not in BY:
        raise InputError.at(f"--by '{by}'", "unknown criterion", accepted=" or ".join(BY))
    if confirm < 0:
        raise InputError.at(f"--confirm {confirm}", "is negative", accepted="a number of grid points ≥ 0")
    return grids


def _grids(texts: list, parse) -> list[RuleGrid]:
    return list(texts) if texts and all(isinstance(r, RuleGrid) for r in texts) else parse(list(texts))


def servers_axis(servers: str | None, *, share: str = "panel", load_curve: Path | None = None,
                 service: str = "fit", points: int = 1, slowdown: str | None = None) -> list[Servers]:
    """The shared-server models of ``--servers VALUES`` (the grid syntax: ``1..8``, ``1,2,4``),
    each with ``share``, the load curve's slowdown (none without it) and the calibrated
    ``slowdown`` (a factor or a calibration table; 1 without it); ``[]`` without
    ``--servers``. Shared servers queue the fitted clock's service, so ``service`` must be
    ``fit``; the grid points times the servers stay within :data:`MAX_POINTS`."""
    if servers is None:
        if load_curve is not None or share != "panel" or slowdown is not None:
            what = "--slowdown" if slowdown is not None else "--share/--load-curve"
            raise InputError.at(what, "need --servers VALUES", accepted="--servers VALUES with them, or none of them")
        return []
    if service.strip() != "fit":
        raise InputError.at(f"--service '{service}'", "shared servers queue the fitted clock's service times",
                            accepted="--service fit with --servers")
    ks = parse_axis("servers", servers, kind="int", source="--servers")
    if min(ks) < 1:
        raise InputError.at(f"--servers '{servers}'", f"{min(ks)} servers is not a whole number ≥ 1",
                            accepted="numbers of servers ≥ 1: a value, a list 1,2,4 or a range 1..8")
    if points * len(ks) > MAX_POINTS:
        raise InputError.at(f"--servers '{servers}'", f"the grids reach {points * len(ks):,} points with "
                            f"{len(ks)} numbers of servers, more than {MAX_POINTS:,}",
                            accepted=f"at most {MAX_POINTS:,} grid points × numbers of servers")
    curve = read_load_curve(load_curve) if load_curve is not None else ""
    flight = parse_flight(read_slowdown(slowdown), f"--slowdown '{slowdown}'") if slowdown is not None else ""
    return [servers_model(k, share, "fifo", curve, f"--servers '{servers}'", flight) for k in ks]


def check_train(run: RunInputs, train: list[str]) -> None:
    """Every ``--train`` condition is one the run synthesized."""
    measured = set(run.manifest["condition"])
    for t in train:
        if canonical_condition(t) not in measured:
            raise InputError.at(f"--train '{t}'", "is not a condition of the run",
                                accepted=", ".join(dict.fromkeys(run.manifest["condition"])))


def sweep_run(folder: str | Path | RunInputs, rules: list[str] | list[RuleGrid], *, out: Path | None = None,
              confirm: int = 0, by: str = "L", train: list[str] = (), folds: int = 5, service: str = "fit",
              terms: str = "auto", servers: str | None = None, share: str = "panel", load_curve: Path | None = None,
              slowdown: str | None = None, progress: Progress = NO_PROGRESS,
              commits: list[str] | list[RuleGrid] = ()) -> SweepRun:
    """Model the grids of ``rules`` on the run in ``folder`` (a run folder, or what a run has
    in memory: :class:`RunInputs`), check, confirm and write
    (``terms``: one of :data:`TERMS`; ``servers``: the number of shared servers as a grid
    axis, :func:`servers_axis`; ``commits``: families of commit policies crossed with the
    rules, the table then holding what the listener got under each; the tables a ``servers=K,…``
    service names are read once, :mod:`simulplay.formats.service_spec`)."""
    written, service = service, read_spec_tables(service)
    with as_written(written, service):
        grids = check_sweep_args(list(rules), by=by, confirm=confirm, service=service, terms=terms, commits=commits)
        shared = servers_axis(servers, share=share, load_curve=load_curve, service=service,
                              points=sum(len(g.points) for g in grids), slowdown=slowdown)
    run = folder if isinstance(folder, RunInputs) else read_run(folder, revising=bool(commits))
    check_train(run, list(train))
    out = check_out_folder(Path(out) if out is not None else run.folder / "sweep")
    out.mkdir(parents=True, exist_ok=True)
    confirmed_manifest = _confirmed(run, out)
    phonemize = None if terms == "text" else _phonemizer(run)
    if terms == "phonemes" and phonemize is None:
        raise InputError.at(f"--duration-terms '{terms}'", f"backend {run.backend} has no phonemizer",
                            accepted="auto or text (phonemes: Piper)")
    result = run_sweep(run.streams, run.manifest, grids, a=run.exp.a, f=run.exp.f,
                       reference=run.exp.reference, boot=run.boot, phonemize=phonemize,
                       train=[canonical_condition(t) for t in train] or None, folds=folds, service=service,
                       silent_parts=run.silent, require_phonemes=terms == "phonemes",
                       upstream=run.signature, source=str(run.folder / "manifest.parquet"), servers=shared,
                       listener=bool(commits))
    picked, synth = [], None
    if confirm:
        picked = pick_points(result.table, confirm, by)
        if picked:
            synth = _synthesize(run, out, picked, confirmed_manifest, progress)
            confirmed_manifest = validate_manifest(synth.manifest, str(synth.path))  # as written, in memory
    sweep = _finish(run, result, confirmed_manifest, out, service, shared)
    sweep.confirmed, sweep.synth, sweep.servers = picked, synth, shared
    sweep.files = write_sweep(out, sweep.table, sweep.signatures, result, sweep.check, a=run.exp.a,
                              f=run.exp.f, reference=run.exp.reference)
    return sweep


def _finish(run: RunInputs, result: SweepResult, confirmed: pd.DataFrame | None, out: Path,
            service: str, shared: list[Servers]) -> SweepRun:
    """Replay what was measured (on each number of ``shared`` servers), set it beside the
    model and fill the table's measured columns."""
    extra = confirmed[~confirmed["condition"].isin(set(run.manifest["condition"]))] if confirmed is not None else None
    measured_manifest = run.manifest if extra is None or extra.empty else pd.concat([run.manifest, extra],
                                                                                    ignore_index=True)
    parts = [(None if m is None else m.servers,
              replay_eta(measured_manifest, a=run.exp.a, f=run.exp.f, reference=run.exp.reference,
                         boot=run.boot, service=m or sweep_service(service), silent_parts=run.silent,
                         source=str(run.folder / "manifest.parquet"))) for m in shared or [None]]
    measured = with_servers(parts) if shared else parts[0][1]
    confirmed_conds = set() if extra is None else set(extra["condition"])
    sig = result.signatures[0] if result.signatures else {}
    check = check_sweep(result.modelled, measured, a=run.exp.a, f=run.exp.f,
                        sig={k: v for k, v in sig.items() if k not in ("table", "rule")}, confirmed=confirmed_conds)
    table = measured_columns(result.table, measured, confirmed_conds, a=run.exp.a, f=run.exp.f)
    return SweepRun(result, table, result.signatures, check, out)


def _confirmed(run: RunInputs, out: Path) -> pd.DataFrame | None:
    """The confirmed manifest of an earlier ``--confirm`` into this folder, if any."""
    path = out / CONFIRMED
    return read_manifest(path)[0] if path.is_file() else None


def _phonemizer(run: RunInputs):
    """The backend's own phonemizer (Piper), or None."""
    return run.exp.backend_config(source=str(run.folder / "run.json")).create().phonemizer()


def _synthesize(run: RunInputs, out: Path, picked: list[str], earlier: pd.DataFrame | None,
                progress: Progress) -> SynthResult:
    """Synthesize the reference, the earlier confirmed points and ``picked`` (what the
    store already holds is reused) into ``confirmed.parquet``."""
    from simulplay.store.store import AudioStore
    from simulplay.synthesis.run import synthesize_to_manifest

    before = [] if earlier is None else [c for c in dict.fromkeys(earlier["condition"])]
    conds = list(dict.fromkeys([canonical_condition(run.exp.reference), *before, *picked]))
    config = run.exp.backend_config(source=str(run.folder / "run.json"))
    return synthesize_to_manifest(run.streams, [parse_rule(c) for c in conds], config, AudioStore.open(run.store),
                                  out / CONFIRMED, realizations=run.exp.realizations,
                                  order=run.exp.order, max_chars=run.exp.max_chars,
                                  progress=progress, traces=list(run.exp.traces))
