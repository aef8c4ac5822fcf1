"""Modelled sweeps: η and the end offset L over a grid of a grouping rule's parameters.

For every grid point the run's traces are grouped under the rule
(:mod:`simulplay.grouping.vectorized`), each request's audio and service seconds are
predicted by the run's own models (:mod:`simulplay.durationmodel.modelled`), and the predicted
manifest goes through the same :func:`~simulplay.sim.replay` and
:func:`~simulplay.analysis.compute_eta` as a measured one: δ, η against the run's
reference (modelled too), its parts and the paired talk-bootstrap interval. ``L`` is a
talk's end offset (``offset_s``: when its last audio ends, seconds after the source
ends), averaged over talks per system with an interval from the same index matrix. Every
value is modelled; the run's measured conditions are modelled as well and set beside
their measurements (:mod:`simulplay.analysis.sweep_check`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from simulplay.analysis.bootstrap import Bootstrap
from simulplay.analysis.eta import compute_eta
from simulplay.analysis.sweep_commit import commit_tables, listener_columns
from simulplay.core.errors import InputError
from simulplay.core.keys import RUN_PANEL_KEYS, present
from simulplay.core.signature import base_signature, merge
from simulplay.durationmodel.fit import Phonemizer, update_counts
from simulplay.durationmodel.loop import loop_manifest
from simulplay.durationmodel.modelled import PanelModel, fit_models, predicted_manifest
from simulplay.grouping.grid import RuleGrid
from simulplay.grouping.policy import closed_loop_condition
from simulplay.grouping.registry import canonical_condition, parse_rule
from simulplay.sim.replay import replay
from simulplay.sim.servers import Servers
from simulplay.sim.variants import Measured, ServiceModel, parse_service
from simulplay.traces.model import Stream

#: A sweep's panel keys: the run's panels and, with a servers axis, the number of servers.
SWEEP_KEYS = (*RUN_PANEL_KEYS, "servers")
MODELLED = "modelled durations and service times (a model of the run's requests, not a measurement)"
ETA_PARTS = ("eta_s", "ci_low_s", "ci_high_s", "n_negative", "n_zero", "n_positive", "duration_part_s",
             "idle_part_s", "delta_s")


@dataclass
class Modelled:
    """A replay of a predicted manifest: its η table (panel × condition) and per-talk
    effects, and L per panel, condition and system (mean over talks and interval), with
    the talks' own L; all seconds."""

    manifest: pd.DataFrame
    summary: pd.DataFrame
    eta: pd.DataFrame
    eta_per_talk: pd.DataFrame
    ends: pd.DataFrame  # panel keys, condition, system, L_s, L_low_s, L_high_s, n_requests
    ends_per_talk: pd.DataFrame  # panel keys, condition, system, talk_id, L_s
    signatures: list[dict[str, Any]] = field(default_factory=list)  # one per eta row


def sweep_service(text: str, source: str = "--service") -> ServiceModel:
    """The service model both sides of a sweep are replayed with: ``fit`` (default) replays
    the modelled requests with the fitted clock and the measured ones with their measured
    times; ``zero`` and ``scale=F`` apply to both sides as in ``simulplay replay``."""
    if text.strip() == "fit":
        return Measured()
    model = parse_service(text, source=source)
    if model.name in ("measured", "fit"):
        raise InputError.at(f"{source} '{text}'", "modelled requests have no measured service time",
                            accepted="fit (the modelled clock), zero or scale=F")
    return model


def replay_eta(manifest: pd.DataFrame, *, a: str, f: str, reference: str, boot: Bootstrap,
               service: ServiceModel | None = None, silent_parts: str = "skip",
               upstream: dict[str, Any] | None = None, source: str = "manifest") -> Modelled:
    """Replay ``manifest`` (request release, its ``service_s`` under ``service``, measured
    by default) and compute η exactly as ``simulplay replay`` and ``simulplay eta`` do,
    plus L per system."""
    rep = replay(manifest, service=service, upstream=upstream, source=source, silent_parts=silent_parts)
    eta = compute_eta(rep.summary, a=a, f=f, reference=reference, boot=boot, upstream=rep.signatures,
                      source=source)
    ends, per_talk = end_offsets(rep.summary, boot)
    return Modelled(manifest, rep.summary, eta.table, eta.per_talk, ends, per_talk, eta.table_signatures)


