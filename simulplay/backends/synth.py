"""Planning and running synthesis into the audio store, and the manifest it yields.

``plan_requests`` turns streams × rules × realizations into requests (through
``plan_from_requests``, which a requests file read with ``--requests`` also takes), each with a
*request key*: the hash of the backend identity, the text and the reuse scope
(``never``: the request itself; ``same-realization``: the realization; ``always``: none).
Requests that share a key share audio and measured service time (reuse, recorded).
``run_synthesis`` synthesizes every key without a record, one request at a time on a
loaded, warmed-up backend; ``build_manifest`` reads the records back into the request
manifest (SPEC §7 plus synthesis columns) and the chunk table.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from simulplay.backends.base import Backend, BackendConfig, backend_summary, identity_key
from simulplay.backends.executors.jobs import SynthStats
from simulplay.backends.store import AudioStore
from simulplay.grouping import Rule, Splitter, requests_frame, split_requests
from simulplay.signature import base_signature
from simulplay.traces.model import Stream

MANIFEST_ORDER = ("talk_id", "system", "condition", "backend", "realization", "seq", "dispatch_s",
                  "service_s", "audio_s", "source_s", "text", "glue", "trigger", "n_updates", "group",
                  "audio_key", "sample_rate", "n_samples", "reused", "error", "worker", "host", "device",
                  "attempts", "request_attempts")
if TYPE_CHECKING:
    from simulplay.backends.executors import ExecutorSpec

__all__ = ["SynthStats", "build_manifest", "plan_from_requests", "plan_requests", "run_synthesis", "synthesize_request"]

CHUNK_ORDER = ("talk_id", "system", "condition", "backend", "realization", "seq", "chunk",
               "ready_offset_s", "audio_s", "n_samples")


def request_key(ident_hash: str, text: str, reuse: str, origin: dict[str, Any]) -> str:
    if reuse == "always":
        scope: Any = None
    elif reuse == "same-realization":
        scope = origin["realization"]
    else:
        scope = origin
    blob = json.dumps({"identity": ident_hash, "text": text, "scope": scope}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def plan_requests(streams: list[Stream], rules: Iterable[Rule], backend: Backend, *,
                  realizations: int = 1, splitter: Splitter | None = None, reuse: str | None = None) -> pd.DataFrame:
    """Every request of every output of ``streams`` grouped by ``rules`` (see
    :func:`plan_from_requests`, which it calls on the unsplit groups)."""
    return plan_from_requests(requests_frame(streams, rules), backend, realizations=realizations,
                              splitter=splitter, reuse=reuse)


def plan_from_requests(requests: pd.DataFrame, backend: Backend, *, realizations: int = 1,
                       splitter: Splitter | None = None, reuse: str | None = None) -> pd.DataFrame:
    """Every request of a requests table (rows of an output in ``seq`` order), split by
    the input limit (``splitter``, default the backend's), in a counterbalanced synthesis order.

    Order: realization by realization; within it talk by talk (in order of first
    appearance), with the condition order (first appearance) rotated by one position per
    talk (and per realization) so that no condition is always synthesized first.
    """
    splitter = splitter or backend.splitter()
    reuse = reuse or backend.config.reuse_policy()
    ident = identity_key(backend.identity())
    base = split_requests(requests, splitter)
    conds = list(dict.fromkeys(base["condition"]))
    talks = list(dict.fromkeys(base["talk_id"]))
    frames = []
    for r in range(realizations):
        df = base.assign(realization=r)
        t_index = df["talk_id"].map({t: i for i, t in enumerate(talks)})
        c_index = df["condition"].map({c: i for i, c in enumerate(conds)})
        df["_order"] = (c_index - t_index - r) % len(conds)
        df["_talk"] = t_index
        frames.append(df)
    plan = pd.concat(frames, ignore_index=True)
    plan = plan.sort_values(["realization", "_talk", "_order", "system", "seq"], kind="stable")
    plan = plan.drop(columns=["_order", "_talk"]).reset_index(drop=True)
    plan["backend"] = backend.label()
    origins = plan[["talk_id", "system", "condition", "realization", "seq"]].to_dict("records")
    plan["key"] = [request_key(ident, t, reuse, o) for t, o in zip(plan["text"], origins)]
    plan.attrs["reuse"] = reuse
    plan.attrs["splitter"] = splitter.describe()
    return plan


def origin_of(row: dict[str, Any]) -> dict[str, Any]:
    return {k: (int(row[k]) if k in ("seq", "realization") else str(row[k]))
            for k in ("talk_id", "system", "condition", "realization", "seq")}


def synthesize_request(backend: Backend, text: str) -> tuple[np.ndarray, float, list[list[float]]]:
    """Synthesize one request with the clock running: samples, service time (s), and
    each chunk's ``[seconds since the request started, n_samples]``."""
    chunks, arrays = [], []
    t0 = time.perf_counter()
    for samples in backend.stream(text):
        chunks.append([time.perf_counter() - t0, int(len(samples))])
        arrays.append(samples)
    service = time.perf_counter() - t0
    audio = np.concatenate(arrays).astype(np.int16) if arrays else np.zeros(0, np.int16)
    return audio, service, chunks


def run_synthesis(plan: pd.DataFrame, config: BackendConfig, store: AudioStore, *,
                  executor: ExecutorSpec | None = None, progress: Callable[[float, float], None] | None = None,
                  contention_sample: int = 8) -> SynthStats:
    """Synthesize every planned key that has no record yet (resumable, shareable store)."""
    from simulplay.backends.executors import ExecutorSpec, execute

    return execute(plan, config, store, executor or ExecutorSpec(), progress=progress,
                   contention_sample=contention_sample)


def build_manifest(plan: pd.DataFrame, store: AudioStore) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The request manifest and chunk table from the store's records (no synthesis)."""
    rows, chunk_rows = [], []
    for row in plan.to_dict("records"):
        rec = store.get_record(row["key"])
        out = {k: row[k] for k in ("talk_id", "system", "condition", "backend", "realization", "seq",
                                   "dispatch_s", "source_s", "text", "glue", "trigger", "n_updates", "group")}
        if rec is None:
            fail = store.get_failure(row["key"]) or {}
            out.update(service_s=np.nan, audio_s=np.nan, audio_key="", sample_rate=0, n_samples=0,
                       reused=False, error=fail.get("error", "not synthesized (the run was interrupted)"),
                       worker=fail.get("worker", ""), host=fail.get("host", ""), device=fail.get("device", ""),
                       attempts=fail.get("attempts", 0), request_attempts=fail.get("request_attempts", 0))
        else:
            rate = rec["sample_rate"]
            out.update(service_s=rec["service_s"], audio_s=rec["n_samples"] / rate, audio_key=rec["audio_key"],
                       sample_rate=rate, n_samples=rec["n_samples"], reused=rec["origin"] != origin_of(row),
                       error="", worker=rec["worker"], host=rec["host"], device=rec.get("device", ""),
                       attempts=rec.get("attempts", 1), request_attempts=rec.get("request_attempts", 1))
            for c, (offset, n) in enumerate(rec["chunks"]):
                chunk_rows.append({k: row[k] for k in ("talk_id", "system", "condition", "backend",
                                                       "realization", "seq")}
                                  | {"chunk": c, "ready_offset_s": offset, "audio_s": n / rate, "n_samples": n})
        rows.append(out)
    manifest = pd.DataFrame(rows, columns=list(MANIFEST_ORDER))
    if manifest["n_updates"].isna().any():  # a requests file without n_updates: unknown, not 0
        manifest["n_updates"] = manifest["n_updates"].astype("Int64")
    chunks = pd.DataFrame(chunk_rows, columns=list(CHUNK_ORDER))
    return manifest, chunks


def manifest_signature(backend: Backend, plan: pd.DataFrame) -> dict[str, Any]:
    """The run-level signature every downstream table inherits."""
    ident = backend.identity()
    return base_signature(backend=backend_summary(ident), settings=ident.get("settings"), seed=ident.get("seed"),
                          reuse=plan.attrs.get("reuse"), splitter=plan.attrs.get("splitter"),
                          **backend.config.signature_fields())
