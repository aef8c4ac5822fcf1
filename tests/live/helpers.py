"""Small traces for live-run tests, written as JSONL (one stream per line)."""

from __future__ import annotations

import json
from pathlib import Path


def write_trace(path: Path, streams: list[dict]) -> Path:
    """``streams``: {"talk_id", "system", "source_s", "updates": [(time_s, text), …]}."""
    with open(path, "w", encoding="utf-8") as fh:
        for s in streams:
            ups = [{"time_s": t, "text": x} for t, x in s["updates"]]
            fh.write(json.dumps({"talk_id": s["talk_id"], "system": s["system"], "source_s": s["source_s"],
                                 "updates": ups}) + "\n")
    return path