def with_servers(parts: Sequence[tuple[int, Modelled]]) -> Modelled:
    """The replays of one manifest on K servers each, stacked: every table gains the
    column ``servers`` (K) after the panel keys; the first part's manifest."""
    def stack(name: str) -> pd.DataFrame:
        frames = []
        for k, m in parts:
            df = getattr(m, name).copy()
            df.insert(len(present(RUN_PANEL_KEYS, df)), "servers", k)
            frames.append(df)
        return pd.concat(frames, ignore_index=True)

    return Modelled(parts[0][1].manifest, stack("summary"), stack("eta"), stack("eta_per_talk"), stack("ends"),
                    stack("ends_per_talk"), [s for _, m in parts for s in m.signatures])


def end_offsets(summary: pd.DataFrame, boot: Bootstrap) -> tuple[pd.DataFrame, pd.DataFrame]:
    """L per panel, condition and system: the equal-talk mean of ``offset_s`` with its
    paired talk-bootstrap interval (one index matrix per panel, talks in ``boot``'s order, as η), and
    the requests of those outputs summed (``n_requests``)."""
    keys = present(RUN_PANEL_KEYS, summary)
    rows = []
    conds = summary
    panels = conds.groupby(keys, sort=False) if keys else [((), conds)]
    for key, panel in panels:
        pk = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
        talks = boot.order_talks(panel["talk_id"])
        idx = boot.indices(len(talks))
        for (cond, system), g in panel.groupby(["condition", "system"], sort=False):
            values = g.set_index("talk_id")["offset_s"].reindex(talks).to_numpy(float)
            low, high = boot.interval(values, idx) if np.isfinite(values).all() else (np.nan, np.nan)
            rows.append({**pk, "condition": cond, "system": system, "L_s": float(np.mean(values)),
                         "L_low_s": low, "L_high_s": high, "n_requests": int(g["n_parts"].sum())})
    per_talk = conds[[*keys, "condition", "system", "talk_id", "offset_s"]].rename(columns={"offset_s": "L_s"})
    return pd.DataFrame(rows), per_talk.reset_index(drop=True)


@dataclass
class SweepResult:
    """The sweep table (one row per panel × family × grid point) with its signatures, the
    fitted models, and the modelled replay of the grid and of the run's measured conditions."""

    table: pd.DataFrame
    signatures: list[dict[str, Any]]
    models: list[PanelModel]
    modelled: Modelled
    grids: list[RuleGrid]


def run_sweep(streams: Sequence[Stream], manifest: pd.DataFrame, grids: Sequence[RuleGrid], *, a: str, f: str,
              reference: str, boot: Bootstrap, phonemize: Phonemizer | None = None,
              train: Collection[str] | None = None, folds: int = 5, service: str = "fit",
              silent_parts: str = "skip", require_phonemes: bool = False, upstream: dict[str, Any] | None = None,
              source: str = "manifest", servers: Sequence[Servers] = (), listener: bool = False) -> SweepResult:
    """Fit the models on ``manifest`` (a validated run manifest of ``streams``; ``phonemize``
    the backend's phonemizer, or None: the text features) and model every grid point, the
    reference and every measured condition (see the module docstring); ``service`` as
    :func:`sweep_service` reads it. ``servers``: a grid axis of shared-server models
    (:mod:`simulplay.sim.servers`, over the fitted clock), each grid point replayed on each;
    the table gains the column ``servers`` and every row's signature the model's keys.
    A condition after a commit policy groups what the policy commits
    (:mod:`simulplay.analysis.sweep_commit`; a closed-loop one runs its policy on it, in the
    engine, as synthesis does); ``listener``: the table gains what the
    listener got under each point's policy (exact, no model)."""
    model = sweep_service(service)
    reference = canonical_condition(reference)
    # every measured condition is modelled beside its measurement (a framework rule's spans from their
    # text; its requests are not fitted)
    measured = list(dict.fromkeys(manifest["condition"]))
    conditions = list(dict.fromkeys([reference, *measured, *(r.canonical() for g in grids for r in g.rules())]))
    loops = [c for c in conditions if closed_loop_condition(c)]
    opens = [c for c in conditions if c not in loops]
    committed = commit_tables(streams, [parse_rule(c) for c in [*manifest["condition"].unique(), *conditions]])
    table = committed.table
    counts = update_counts(table, phonemize)
    train = None if train is None else {canonical_condition(t) for t in train}
    open_loop = ~manifest["condition"].map(closed_loop_condition).to_numpy(bool)  # the models learn from these
    models = fit_models(manifest[open_loop].reset_index(drop=True), table, counts, train=train, folds=folds,
                        source=source, require_phonemes=require_phonemes, group=committed.group)
    groups = committed.group([parse_rule(c) for c in opens])
    predicted = predicted_manifest(table, counts, groups, opens, models)
    if loops:  # closed-loop policies run in the engine on the models' durations and clock
        predicted = pd.concat([predicted, loop_manifest(table, counts, loops, models,
                                                        service_factor=getattr(model, "factor", 1.0),
                                                        blocks=[committed.block(c) for c in loops])],
                              ignore_index=True)
    sig = merge(upstream, base_signature(model=MODELLED, durations=_described(models, "durations"),
                                         service_fit=_described(models, "service") if service == "fit" else None))
    row_sig = merge(sig, {"service": service.strip(), "silent": silent_parts, "release": "request"})
    parts, tables, sigs = [], [], []
    for shared in servers or [None]:
        modelled = replay_eta(predicted, a=a, f=f, reference=reference, boot=boot, service=shared or model,
                              silent_parts=silent_parts, upstream=sig, source=f"{source} (modelled)")
        extra = {} if shared is None else shared.output_signature({})
        rows, row_sigs = sweep_rows(modelled, grids, set(measured), reference, boot, merge(row_sig, extra),
                                    a=a, f=f, servers=None if shared is None else shared.servers)
        parts.append((extra.get("servers"), modelled))
        tables.append(rows)
        sigs += row_sigs
    modelled = with_servers(parts) if servers else parts[0][1]
    table = pd.concat(tables, ignore_index=True)
    if listener:
        table = listener_columns(table, committed, streams, a=a, f=f)
    return SweepResult(table, sigs, models, modelled, list(grids))


