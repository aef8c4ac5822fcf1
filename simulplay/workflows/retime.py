"""``simulplay retime``: measure a manifest's service times again, on a warm backend, serially.

The manifest's requests (each distinct one once: rows that share a record share its new
time) are synthesized again one at a time, with the clock check running; the stored
audio is kept (the new samples are discarded), so only the clocks change: ``service_s``,
``cpu_s``, ``wait_s``, ``load1``, ``contended``, the chunks' ``ready_offset_s`` and the
worker columns. ``--sample N`` re-times N requests spread evenly over the manifest's
order (the rest keep their times: a cheap measurement of how far the clock was off);
``--all`` re-times every request (a manifest to replay). The comparison table holds,
per output, the re-timed requests' ratio ``new service / old service``: its median and
the worst (the one farthest from 1). The new manifest and chunk table pass the reader's
check before they are written (:func:`simulplay.manifest.check_written`; a failure is a
:class:`simulplay.manifest.WrittenTableError`, a bug, not an InputError).
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simulplay.backends import parse_backend
from simulplay.core.errors import InputError
from simulplay.core.keys import OUTPUT_ID
from simulplay.core.progress import NO_PROGRESS, Progress, tracking
from simulplay.core.provenance import machine
from simulplay.core.signature import base_signature
from simulplay.core.tables import read_table, stored_signatures, write_table
from simulplay.manifest.columns import chunk_path
from simulplay.manifest.validate import output_keys, validate_manifest
from simulplay.manifest.written import check_written
from simulplay.store.store import AudioStore
from simulplay.synthesis.clock_check import ClockCheck, check_clock
from simulplay.synthesis.executors.jobs import Job, Outcome, WorkerState

COMPARISON_COLUMNS = ("n_retimed", "old_median_s", "new_median_s", "median_ratio", "worst_ratio")
SAME_BACKEND = "the backend the manifest was synthesized with (its spec is in the manifest's metadata)"


@dataclass
class RetimeResult:
    """The re-timed manifest and chunks, the per-output comparison, the clock checks of the
    re-timing (its own requests) and of the new manifest, and the signature written."""

    manifest: pd.DataFrame
    chunks: pd.DataFrame | None
    comparison: pd.DataFrame
    retime_clock: ClockCheck
    clock: ClockCheck
    original_clock: str
    retimed: int
    failed: list[str]  # requests whose re-synthesis failed (they keep their old times)
    signature: dict[str, Any]
    path: Path


def retime_manifest(source: Path, store: AudioStore, out: Path, *, sample: int | None, backend: str | None = None,
                    progress: Progress = NO_PROGRESS) -> RetimeResult:
    """Re-time ``sample`` requests of the manifest ``source`` (None: all) and write ``out``,
    its chunk table and ``<out stem>.retime.csv`` (the comparison)."""
    frame, meta = _read(source)
    if not (backend or meta.get("backend_spec")):
        raise InputError.at(source, "does not record the backend it was synthesized with (a manifest older than "
                            "retime)", field="--backend", accepted="--backend SPEC, the manifest's backend")
    config = parse_backend(backend or meta["backend_spec"], source="--backend")
    state = _start(config, meta, source)
    groups = _groups(frame)
    chosen = _choose(groups, sample)
    outcomes: dict[int, Outcome] = {}
    probes: list[dict[str, Any]] = []
    failed: list[str] = []
    try:
        with tracking(progress, len(chosen), "retime") as bar:
            for g in chosen:
                row = frame.loc[groups[g][0]]
                done = _run(state, g, row)
                probes += done.probes
                if done.error:  # kept with its old time, not re-timed
                    failed.append(f"{row['text'][:40]!r}: {done.error}")
                else:
                    outcomes[g] = done
                bar.advance(audio_s=float(row["audio_s"]), work_s=0.0 if done.error else done.service_s)
        probes.append(state.probe("end"))
    finally:
        state.close()
    new = _apply(frame, groups, outcomes, state)
    retime_clock = check_clock(new.loc[new["retimed"]], new.loc[new["retimed"], "_group"], probes)
    clock = check_clock(new, new["_group"], probes)
    original = str(meta.get("signature", {}).get("clock", "unmeasured"))
    changed = {"clock": clock.label, "retime": "all" if sample is None else f"sample:{len(chosen)}"}
    sig = {**meta.get("signature", {}), **changed}
    rows = stored_signatures(meta, len(new)) or [{**sig, "rule": c} for c in new["condition"]]
    sigs = [{**r, **changed} for r in rows]
    manifest = new.drop(columns=["_group"])
    chunks = _chunks(source, manifest, outcomes, groups)
    check_written(manifest, chunks, out)  # a table the reader refuses is a bug, caught before it is written
    write_table(manifest, out, sigs, kind="manifest",
                extra_meta={**{k: v for k, v in meta.items() if k not in ("table", "signatures", "row_signature")},
                            "signature": sig, "clock": clock.to_dict(), "retime_clock": retime_clock.to_dict(),
                            "machine": machine(), "retimed_from": str(Path(source).resolve())})
    if chunks is not None:
        write_table(chunks, chunk_path(out), sig, kind="chunks")
    comparison = compare(manifest)
    csv_sig = base_signature(table="retime", **{k: v for k, v in sig.items() if k != "version"})
    write_table(comparison, Path(out).with_name(Path(out).stem + ".retime.csv"), csv_sig, kind="retime",
                signature_column=True)
    return RetimeResult(manifest, chunks, comparison, retime_clock, clock, original, len(outcomes), failed, sig,
                        Path(out))


def _read(source: Path) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The manifest in its file's row order and types, validated, and its metadata."""
    if Path(source).suffix.lower() != ".parquet":
        raise InputError.at(source, "is not a Parquet manifest", accepted="the .parquet manifest `simulplay synth` or "
                            "`run` wrote (a CSV copy lacks the backend and clock metadata)")
    raw, meta = read_table(source)
    for col in ("text", "audio_key", "n_samples"):
        if col not in raw:
            raise InputError.at(source, f"has no column '{col}'", field=col,
                                accepted="a manifest written by `simulplay synth` or `simulplay run`")
    validate_manifest(raw, str(source))
    return raw.reset_index(drop=True), meta


