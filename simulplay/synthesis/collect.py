"""The request manifest and chunk table read back from the store's records.

One row per planned request (docs/formats.md plus synthesis columns, :data:`MANIFEST_ORDER`): a
completed request carries its record's audio key, sample count, rate and measured
service time (``audio_s = n_samples / sample_rate``) with its CPU time, run-queue wait and
load (empty in records older than the clock check); a failed or missing one carries its
error and empty clocks, so comparisons refuse its output. ``reused`` marks rows whose
record was made for another origin (same request key).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from simulplay.backends.base import Backend, backend_summary
from simulplay.core.keys import OUTPUT_ID, OUTPUT_KEYS
from simulplay.core.plugins import entries
from simulplay.core.signature import base_signature
from simulplay.manifest.columns import CHUNK_ORDER, MANIFEST_ORDER
from simulplay.store.store import AudioStore
from simulplay.synthesis.plan import ORDER_COLUMNS, Plan, origin_of


def build_manifest(plan: pd.DataFrame, store: AudioStore
                   ) -> tuple[pd.DataFrame, pd.DataFrame, set[Any], list[int]]:
    """The request manifest and chunk table from the store's records (no synthesis), the
    ``clock_run`` values of those records (the runs that measured them), and the sorted
    ``noise_seed`` values they record (:attr:`simulplay.backends.base.Backend.noise_seed`;
    none in records older than it)."""
    rows, chunk_rows, runs, seeds = [], [], set(), set()
    for row in plan.to_dict("records"):
        rec = store.get_record(row["key"])
        out = {k: row[k] for k in (*OUTPUT_ID, "seq",
                                   "dispatch_s", "source_s", "text", "glue", "trigger", "n_updates", "group",
                                   *ORDER_COLUMNS)}
        if rec is None:
            fail = store.get_failure(row["key"]) or {}
            out.update(service_s=np.nan, audio_s=np.nan, audio_key="", sample_rate=0, n_samples=0,
                       reused=False, error=fail.get("error", "not synthesized (the run was interrupted)"),
                       worker=fail.get("worker", ""), host=fail.get("host", ""), device=fail.get("device", ""),
                       attempts=fail.get("attempts", 0), request_attempts=fail.get("request_attempts", 0),
                       cpu_s=np.nan, wait_s=np.nan, load1=np.nan)
        else:
            runs.add(rec.get("clock_run"))
            if isinstance(rec.get("noise_seed"), int):
                seeds.add(rec["noise_seed"])
            rate = rec["sample_rate"]
            out.update(service_s=rec["service_s"], audio_s=rec["n_samples"] / rate, audio_key=rec["audio_key"],
                       sample_rate=rate, n_samples=rec["n_samples"], reused=rec["origin"] != origin_of(row),
                       error="", worker=rec["worker"], host=rec["host"], device=rec.get("device", ""),
                       attempts=rec.get("attempts", 1), request_attempts=rec.get("request_attempts", 1),
                       **{c: _number(rec.get(c)) for c in ("cpu_s", "wait_s", "load1")})
            for c, (offset, n) in enumerate(rec["chunks"]):
                chunk_rows.append({k: row[k] for k in (*OUTPUT_KEYS, "backend",
                                                       "realization", "seq")}
                                  | {"chunk": c, "ready_offset_s": offset, "audio_s": n / rate, "n_samples": n})
        rows.append(out)
    manifest = pd.DataFrame(rows, columns=list(MANIFEST_ORDER))
    manifest["contended"] = False  # set by check_clock
    if manifest["n_updates"].isna().any():  # a requests file without n_updates: unknown, not 0
        manifest["n_updates"] = manifest["n_updates"].astype("Int64")
    chunks = pd.DataFrame(chunk_rows, columns=list(CHUNK_ORDER))
    return manifest, chunks, runs, sorted(seeds)


def _number(value: Any) -> float:
    return float("nan") if value is None else float(value)


def manifest_signature(backend: Backend, plan: Plan) -> dict[str, Any]:
    """The run-level signature every downstream table inherits."""
    ident = backend.identity()
    return base_signature(backend=backend_summary(ident), settings=ident.get("settings"), seed=ident.get("seed"),
                          reuse=plan.reuse, splitter=plan.splitter,
                          order=plan.order, plugin=entries("backend", backend.config.name) or None,
                          **backend.config.signature_fields())
