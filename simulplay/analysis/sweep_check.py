"""The sweep checks itself: modelled against measured η and L at every condition the run
(or a ``--confirm``) synthesized for real, per talk and as means over talks.

A disagreement is ``modelled − measured`` in seconds. The summary names the largest one
of η (mean over talks and per talk) and of L; a condition whose modelled η lies farther
from the measured η than the measured interval's half-width (``(ci_high − ci_low) / 2``)
is counted in one warning line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from simulplay.analysis.sweep import SWEEP_KEYS, Modelled
from simulplay.core.keys import present
from simulplay.core.signature import format_signature, merge


@dataclass
class SweepCheck:
    """Modelled vs measured per panel and condition (``table``) and per talk
    (``per_talk``), with their signatures, the summary line and the warnings (seconds)."""

    table: pd.DataFrame
    signatures: list[dict[str, Any]]
    per_talk: pd.DataFrame
    per_talk_signatures: list[dict[str, Any]]
    summary: str = ""
    warnings: list[str] = field(default_factory=list)


def _ends_wide(ends: pd.DataFrame, keys: list[str], a: str, f: str, value: str, extra=()) -> pd.DataFrame:
    wide = ends.pivot_table(index=[*keys, "condition", *extra], columns="system", values=value, aggfunc="first",
                            sort=False)
    return wide[[a, f]].set_axis([f"{value[:-2]}_a_s", f"{value[:-2]}_f_s"], axis=1)


def check_sweep(modelled: Modelled, measured: Modelled, *, a: str, f: str, sig: dict[str, Any],
                confirmed: set[str] = frozenset()) -> SweepCheck:
    """Set the modelled replay beside the measured one at the measured conditions."""
    keys = present(SWEEP_KEYS, measured.summary)
    conds = list(dict.fromkeys(measured.ends["condition"]))
    idx = [*keys, "condition"]
    m_eta = measured.eta.set_index(idx)[["n_talks", "eta_s", "ci_low_s", "ci_high_s"]]
    p_eta = modelled.eta.set_index(idx)[["eta_s", "ci_low_s", "ci_high_s"]]
    m_l, p_l = _ends_wide(measured.ends, keys, a, f, "L_s"), _ends_wide(modelled.ends, keys, a, f, "L_s")
    table = m_l.merge(p_l, left_index=True, right_index=True, suffixes=("_measured", "_modelled")).reset_index()
    table = table[table["condition"].isin(conds)]
    table = table.merge(m_eta.add_prefix("measured_").reset_index(), on=idx, how="left")
    table = table.merge(p_eta.add_prefix("modelled_").reset_index(), on=idx, how="left")
    out = table[idx].copy()
    out["confirmed"] = out["condition"].isin(confirmed)
    out["n_talks"] = table["measured_n_talks"]
    out["modelled_eta_s"], out["measured_eta_s"] = table["modelled_eta_s"], table["measured_eta_s"]
    out["eta_diff_s"] = out["modelled_eta_s"] - out["measured_eta_s"]
    out["measured_ci_low_s"], out["measured_ci_high_s"] = table["measured_ci_low_s"], table["measured_ci_high_s"]
    out["half_width_s"] = (out["measured_ci_high_s"] - out["measured_ci_low_s"]) / 2
    out["outside"] = out["eta_diff_s"].abs() > out["half_width_s"]
    for tag in ("a", "f"):
        out[f"modelled_L_{tag}_s"], out[f"measured_L_{tag}_s"] = table[f"L_{tag}_s_modelled"], \
            table[f"L_{tag}_s_measured"]
        out[f"L_{tag}_diff_s"] = out[f"modelled_L_{tag}_s"] - out[f"measured_L_{tag}_s"]
    out = out.reset_index(drop=True)
    per_talk = _per_talk(modelled, measured, keys, a, f, conds)
    sigs = [merge(sig, {"table": "sweep-check", "rule": c}, dict(zip(keys, r)))
            for c, r in zip(out["condition"], out[keys].itertuples(index=False))]
    talk_sigs = [merge(sig, {"table": "sweep-check-per-talk", "rule": c}, dict(zip(keys, r)))
                 for c, r in zip(per_talk["condition"], per_talk[keys].itertuples(index=False))]
    return SweepCheck(out, sigs, per_talk, talk_sigs, _summary(out, per_talk, keys), _warnings(out, keys))


def _per_talk(modelled: Modelled, measured: Modelled, keys: list[str], a: str, f: str,
              conds: list[str]) -> pd.DataFrame:
    idx = [*keys, "condition", "talk_id"]
    eta = measured.eta_per_talk.set_index(idx)[["eta_s"]].add_prefix("measured_").join(
        modelled.eta_per_talk.set_index(idx)[["eta_s"]].add_prefix("modelled_"), how="outer")
    m = _ends_wide(measured.ends_per_talk, keys, a, f, "L_s", ["talk_id"])
    p = _ends_wide(modelled.ends_per_talk, keys, a, f, "L_s", ["talk_id"])
    ends = p.add_prefix("modelled_").join(m.add_prefix("measured_"), how="inner")
    out = ends.join(eta, how="left").reset_index()
    out = out[out["condition"].isin(conds)].reset_index(drop=True)
    out["eta_diff_s"] = out["modelled_eta_s"] - out["measured_eta_s"]
    for tag in ("a", "f"):
        out[f"L_{tag}_diff_s"] = out[f"modelled_L_{tag}_s"] - out[f"measured_L_{tag}_s"]
    cols = [*idx, "modelled_eta_s", "measured_eta_s", "eta_diff_s", "modelled_L_a_s", "measured_L_a_s",
            "L_a_diff_s", "modelled_L_f_s", "measured_L_f_s", "L_f_diff_s"]
    return out[cols]


def _where(row: pd.Series, keys: list[str]) -> str:
    panel = format_signature({k: row[k] for k in keys}) if keys else ""
    return f"{row['condition']}" + (f" ({panel})" if panel else "")


def _largest(table: pd.DataFrame, col: str) -> tuple[float, pd.Series] | None:
    values = table[col].abs()
    if not values.notna().any():
        return None
    i = values.idxmax()
    return float(table.loc[i, col]), table.loc[i]


def _summary(table: pd.DataFrame, per_talk: pd.DataFrame, keys: list[str]) -> str:
    """One line: the largest disagreements of η (mean, per talk) and of L."""
    n = table["condition"].nunique()
    parts = []
    mean = _largest(table, "eta_diff_s")
    if mean:
        parts.append(f"largest η disagreement {mean[0]:+.3f} s at {_where(mean[1], keys)}")
    talk = _largest(per_talk, "eta_diff_s")
    if talk:
        parts.append(f"per talk {talk[0]:+.3f} s ({talk[1]['talk_id']}, {talk[1]['condition']})")
    ends = [x for x in (_largest(table, "L_a_diff_s"), _largest(table, "L_f_diff_s")) if x]
    if ends:
        v, row = max(ends, key=lambda x: abs(x[0]))
        parts.append(f"largest L disagreement {v:+.3f} s at {_where(row, keys)}")
    return f"modelled vs measured at {n} measured condition(s): " + "; ".join(parts)


def _warnings(table: pd.DataFrame, keys: list[str]) -> list[str]:
    """One line when the modelled η misses the measured interval's half-width anywhere."""
    out = table[table["outside"]]
    if out.empty:
        return []
    worst = out.loc[(out["eta_diff_s"].abs() - out["half_width_s"]).idxmax()]
    more = len(out) - 1
    return [f"the model's η at {_where(worst, keys)} is {worst['eta_diff_s']:+.3f} s from the measured "
            f"{worst['measured_eta_s']:+.3f} s, beyond the measured interval's half-width "
            f"{worst['half_width_s']:.3f} s" + (f" ({more} more condition(s) beyond theirs)" if more else "")
            + "; read the modelled curve as a ranking, not as measurements"]

