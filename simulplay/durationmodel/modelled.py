"""Modelled manifests: the requests of any grouping, with modelled audio and service times.

A run's manifest holds real requests (text, audio seconds, measured service seconds)
under the conditions it synthesized. :func:`fit_models` fits, per panel (backend and
realization), the duration model (:mod:`simulplay.durationmodel.fit`) and the service clock
(:mod:`simulplay.sim.servicefit`: LAD on audio seconds and characters) on those requests,
after checking that grouping the run's traces reproduces them request for request.
:func:`predicted_manifest` then writes a manifest for any set of rules whose ``audio_s``
(with ``n_samples`` at the panel's sample rate) and ``service_s`` are the models'
predictions: a manifest like any other, for :func:`simulplay.sim.replay` and η.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from simulplay.core.errors import InputError
from simulplay.core.keys import OUTPUT_KEYS, RUN_PANEL_KEYS, present
from simulplay.durationmodel.features import anchor_spans
from simulplay.durationmodel.fit import (
    DurationFit,
    UpdateCounts,
    cross_validate,
    fit_durations,
    phoneme_terms_fit,
    request_features,
    take,
)
from simulplay.grouping.registry import TRIGGERS, Rule, canonical_condition, parse_rule
from simulplay.grouping.vectorized import Groups, UpdateTable, group_many
from simulplay.sim.servicefit import ServiceFit, fit_panel

REQUEST_KEYS = (*OUTPUT_KEYS, "seq")


@dataclass(frozen=True)
class PanelModel:
    """The models of one panel: durations, the service clock and the panel's sample rate (Hz)."""

    panel: tuple[tuple[str, str], ...]
    durations: DurationFit
    service: ServiceFit
    sample_rate: int

    def label(self) -> str:
        """``backend=…, realization=…`` (empty for a manifest without panel columns)."""
        return ", ".join(f"{k}={v}" for k, v in self.panel)


def request_frame(table: UpdateTable, groups: Groups, conditions: Sequence[str]) -> pd.DataFrame:
    """One row per group: output keys, ``seq`` (0-based within its output), ``dispatch_s``,
    ``trigger``, ``n_updates``, ``source_s`` (seconds)."""
    s = table.streams
    lane = groups.rule * max(len(s), 1) + groups.stream
    starts = np.flatnonzero(np.r_[True, lane[1:] != lane[:-1]]) if len(lane) else np.zeros(0, int)
    seq = np.arange(len(lane)) - np.repeat(starts, np.diff(np.r_[starts, len(lane)]))
    return pd.DataFrame({
        "talk_id": np.array([x.talk_id for x in s], object)[groups.stream],
        "system": np.array([x.system for x in s], object)[groups.stream],
        "condition": np.array(list(conditions), object)[groups.rule],
        "seq": seq.astype(np.int64),
        "dispatch_s": groups.dispatch_s,
        "trigger": np.array(TRIGGERS, object)[groups.trigger],
        "n_updates": (groups.last - groups.first + 1).astype(np.int64),
        "source_s": np.array([x.source_s for x in s], float)[groups.stream],
    })


def measured_rules(manifest: pd.DataFrame, source: str) -> list[Rule]:
    """The rules of the manifest's conditions (each must be a RULE string)."""
    return [parse_rule(c, source=f"{source}: condition") for c in dict.fromkeys(manifest["condition"])]


