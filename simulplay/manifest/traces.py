"""The trace files a request manifest records (its Parquet metadata ``traces``:
``[{path, sha256}, …]``, each file's absolute path and SHA-256 as synthesis read it): written
by synthesis, read back by the report (Table 11) and by a closed-loop replay."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from simulplay.core.provenance import sha256_of_file


def trace_records(paths: Sequence[str | Path]) -> list[dict[str, str]]:
    """The record of the trace files at ``paths``, as they are now."""
    return [{"path": str(Path(p).resolve()), "sha256": sha256_of_file(p)} for p in paths]


def recorded_traces(records: Any) -> tuple[list[Path], list[Path]]:
    """The trace files ``records`` (a manifest's ``traces`` metadata) name, and those of them
    present but changed since they were recorded; entries without a path are skipped."""
    kept = [r for r in records or [] if isinstance(r, dict) and "path" in r]
    paths = [Path(str(r["path"])) for r in kept]
    return paths, [p for p, r in zip(paths, kept) if p.is_file() and sha256_of_file(p) != r.get("sha256")]
