"""`simulplay blocks`: select blocks, run every feed condition in continuing sessions,
and compare completion after the last original update, B = C_last − a_last."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from simulplay.analysis.bootstrap import Bootstrap
from simulplay.backends.base import BackendConfig, SessionBackend, backend_summary
from simulplay.blocks.compare import compare_blocks
from simulplay.blocks.selection import select_blocks
from simulplay.blocks.sessions import block_tables, run_blocks
from simulplay.core.errors import InputError
from simulplay.core.signature import base_signature
from simulplay.core.tables import write_table
from simulplay.grouping import Rule
from simulplay.store.store import AudioStore
from simulplay.traces.model import Stream


@dataclass
class BlockRun:
    summary: pd.DataFrame
    parts: pd.DataFrame
    feeds: pd.DataFrame
    comparison: pd.DataFrame
    signature: dict[str, Any]
    compare_signature: dict[str, Any]
    identity: dict[str, Any]


def run_block_protocol(streams: list[Stream], config: BackendConfig, rules: list[Rule], *, reference: str,
                       min_words: int, max_words: int, seed: int, boot: Bootstrap, store: AudioStore | None = None,
                       max_wall_s: float = 180.0, max_audio_s: float = 240.0,
                       allow_incomplete: bool = False) -> BlockRun:
    """Blocks × feed conditions, one fresh session each, then the paired comparison."""
    conditions = [r.canonical() for r in rules]
    if reference not in conditions:
        raise InputError.at("--reference", f"'{reference}' is not one of the rules ({', '.join(conditions)})",
                            accepted="one of the --rule conditions")
    if len(set(conditions)) < 2:
        raise InputError.at("--rule", "needs at least two different feed conditions", accepted="e.g. immediate "
                            "and timer:w=4")
    if getattr(config, "kind", "request") != "session":
        raise InputError.at("--backend", f"backend '{config.name}' synthesizes requests, not continuing sessions",
                            accepted="a session backend (cosyvoice:…)")
    blocks = select_blocks(streams, min_words=min_words, max_words=max_words, seed=seed)
    backend = config.create()
    if not isinstance(backend, SessionBackend):  # pragma: no cover - a misregistered backend
        raise InputError.at("--backend", f"backend '{config.name}' has no sessions", accepted="cosyvoice")
    try:
        results = run_blocks(blocks, backend, rules, max_wall_s=max_wall_s, max_audio_s=max_audio_s)
        identity = backend.identity()
    finally:
        backend.close()
    summary, parts, feeds = block_tables(results, store)
    sig = base_signature(table="blocks", backend=backend_summary(identity), settings=identity.get("settings"),
                         seed=identity.get("seed"), selection=f"words={min_words}-{max_words},seed={seed}",
                         clock="real-time feed from the block's first update",
                         limits=f"{max_wall_s:g}s,{max_audio_s:g}s")
    comparison = compare_blocks(summary, reference=reference, boot=boot, allow_incomplete=allow_incomplete)
    boot_sig = {k: v for k, v in boot.signature().items() if k != "talk_order"}  # blocks: in the sessions' order
    compare_sig = {**sig, "table": "blocks-compare", "reference": reference, **boot_sig}
    return BlockRun(summary, parts, feeds, comparison, sig, compare_sig, identity)


def write_blocks(run: BlockRun, summary: Path, compare: Path, *, parts: Path | None = None,
                 feeds: Path | None = None) -> None:
    """The session summary (with the backend identity in its metadata), the comparison, and
    the per-chunk and per-feed tables when asked for."""
    write_table(run.summary, summary, run.signature, kind="blocks", extra_meta={"identity": run.identity})
    write_table(run.comparison, compare, run.compare_signature, kind="blocks-compare", signature_column=True)
    if parts:
        write_table(run.parts, parts, run.signature, kind="blocks-parts")
    if feeds:
        write_table(run.feeds, feeds, run.signature, kind="blocks-feeds")
