"""Synthesize traces under grouping rules into a store and write the manifest."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from simulplay.backends.base import BackendConfig
from simulplay.backends.executors import ExecutorSpec
from simulplay.backends.store import AudioStore
from simulplay.backends.synth import SynthStats, build_manifest, manifest_signature, plan_requests, run_synthesis
from simulplay.console import SynthProgress
from simulplay.grouping import Rule, Splitter
from simulplay.sim.chunks import chunk_path
from simulplay.tables import write_table
from simulplay.traces.model import Stream


@dataclass
class SynthResult:
    manifest: pd.DataFrame
    chunks: pd.DataFrame
    stats: SynthStats
    signature: dict
    path: Path


def synthesize_to_manifest(streams: list[Stream], rules: list[Rule], config: BackendConfig, store: AudioStore,
                           out: Path, *, realizations: int = 1, max_chars: int | None = None,
                           reuse: str | None = None, progress: bool = True,
                           executor: ExecutorSpec | None = None, contention_sample: int = 8,
                           traces: Sequence[Path] = ()) -> SynthResult:
    """Plan, synthesize what the store lacks, and write ``out`` plus its chunk table.

    The manifest is written even when requests failed (their ``error`` is filled);
    comparisons then refuse the incomplete outputs. ``traces``, the files ``streams``
    came from, are recorded in the manifest's metadata (absolute path and SHA-256 each),
    so that ``simulplay report`` finds them for its trace statistics.
    """
    backend = config.create()
    splitter = Splitter(max_chars) if max_chars else None
    plan = plan_requests(streams, rules, backend, realizations=realizations, splitter=splitter, reuse=reuse)
    todo = plan["key"].nunique() - len(set(plan["key"]) & store.completed_keys())
    with SynthProgress(todo, f"{backend.label()}", enabled=progress and todo > 0) as bar:
        stats = run_synthesis(plan, config, store, executor=executor, progress=bar.advance,
                              contention_sample=contention_sample)
    manifest, chunks = build_manifest(plan, store)
    common = manifest_signature(backend, plan)
    sigs = [{**common, "rule": c} for c in manifest["condition"]]
    recorded = [{"path": str(Path(p).resolve()), "sha256": hashlib.sha256(Path(p).read_bytes()).hexdigest()}
                for p in traces]
    write_table(manifest, out, sigs, kind="manifest",
                extra_meta={"signature": common, "identity": backend.identity(), "traces": recorded})
    write_table(chunks, chunk_path(out), common, kind="chunks")
    return SynthResult(manifest, chunks, stats, common, Path(out))