def _start(config, meta: dict[str, Any], source: Path) -> WorkerState:
    """Refuse a backend whose identity (apart from the device: the point is to re-time on
    another machine) differs from the manifest's; then load and warm it up."""
    want = {k: v for k, v in (meta.get("identity") or {}).items() if k != "device"}
    got = {k: v for k, v in config.create().identity().items() if k != "device"}
    for k in sorted(set(want) | set(got)):
        if want and want.get(k) != got.get(k):
            raise InputError.at(source, f"was synthesized with another backend: its '{k}' is {want.get(k)}, "
                                f"this backend's is {got.get(k)}", field="--backend", accepted=SAME_BACKEND)
    return WorkerState.start(config, f"retime@{socket.gethostname()}")


def _groups(frame: pd.DataFrame) -> list[list[int]]:
    """Rows that share one record (same backend, realization, text and audio), in manifest
    order; failed requests are left out (they have no service time to re-time)."""
    ok = frame[frame["error"].fillna("") == ""] if "error" in frame else frame
    cols = [c for c in ("backend", "realization", "text", "audio_key") if c in ok]
    return [list(idx) for _, idx in ok.groupby(cols, sort=False).groups.items()]


def _choose(groups: list[list[int]], sample: int | None) -> list[int]:
    """All groups, or ``sample`` of them spread evenly over the manifest's order."""
    if sample is None or sample >= len(groups):
        return list(range(len(groups)))
    return sorted(set(np.linspace(0, len(groups) - 1, sample).round().astype(int).tolist()))


def _run(state: WorkerState, g: int, row: pd.Series) -> Outcome:
    realization = int(row["realization"]) if "realization" in row else 0
    return state.run(Job(f"group-{g}", str(row["text"]), realization, {}))


def _apply(frame: pd.DataFrame, groups: list[list[int]], outcomes: dict[int, Outcome],
           state: WorkerState) -> pd.DataFrame:
    new = frame.copy()
    new["_group"] = -1
    new["retimed"] = False
    new["original_service_s"] = frame["service_s"]
    for g, rows in enumerate(groups):
        new.loc[rows, "_group"] = g
    for col in ("cpu_s", "wait_s", "load1"):
        if col not in new:
            new[col] = np.nan
    for g, out in outcomes.items():
        rows = groups[g]
        new.loc[rows, ["service_s", "cpu_s", "wait_s", "load1"]] = [
            out.service_s, *(np.nan if out.clock.get(c) is None else out.clock[c] for c in ("cpu_s", "wait_s",
                                                                                              "load1"))]
        new.loc[rows, ["worker", "host", "device"]] = [out.worker, out.host, out.device]
        new.loc[rows, "retimed"] = True
    unmatched = new["_group"] < 0  # failed rows: a group of their own, never re-timed
    new.loc[unmatched, "_group"] = np.arange(len(groups), len(groups) + int(unmatched.sum()))
    return new


def _chunks(source: Path, manifest: pd.DataFrame, outcomes: dict[int, Outcome],
            groups: list[list[int]]) -> pd.DataFrame | None:
    """The original chunk table with the re-timed requests' ready offsets: the new chunk
    times where the new synthesis yielded as many chunks, else the old ones scaled by the
    request's ratio."""
    path = chunk_path(source)
    if not path.exists():
        return None
    chunks, _ = read_table(path)
    keys = [k for k in (*OUTPUT_ID, "seq") if k in chunks]
    offsets = chunks["ready_offset_s"].to_numpy(float).copy()
    index = chunks.groupby(keys, sort=False).indices
    for g, out in outcomes.items():
        for r in groups[g]:
            at = index.get(tuple(manifest.loc[r, k] for k in keys))
            if at is None:
                continue
            if len(out.chunks) == len(at):
                offsets[at] = [c[0] for c in out.chunks]
            elif manifest.loc[r, "original_service_s"] > 0:
                offsets[at] *= out.service_s / manifest.loc[r, "original_service_s"]
    return chunks.assign(ready_offset_s=offsets)


def compare(manifest: pd.DataFrame) -> pd.DataFrame:
    """Per output with re-timed requests: how many, the old and new median service times
    (s), the median ratio new/old and the worst ratio (farthest from 1 on a log scale)."""
    done = manifest[manifest["retimed"] & (manifest["original_service_s"] > 0)]
    keys = output_keys(manifest)
    rows = []
    for key, g in done.groupby(keys, sort=False):
        ratio = (g["service_s"] / g["original_service_s"]).to_numpy(float)
        worst = ratio[np.argmax(np.abs(np.log(ratio)))]
        rows.append({**dict(zip(keys, key if isinstance(key, tuple) else (key,))), "n_retimed": len(g),
                     "old_median_s": float(g["original_service_s"].median()),
                     "new_median_s": float(g["service_s"].median()),
                     "median_ratio": float(np.median(ratio)), "worst_ratio": float(worst)})
    return pd.DataFrame(rows, columns=[*keys, *COMPARISON_COLUMNS])