def _described(models: Sequence[PanelModel], which: str) -> str:
    parts = [(m.label() + ": " if m.label() else "") +
             (m.durations.describe() if which == "durations" else m.service.describe()) for m in models]
    return "; ".join(parts)


def sweep_rows(modelled: Modelled, grids: Sequence[RuleGrid], measured: set[str], reference: str,
               boot: Bootstrap, sig: dict[str, Any], *, a: str, f: str,
               servers: int | None = None) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """One row per panel × family × grid point: the point's parameters (and ``servers``,
    the number of shared servers, when given), modelled η (with interval, parts and
    direction counts) and L of A and F (with intervals), requests per system, and whether
    the run measured the point (``measured``)."""
    keys = present(RUN_PANEL_KEYS, modelled.eta)
    eta = modelled.eta.set_index([*keys, "condition"])
    ends = modelled.ends
    params = list(dict.fromkeys(k for g in grids for k in g.values))
    panels = modelled.ends[keys].drop_duplicates().itertuples(index=False) if keys else [()]
    rows, sigs = [], []
    for pk in panels:
        pk = dict(zip(keys, pk))
        at = np.ones(len(ends), bool)
        for k, v in pk.items():
            at &= (ends[k] == v).to_numpy()
        for grid in grids:
            for rule, values in grid.points:
                cond = rule.canonical()
                row: dict[str, Any] = {"family": grid.text, "rule": cond, **{p: values.get(p) for p in params},
                                       **({} if servers is None else {"servers": servers}), **pk}
                e = eta.loc[tuple(pk.values()) + (cond,)] if cond != reference else None
                row["n_talks"] = int(e["n_talks"]) if e is not None else _talks(modelled, pk)
                for col in ETA_PARTS:
                    row[f"modelled_{col}"] = e[col] if e is not None else _reference_value(col, row["n_talks"])
                for tag, system in (("a", a), ("f", f)):
                    end = ends[at & (ends["condition"] == cond).to_numpy() & (ends["system"] == system).to_numpy()]
                    row[f"n_requests_{tag}"] = int(end["n_requests"].iloc[0])
                    for col in ("L_s", "L_low_s", "L_high_s"):
                        row[f"modelled_{col[:-2]}_{tag}_s"] = float(end[col].iloc[0])
                row["measured"] = cond in measured
                rows.append(row)
                policy = getattr(rule, "policy", None)  # a condition after a commit policy
                oracle = {"oracle": "non-causal"} if policy is not None and not policy.causal else {}
                sigs.append(merge(sig, {"table": "sweep", "rule": cond, **oracle}, pk, boot.signature()))
    return pd.DataFrame(rows), sigs


def _talks(modelled: Modelled, pk: dict[str, Any]) -> int:
    s = modelled.summary
    for k, v in pk.items():
        s = s[s[k] == v]
    return int(s["talk_id"].nunique())


def _reference_value(column: str, n_talks: int) -> float | int:
    """The reference condition's own η columns: η = 0 for every talk (all ties)."""
    return n_talks if column == "n_zero" else 0 if column.startswith("n_") else 0.0