def fit_models(manifest: pd.DataFrame, table: UpdateTable, counts: UpdateCounts, *,
               train: Collection[str] | None = None, folds: int = 5, source: str = "manifest",
               require_phonemes: bool = False, group: Callable[[list[Rule]], Groups] | None = None,
               clock: bool = True) -> list[PanelModel]:
    """One :class:`PanelModel` per panel of a validated manifest, fitted on its requests
    without error under the conditions ``train`` (canonical RULE strings; None: all).
    With a phonemizer in ``counts``, a panel with too few requests for the phoneme terms
    is fitted on the text terms (its model says so), or refused with ``require_phonemes``.
    Requests of a rule that cuts inside updates (a framework rule) are left out of the fit.
    ``group``: how the manifest's rules group the table (default :func:`group_many`; the
    commit policies' tables, :mod:`simulplay.analysis.sweep_commit`). ``folds=0``: no
    held-out errors; ``clock=False``: no service clock (all its coefficients 0), for a caller
    that takes no service time from the model."""
    rules = measured_rules(manifest, source)
    cut = [r.canonical() for r in rules if getattr(r, "cuts_updates", False)]  # not whole updates: not fitted
    if cut:
        manifest = manifest[~manifest["condition"].map(canonical_condition).isin(cut)].reset_index(drop=True)
        rules = [r for r in rules if not getattr(r, "cuts_updates", False)]
    groups = group(rules) if group is not None else group_many(table, rules)
    frame = request_frame(table, groups, [r.canonical() for r in rules])
    feats = request_features(table, counts, groups)
    text_feats = None
    aligned = _align(manifest, frame, source)
    keys = present(RUN_PANEL_KEYS, manifest)
    panels = manifest.groupby(keys, sort=False) if keys else [((), manifest)]
    models = []
    for key, rows in panels:
        panel = tuple((k, str(v)) for k, v in zip(keys, key if isinstance(key, tuple) else (key,)))
        ok = (rows["error"] == "").to_numpy() & rows["audio_s"].notna().to_numpy()
        if train is not None:
            ok &= rows["condition"].isin(list(train)).to_numpy()
        idx = rows.index[ok]
        at = aligned[idx]
        x = take(feats, at)
        note = phoneme_terms_fit(x, len(at)) if counts.phonemize is not None else ""
        if note:
            if require_phonemes:
                where = ", ".join(f"{k}={v}" for k, v in panel)
                raise InputError.at(source, f"{note}{' in panel ' + where if where else ''}",
                                    accepted="a run with more requests, or the text terms")
            text_feats = text_feats or request_features(table, counts, groups, text=True)
            x = take(text_feats, at)
        audio = rows.loc[idx, "audio_s"].to_numpy(float)
        talks, systems = rows.loc[idx, "talk_id"], rows.loc[idx, "system"]
        streams = (talks + "|" + systems).to_numpy()
        conds = rows.loc[idx, "condition"].to_numpy()
        spans, weights = (groups.first[at], groups.last[at]), counts.weights
        dur = fit_durations(x, audio, panel, streams, spans=spans, weights=weights, conditions=conds)
        if folds:
            dur = cross_validate(dur, x, audio, talks=talks.to_numpy(), streams=streams, conditions=conds,
                                 outputs=streams + "|" + conds, folds=folds, spans=spans, weights=weights)
        service = rows.loc[idx, "service_s"].to_numpy(float)
        usable = np.isfinite(service)
        svc = fit_panel(audio[usable], x["chars"][usable], service[usable], panel) if clock else \
            ServiceFit(panel, (0.0, 0.0, 0.0), (), 0, 0.0)
        rates = rows.loc[idx, "sample_rate"] if "sample_rate" in rows else pd.Series([], dtype=int)
        rate = int(rates.mode().iloc[0]) if len(rates) else 0
        models.append(PanelModel(panel, replace(dur, note=note), svc, rate))
    return models


def _align(manifest: pd.DataFrame, frame: pd.DataFrame, source: str) -> np.ndarray:
    """For each manifest row, its row in ``frame`` (the regrouped requests); refuses a
    manifest whose requests are not the groups of the traces (another trace, a split)."""
    want = manifest[list(REQUEST_KEYS)].assign(_m=np.arange(len(manifest)))
    have = frame[[*REQUEST_KEYS, "n_updates"]].assign(_g=np.arange(len(frame)))
    both = want.merge(have, on=list(REQUEST_KEYS), how="left")
    keys = [*present(RUN_PANEL_KEYS, manifest), *OUTPUT_KEYS]  # each panel holds every output once
    n_out = manifest.groupby(keys, sort=False).size().rename("m").reset_index()
    n_groups = frame.groupby(list(OUTPUT_KEYS), sort=False).size().rename("g").reset_index()
    sizes = n_out.merge(n_groups, on=list(OUTPUT_KEYS), how="left").set_index(list(OUTPUT_KEYS))
    bad = sizes[sizes["m"] != sizes["g"]]
    mismatch = both["_g"].isna().to_numpy().copy()
    if "n_updates" in manifest:
        mismatch |= ~mismatch & (manifest["n_updates"].to_numpy() != both["n_updates"].to_numpy())
    if len(bad) or mismatch.any():
        out = bad.index[0] if len(bad) else tuple(manifest.iloc[int(np.argmax(mismatch))][list(OUTPUT_KEYS)])
        label = ", ".join(map(str, out))
        raise InputError.at(source, f"the requests of output ({label}) are not the groups its trace gives under "
                            "its rule", field="condition",
                            accepted="a manifest synthesized from the run's traces, without an input-limit splitter")
    return both.sort_values("_m")["_g"].to_numpy(np.int64)


def predicted_manifest(table: UpdateTable, counts: UpdateCounts, groups: Groups, conditions: Sequence[str],
                       models: Sequence[PanelModel]) -> pd.DataFrame:
    """The requests of ``groups`` (``conditions``: the canonical string of each grouped
    rule) once per panel, with modelled ``audio_s``/``n_samples`` and ``service_s``
    (seconds); rows sorted by panel, output and ``seq``, as a validated manifest is."""
    base = request_frame(table, groups, conditions)
    anchored = anchor_spans(table, groups)
    kinds: dict[bool, object] = {}  # the features of each kind of model, made once
    frames = []
    streams = (base["talk_id"] + "|" + base["system"]).to_numpy()
    for m in models:
        use = m.durations.phonemes
        if use not in kinds:
            kinds[use] = request_features(table, counts, groups, text=not use)
        feats = kinds[use]
        audio = m.durations.predict(feats, streams, anchored)
        if m.sample_rate > 0:
            n = np.rint(audio * m.sample_rate).astype(np.int64)
            audio = n / m.sample_rate
        frame = base.assign(**dict(m.panel))
        frame["audio_s"] = audio
        if m.sample_rate > 0:
            frame["n_samples"], frame["sample_rate"] = n, m.sample_rate
        frame["service_s"] = m.service.predict(audio, feats["chars"])
        frame["ready_s"], frame["error"] = np.nan, ""
        frames.append(frame)
    return pd.concat(frames, ignore_index=True) if frames else base
