"""Trace writers (Parquet, CSV, JSONL stream-per-line; ``retract`` written only where it is not 0)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from simulplay.core.atomic import atomic_path
from simulplay.core.tables import table_format, write_table
from simulplay.traces.model import streams_from_frame
from simulplay.traces.readers import TRACE_SUFFIXES


def write_trace(df: pd.DataFrame, path: str | Path, signature: Mapping[str, Any]) -> Path:
    """Write a canonical trace table; JSONL uses the one-stream-per-line layout."""
    p = Path(path)
    if table_format(p, TRACE_SUFFIXES) != ".jsonl":
        return write_table(df, p, signature, kind="trace")
    with atomic_path(p) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        for s in streams_from_frame(df, revising=True):
            updates = []
            retract = s.retract if s.retract is not None else [0] * len(s)
            for t, x, g, r in zip(s.times, s.texts, s.glue, retract):
                u = {"time_s": float(t), "text": x}
                if g:
                    u["glue"] = True
                if r:
                    u["retract"] = int(r)
                updates.append(u)
            line = {"talk_id": s.talk_id, "system": s.system, "source_s": s.source_s, "updates": updates}
            fh.write(json.dumps(line, ensure_ascii=False) + "\n")
    return p
