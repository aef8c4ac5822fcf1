"""η tables: mean completion-gap changes with paired talk-bootstrap intervals.

Each panel (one backend, one realization, one edge-trimming threshold) is analysed on its
own; panels are never pooled. Means give each talk equal weight.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from simulplay.analysis.bootstrap import Bootstrap
from simulplay.analysis.gaps import per_talk_effects, wide_panel
from simulplay.analysis.interaction import InteractionResult, interaction
from simulplay.analysis.paired import paired_row
from simulplay.analysis.small_panels import small_panel_notes
from simulplay.core.errors import IncompleteError, InputError
from simulplay.core.keys import OUTPUT_KEYS, PANEL_KEYS, PER_ROW_SIGNATURE_KEYS
from simulplay.core.signature import base_signature, format_signature, merge
from simulplay.formats.eta import CONTRAST_COLUMNS, ETA_COLUMNS, PER_TALK_COLUMNS
from simulplay.grouping import canonical_condition
from simulplay.grouping.policy import LOOP_OTHER_CLOCK, decided_again

#: The per-talk effect columns, in seconds; values within the tie tolerance are taken as 0.
EFFECT_COLUMNS = ("delta_ref_s", "delta_s", "eta_s", "duration_part_s", "idle_part_s")


@dataclass
class EtaResult:
    """The η table (one row per panel and condition other than the reference), the per-talk
    effects behind it, and the contrasts, each with one signature per row; values in
    seconds (``_s`` columns), counts of talks. ``excluded`` names the outputs whose talks
    were left out (``allow_incomplete``)."""

    table: pd.DataFrame
    table_signatures: list[dict[str, Any]]
    per_talk: pd.DataFrame
    per_talk_signatures: list[dict[str, Any]]
    contrasts: pd.DataFrame
    contrast_signatures: list[dict[str, Any]]
    excluded: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # small-panel notes under the η table
    contrast_notes: list[str] = field(default_factory=list)  # and under the contrast table
    interactions: list[InteractionResult] = field(default_factory=list)  # one per --interaction pair


def compute_eta(
    summary: pd.DataFrame,
    *,
    a: str,
    f: str,
    reference: str,
    boot: Bootstrap | None = None,
    contrasts: Sequence[tuple[str, str]] = (),
    allow_incomplete: bool = False,
    upstream: Sequence[dict[str, Any]] | None = None,
    source: str = "summary",
    interactions: Sequence[tuple[str, str]] = (),
) -> EtaResult:
    """η of translator ``a`` against ``f`` (system names) per panel and condition, in seconds.

    For talk ``s``, condition ``w`` and the reference condition ``0``, with ``L`` the end
    offset ``offset_s`` (seconds after the source ends; docs/concepts.md#the-comparison)::

        δ_s(w) = L_s(a, w) − L_s(f, w)            (s; negative: a finishes earlier)
        η_s(w) = δ_s(w) − δ_s(0)                   (s)
        η(w)   = (1/n) Σ_s η_s(w)                  (s; each of the n talks weighs the same)

    with its duration and idle parts (the same differences of ``audio_s`` and ``idle_s``,
    seconds; they sum to η), a paired talk-bootstrap interval (one index matrix per panel,
    its columns the talks in ``boot.talk_order``: ids sorted, or as the summary first lists
    them) and the talks moving each way (a per-talk value within ``boot.tie_tolerance`` of
    zero, 1 µs by default, is a tie: taken as 0 and counted in ``n_zero``). Each panel (backend × realization × edge
    threshold) is computed on its own by :func:`panel_eta`; this function checks the
    summary, splits it into panels and assembles their rows.

    ``summary``: playback summary rows (:func:`simulplay.formats.summary.read_summary`), ``upstream`` their
    signatures; conditions compare in canonical form. ``contrasts`` (``p1``, ``p2``) give
    ``δ(p1) − δ(p2)`` likewise; for each backend pair in ``interactions``, the
    cross-backend interaction (:mod:`simulplay.analysis.interaction`). A talk without a
    playable output for both systems under every condition is an :class:`IncompleteError`
    unless ``allow_incomplete`` drops it (counted in the signatures); bad names or mixed
    settings are :class:`InputError`.
    """
    boot = boot or Bootstrap()
    summary = summary.copy()
    names = {c: canonical_condition(c) for c in summary["condition"].unique()}  # each distinct name once
    summary["condition"] = summary["condition"].map(names)
    reference = canonical_condition(reference)
    contrasts = [(canonical_condition(p), canonical_condition(q)) for p, q in contrasts]
    upstream = list(upstream) if upstream is not None else [{}] * len(summary)
    summary["_sig"] = range(len(summary))
    _check_names(summary, a, f, reference, contrasts, source)

    panel_keys = [k for k in PANEL_KEYS if k in summary]
    _check_one_row_per_output(summary, panel_keys, source)
    groups = summary.groupby(panel_keys, sort=False) if panel_keys else [((), summary)]
    setup = EtaSetup(a, f, reference, contrasts, boot, upstream, allow_incomplete, source)
    panels = [panel_eta(panel, dict(zip(panel_keys, key if isinstance(key, tuple) else (key,))), setup)
              for key, panel in groups]

    table = pd.DataFrame([r for p in panels for r in p.rows], columns=[*panel_keys, *ETA_COLUMNS])
    per_talk = pd.DataFrame([r for p in panels for r in p.talk_rows],
                            columns=[*panel_keys, *PER_TALK_COLUMNS])
    contrast = pd.DataFrame([r for p in panels for r in p.contrast_rows], columns=[*panel_keys, *CONTRAST_COLUMNS])
    talk_sigs = [s for p in panels for s in p.talk_signatures]
    inter = [interaction(per_talk, talk_sigs, b1, b2, boot=boot, allow_incomplete=allow_incomplete, source=source)
             for b1, b2 in interactions]
    return EtaResult(table, [s for p in panels for s in p.signatures], per_talk, talk_sigs, contrast,
                     [s for p in panels for s in p.contrast_signatures], [x for p in panels for x in p.excluded],
                     small_panel_notes(table, per_talk) + loop_notes(summary, upstream),
                     small_panel_notes(contrast, name="p1", symbol="diff"), inter)


def loop_notes(summary: pd.DataFrame, upstream: Sequence[dict[str, Any]]) -> list[str]:
    """A note naming the closed-loop conditions whose recorded groups were replayed under
    another clock than the one they were decided under (signature ``loop``)."""
    other = sorted({c for c, i in zip(summary["condition"], summary["_sig"])
                    if upstream[i].get("loop") == LOOP_OTHER_CLOCK})
    notes = [] if not other else [
        f"closed loop: {', '.join(other)} replayed with the groups recorded under the measured clock; under this "
        "clock the policy would have decided other groups (not decided again here)"]
    again: dict[str, list[int]] = {}
    for c, i in zip(summary["condition"], summary["_sig"]):
        counts = decided_again(upstream[i].get("loop"))
        if counts is not None:
            total = again.setdefault(c, [0, 0])
            total[0], total[1] = total[0] + counts[0], total[1] + counts[1]
    for c in sorted(again):
        m, n = again[c]
        modelled = f"; {m} of its {n} requests take their durations from the duration model (texts the run did not " \
                   "synthesize): modelled, not measured" if m else "; every duration is one the run synthesized"
        notes.append(f"closed loop: {c} decided again under this clock (its groups are the policy's under this "
                     f"clock, not the recorded ones){modelled}")
    return notes


@dataclass(frozen=True)
class EtaSetup:
    """What every panel of one :func:`compute_eta` call shares: the systems ``a`` and ``f``,
    the canonical ``reference`` condition and ``contrasts``, the bootstrap, the summary's
    row signatures ``upstream`` (indexed by a panel's ``_sig`` column), ``allow_incomplete``
    and the ``source`` named in errors."""

    a: str
    f: str
    reference: str
    contrasts: Sequence[tuple[str, str]]
    boot: Bootstrap
    upstream: Sequence[dict[str, Any]]
    allow_incomplete: bool
    source: str


@dataclass(frozen=True)
class PanelEta:
    """One panel's rows (dicts keyed by column, values in seconds) and their signatures:
    η per condition, the per-talk effects behind it, the contrasts, and the outputs whose
    talks were left out."""

    rows: list[dict[str, Any]]
    signatures: list[dict[str, Any]]
    talk_rows: list[dict[str, Any]]
    talk_signatures: list[dict[str, Any]]
    contrast_rows: list[dict[str, Any]]
    contrast_signatures: list[dict[str, Any]]
    excluded: list[str]


def panel_eta(panel: pd.DataFrame, pk: dict[str, Any], setup: EtaSetup) -> PanelEta:
    """η, per-talk effects and contrasts of one panel (``pk``: its backend, realization…):
    δ and η per talk (:func:`~simulplay.analysis.gaps.per_talk_effects`, seconds), their
    equal-talk means, and intervals from one index matrix over the panel's talks."""
    s, boot = setup, setup.boot
    where = " in panel " + format_signature(pk) if pk else ""
    if s.reference not in set(panel["condition"]):
        raise IncompleteError(f"{s.source}: no output under the reference condition '{s.reference}'{where}")
    _check_same_settings(panel, list(s.upstream), where, s.source)
    panel, dropped = _complete_talks(panel, s.a, s.f, s.allow_incomplete, pk, s.source)
    conds = [c for c in dict.fromkeys(panel["condition"]) if c != s.reference]
    talks = boot.order_talks(panel["talk_id"])
    idx = boot.indices(len(talks))
    wide = wide_panel(panel)
    effects = {c: _ties(per_talk_effects(panel, s.a, s.f, s.reference, c, wide).set_index("talk_id").loc[talks],
                        boot)
               for c in conds + [s.reference]}
    n_dropped = len(dropped) if s.allow_incomplete else None

    def sig_for(cond: str, extra: dict) -> dict:
        up = panel.loc[(panel["condition"] == cond) & (panel["system"] == s.a), "_sig"]
        base = s.upstream[int(up.iloc[0])] if len(up) else {}
        return merge(base, {"rule": cond}, pk, extra, boot.signature(), base_signature(excluded=n_dropped))

    out = PanelEta([], [], [], [], [], [], dropped)
    for c in conds:
        e = effects[c]
        out.rows.append({**pk, "condition": c, "n_talks": len(talks),
                         "delta_ref_s": e["delta_ref_s"].mean(), "delta_s": e["delta_s"].mean(),
                         **paired_row("eta_s", e["eta_s"], e["duration_part_s"], e["idle_part_s"], boot, idx)})
        sig = sig_for(c, {"table": "eta", "a": s.a, "f": s.f, "reference": s.reference})
        out.signatures.append(sig)
        for t, r in e.iterrows():
            out.talk_rows.append({**pk, "talk_id": t, "condition": c, **r.to_dict()})
            out.talk_signatures.append(sig)
    for p1, p2 in s.contrasts:
        _require(panel, p1, "--contrast", s.source)
        _require(panel, p2, "--contrast", s.source)
        e1, e2 = effects[p1], effects[p2]
        out.contrast_rows.append({**pk, "p1": p1, "p2": p2, "n_talks": len(talks),
                                  "delta_p1_s": e1["delta_s"].mean(), "delta_p2_s": e2["delta_s"].mean(),
                                  **paired_row("diff_s", e1["delta_s"] - e2["delta_s"],
                                               e1["duration_part_s"] - e2["duration_part_s"],
                                               e1["idle_part_s"] - e2["idle_part_s"], boot, idx)})
        out.contrast_signatures.append(sig_for(p1, {"table": "contrast", "a": s.a, "f": s.f, "reference": p2}))
    return out


def _ties(effects: pd.DataFrame, boot: Bootstrap) -> pd.DataFrame:
    """The per-talk effects with every value within the tie tolerance of zero set to 0 (a
    talk whose η is 0 by construction is not counted as moving by a float residue)."""
    return effects.assign(**{c: boot.ties(effects[c]) for c in EFFECT_COLUMNS})


def _check_one_row_per_output(summary: pd.DataFrame, panel_keys: list[str], source: str) -> None:
    """Refuse an output (panel keys and output keys) that appears twice."""
    ident = [*panel_keys, *OUTPUT_KEYS]
    dup = summary.duplicated(ident, keep="first").to_numpy()
    if dup.any():
        i = int(dup.argmax())
        label = ", ".join(str(summary[k].iloc[i]) for k in ident)
        raise InputError.at(source, f"output ({label}) appears more than once", row=i + 1,
                            accepted="one row per output (panel keys: " + ", ".join(panel_keys or ["none"]) + ")")


def _check_same_settings(panel: pd.DataFrame, upstream: list[dict[str, Any]], where: str, source: str) -> None:
    """Refuse a panel whose outputs were replayed or synthesized under different settings
    (release, service model, trimming, splitter, backend settings…): η would mix them.
    Only structured (Parquet) signatures can be compared; CSV display strings are not parsed."""
    first: tuple[str, dict[str, Any]] | None = None
    for i, cond in zip(panel["_sig"], panel["condition"]):
        sig = upstream[int(i)]
        if set(sig) <= {"replay"}:
            return
        norm = {k: v for k, v in sig.items() if k not in PER_ROW_SIGNATURE_KEYS}
        if first is None:
            first = (cond, norm)
            continue
        for k in sorted(set(norm) | set(first[1])):
            if norm.get(k) != first[1].get(k):
                raise InputError.at(source, f"conditions '{first[0]}' and '{cond}'{where} differ in '{k}' "
                                    f"({first[1].get(k)} vs {norm.get(k)})", field=k,
                                    accepted="one replay of one manifest per panel (η must not mix settings)")


def _check_names(summary, a, f, reference, contrasts, source):
    systems = list(dict.fromkeys(summary["system"]))
    for flag, name in (("--a", a), ("--f", f)):
        if name not in systems:
            raise InputError.at(source, f"no system '{name}'", field=flag, accepted=", ".join(systems))
    if a == f:
        raise InputError.at(source, "--a and --f name the same system", field="--f",
                            accepted="two different systems")
    _require(summary, reference, "--reference", source)
    for p, q in contrasts:
        _require(summary, p, "--contrast", source)
        _require(summary, q, "--contrast", source)


def _require(df, condition, flag, source):
    conds = list(dict.fromkeys(df["condition"]))
    if condition not in conds:
        raise InputError.at(source, f"no condition '{condition}'", field=flag, accepted=", ".join(conds))


def _complete_talks(panel, a, f, allow_incomplete, pk, source):
    """Keep talks that have a playable output for both systems under every condition."""
    panel = panel[panel["system"].isin([a, f])]
    conds = list(dict.fromkeys(panel["condition"]))
    have = set(zip(panel.loc[panel["offset_s"].notna(), "talk_id"],
                   panel.loc[panel["offset_s"].notna(), "system"],
                   panel.loc[panel["offset_s"].notna(), "condition"]))
    missing, drop = [], set()
    for talk in dict.fromkeys(panel["talk_id"]):
        for sysname in (a, f):
            for c in conds:
                if (talk, sysname, c) not in have:
                    missing.append(f"(talk_id={talk}, system={sysname}, condition={c})")
                    drop.add(talk)
    where = " in panel " + format_signature(pk) if pk else ""
    if missing and not allow_incomplete:
        shown = "; ".join(missing[:5]) + (f"; … {len(missing) - 5} more" if len(missing) > 5 else "")
        raise IncompleteError(f"{source}: {len(missing)} output(s) missing or without audio{where}: {shown} "
                              "(pass --allow-incomplete to exclude their talks and count them)")
    panel = panel[~panel["talk_id"].isin(drop)]
    if panel.empty:
        raise IncompleteError(f"{source}: no talk is complete for both systems{where}")
    src = panel.groupby("talk_id")["source_s"].agg(["min", "max"])
    bad = src[(src["max"] - src["min"]) > 1e-6]
    if len(bad):
        raise InputError.at(source, f"talk {bad.index[0]} has different source_s for the two systems",
                            field="source_s", accepted="one source duration per talk")
    return panel, missing
