"""The explorer's first view: the run's η tables and the talk × condition grid of per-talk
η, per variant and per panel (backend, realization), with their signatures and notes.

JSON-ready: numbers are the tables' own floats (seconds; ``None`` where missing), every
row names its signature by index into the variant's list of display strings, and the
page shows the compact lines under each table (:func:`~simulplay.report.model.signature_lines`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from simulplay.analysis.small_panels import small_panel_notes
from simulplay.core.keys import RUN_PANEL_KEYS, present
from simulplay.grouping import canonical_condition
from simulplay.report.explore.variants import Variant, shown_all
from simulplay.report.measured import machine_items
from simulplay.report.model import signature_lines
from simulplay.report.order import condition_order, system_order
from simulplay.report.read_run import RunData

ETA_SHOWN = ("n_talks", "eta_s", "ci_low_s", "ci_high_s", "n_negative", "n_zero", "n_positive", "delta_ref_s",
             "delta_s", "duration_part_s", "idle_part_s")
TALK_SHOWN = ("eta_s", "delta_ref_s", "delta_s", "duration_part_s", "idle_part_s")


def json_value(v: Any) -> Any:
    """A table cell as JSON: Python numbers and text, ``None`` for a missing or non-finite value."""
    if v is None or v is pd.NA:
        return None
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return float(v) if np.isfinite(v) else None
    return str(v)


def panels_of(summary: pd.DataFrame) -> list[dict[str, str]]:
    """The run's panels (backend, realization values), in the summary's order."""
    keys = present(RUN_PANEL_KEYS, summary)
    if not keys:
        return [{}]
    rows = summary[keys].astype(str).drop_duplicates()
    return [dict(zip(keys, r)) for r in rows.itertuples(index=False)]


def panel_index(frame: pd.DataFrame, panels: list[dict[str, str]]) -> list[int]:
    """Each row's panel, as an index into ``panels`` (-1: none of them)."""
    keys = present(RUN_PANEL_KEYS, frame)
    lookup = {tuple(p.get(k) for k in keys): i for i, p in enumerate(panels)}
    return [lookup.get(k, -1) for k in zip(*(frame[k].astype(str).tolist() for k in keys))] if keys \
        else [0] * len(frame)


def _signed_rows(frame: pd.DataFrame, sigs: Sequence[Any], columns: Sequence[str],
                 panels: list[dict[str, str]], extra: Sequence[str] = ()) -> dict[str, Any]:
    """Rows as ``[panel index, *extra, condition, *columns]`` with a signature index each."""
    strings: dict[str, int] = {}
    cols = [c for c in columns if c in frame]
    frame = frame.reset_index(drop=True)
    texts = shown_all(sigs) + [""] * max(0, len(frame) - len(sigs))
    values = [[json_value(v) for v in frame[c].tolist()] for c in extra] + \
        [frame["condition"].map(canonical_condition).tolist()] + \
        [[json_value(v) for v in frame[c].tolist()] for c in cols]
    rows = [[p, *r, strings.setdefault(t, len(strings))]
            for p, r, t in zip(panel_index(frame, panels), zip(*values), texts)]
    return {"columns": ["panel", *extra, "condition", *cols, "sig"], "rows": rows, "signatures": list(strings)}


def variant_panel(v: Variant, panels: list[dict[str, str]]) -> dict[str, Any]:
    """One variant's η table, per-talk η grid, their signature lines and small-panel notes."""
    eta = _signed_rows(v.eta, v.eta_signatures, ETA_SHOWN, panels)
    talks = _signed_rows(v.per_talk, v.per_talk_signatures, TALK_SHOWN, panels, extra=("talk_id",))
    notes = small_panel_notes(v.eta, brief=True)  # the counts are the table's own columns
    return {"key": v.key, "title": v.title, "eta": eta, "per_talk": talks,
            "eta_lines": signature_lines(v.eta_signatures, v.eta),
            "talk_lines": signature_lines(v.per_talk_signatures) if v.per_talk_signatures else [],
            "notes": notes + v.notes}


def panel_payload(run: RunData, variants: Sequence[Variant], talks: list[dict[str, Any]],
                  notes: Sequence[str], audio_note: str) -> dict[str, Any]:
    """Everything the panel view shows; ``talks``: each talk's ``id``, its data ``file``
    (under ``data/talks/`` and, with ``audio``, ``data/audio/``)."""
    panels = panels_of(variants[0].summary)
    systems = system_order(run, list(variants[0].summary["system"].astype(str).unique()))
    return {"name": run.name, "a": run.a, "f": run.f, "reference": canonical_condition(run.reference),
            "conditions": condition_order(run), "systems": systems, "panels": panels,
            "talks": talks,
            "variants": [variant_panel(v, panels) for v in variants],
            "measured": [list(item) for item in machine_items(run)],
            "notes": list(run.notes) + list(notes), "audio_note": audio_note}
