"""Completion gaps and their change under grouping (docs/concepts.md#the-comparison), per talk.

For talk s, translators A and F, condition w and reference condition 0::

    δ_s(w) = L_s(A, w) − L_s(F, w)        (negative: A finishes earlier)
    η_s(w) = δ_s(w) − δ_s(0)
    duration part = [D_s(A,w) − D_s(A,0)] − [D_s(F,w) − D_s(F,0)]
    idle part     = [I_s(A,w) − I_s(A,0)] − [I_s(F,w) − I_s(F,0)]    (sum = η_s)
"""

from __future__ import annotations

import pandas as pd


def delta(L: pd.DataFrame, a: str, f: str) -> pd.Series:
    """δ per (talk, condition) from a frame indexed by talk with (system, condition) columns."""
    return L[a] - L[f]


def wide_panel(panel: pd.DataFrame) -> pd.DataFrame:
    """A panel's ``offset_s``, ``audio_s`` and ``idle_s`` with one row per talk and a
    column per (metric, system, condition), as :func:`per_talk_effects` reads them."""
    return panel.pivot_table(index="talk_id", columns=["system", "condition"],
                             values=["offset_s", "audio_s", "idle_s"], aggfunc="first", sort=False)


def per_talk_effects(panel: pd.DataFrame, a: str, f: str, reference: str, condition: str,
                     wide: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per-talk δ(0), δ(w), η(w) and its duration and idle parts, in seconds.

    ``panel``: summary rows of one panel, with talks complete in every needed output;
    ``wide``: its :func:`wide_panel`, when the caller has it already (one per panel).
    """
    wide = wide_panel(panel) if wide is None else wide

    def diff(metric: str, cond: str) -> pd.Series:
        return wide[(metric, a, cond)] - wide[(metric, f, cond)]

    d_ref, d_w = diff("offset_s", reference), diff("offset_s", condition)
    out = pd.DataFrame({
        "talk_id": wide.index,
        "condition": condition,
        "delta_ref_s": d_ref.to_numpy(),
        "delta_s": d_w.to_numpy(),
        "eta_s": (d_w - d_ref).to_numpy(),
        "duration_part_s": (diff("audio_s", condition) - diff("audio_s", reference)).to_numpy(),
        "idle_part_s": (diff("idle_s", condition) - diff("idle_s", reference)).to_numpy(),
    })
    return out.reset_index(drop=True)

