"""The latency table: SimulEval's speech-output metrics of every replayed output, in two forms.

One row per output (talk, system, condition[, backend][, realization]) with the eight
metrics of :mod:`simulplay.analysis.latency` twice:

* **plain** (non-computation-aware): each part's delay is its *dispatch* time, service
  zero (with ``release=chunk`` every chunk of a request shares the request's dispatch);
* **``_ca``** (computation-aware): each part's delay is its *ready* time under the
  measured serial synthesizer clock (``replay``'s primary clock, or the chunk's recorded
  readiness). This is not SimulEval's own ``--computation-aware`` mode, whose EndOffset
  does not move with compute time.

Parts without audio are left out of the instances (as SimulEval, which records no segment
for empty audio) but still occupy the synthesizer, as in ``replay``.

Milliseconds as SimulEval forms them: a delay is the replay's exact nanosecond time
divided by 10⁶ (the nearest double), the source length ``source_s`` taken to the
nanosecond likewise, a duration ``1000 · n_samples / sample_rate`` (SimulEval's own
expression; ``audio_s × 1000`` in a manifest without sample counts).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from simulplay.analysis.latency import COUNT_COLUMNS, DEFINITION, METRIC_COLUMNS, TOKEN_MS, speech_metrics
from simulplay.core.errors import InputError
from simulplay.core.signature import merge
from simulplay.core.timebase import to_ns
from simulplay.manifest.validate import has_samples, output_keys
from simulplay.sim.part_audio import part_samples
from simulplay.sim.replay import ReplayResult, output_label, replay
from simulplay.sim.variants import Measured, Release, Zero, parse_release

DELAYS = ("ready", "dispatch")
LATENCY_COLUMNS = METRIC_COLUMNS + tuple(f"{c}_ca" for c in METRIC_COLUMNS)


@dataclass(frozen=True)
class Piece:
    """Where an audible part's samples are: ``audio_key``'s samples ``start:stop`` of the
    ``total`` samples its request holds (:func:`simulplay.sim.part_audio.part_samples`)."""

    audio_key: str
    start: int
    stop: int
    total: int


@dataclass(frozen=True)
class Timeline:
    """One output's audible parts in SimulEval's terms (ms from source start)."""

    key: dict[str, Any]  # the output's key columns
    delays_ms: list[float]
    durations_ms: list[float]
    source_ms: float
    pieces: list[Piece] | None = None  # with sample columns: each part's samples
    sample_rate: int | None = None  # Hz, with sample columns and audio


@dataclass
class Timelines:
    """Every output's :class:`Timeline` (summary order; times in ms) and the replay they come
    from."""

    timelines: list[Timeline]
    replay: ReplayResult


@dataclass
class LatencyResult:
    """The latency table (one row per output, ms), one signature per row, and the outputs
    left out as incomplete."""

    table: pd.DataFrame
    signatures: list[dict[str, Any]]  # one per row
    excluded: list[str] = field(default_factory=list)


def speech_timelines(manifest: pd.DataFrame, *, delays: str = "ready", release: str | Release = "request",
                     chunks: pd.DataFrame | None = None, allow_incomplete: bool = False,
                     upstream: Mapping[str, Any] | None = None, source: str = "manifest") -> Timelines:
    """Replay a validated manifest and give each output's audible parts with their delays:
    ``ready`` (measured clock) or ``dispatch`` (zero service). Outputs in summary order."""
    if delays not in DELAYS:
        raise InputError.at(f"--delays '{delays}'", "unknown delays", accepted=" or ".join(DELAYS))
    rel = parse_release(release)
    if delays == "dispatch":
        manifest = _for_dispatch(manifest, source)
    res = replay(manifest, service=Measured() if delays == "ready" else Zero(), release=rel, chunks=chunks,
                 allow_incomplete=allow_incomplete, upstream=upstream, source=source)
    keys = output_keys(res.summary)
    parts = _with_samples(res.parts, manifest, chunks if rel.needs_chunks else None, keys)
    codes = parts[keys].merge(res.summary[keys].assign(_out=np.arange(len(res.summary))), on=keys,
                              how="left")["_out"].to_numpy()
    played = parts["play_s"].notna().to_numpy()
    delay_ms = to_ns(parts["ready_s"].to_numpy(float)) / 1e6
    out = []
    for i, key in enumerate(res.summary[keys].to_dict("records")):
        sel = np.flatnonzero((codes == i) & played)
        d = [float(x) for x in delay_ms[sel]]
        _check_order(d, parts.iloc[sel], key, keys, rel.needs_chunks, source)
        source_ms = float(to_ns(float(res.summary["source_s"].iloc[i])) / 1e6)
        pieces = rate = None
        if "audio_key" in parts:
            cols = ["audio_key", "sample_start", "sample_stop", "request_samples"]
            pieces = [Piece(k, int(a), int(b), int(n)) for k, a, b, n in parts.iloc[sel][cols].itertuples(index=False)]
            rates = parts["sample_rate"].to_numpy()[sel]
            rate = int(rates[0]) if len(rates) else None
        out.append(Timeline(key, d, [float(x) for x in parts["_dur_ms"].to_numpy()[sel]], source_ms, pieces, rate))
    return Timelines(out, res)


def latency_table(manifest: pd.DataFrame, *, release: str | Release = "request", chunks: pd.DataFrame | None = None,
                  allow_incomplete: bool = False, upstream: Mapping[str, Any] | None = None,
                  source: str = "manifest") -> LatencyResult:
    """SimulEval's speech-output metrics of every output of a validated manifest, plain
    (dispatch delays) and ``_ca`` (ready delays); see the module docstring."""
    kw = dict(release=release, chunks=chunks, allow_incomplete=allow_incomplete, upstream=upstream, source=source)
    plain = speech_timelines(manifest, delays="dispatch", **kw)
    aware = speech_timelines(manifest, delays="ready", **kw)
    rows = []
    for p, a in zip(plain.timelines, aware.timelines):
        rows.append({**a.key, **_metrics(p, ""), **_metrics(a, "_ca")})
    keys = output_keys(aware.replay.summary)
    table = pd.DataFrame(rows, columns=keys + list(LATENCY_COLUMNS))
    for col in COUNT_COLUMNS:
        for name in (col, f"{col}_ca"):
            table[name] = table[name].astype("Int64")
    extra = {"table": "latency", "service": "zero,_ca=measured", "latency": DEFINITION, "atd_token": f"{TOKEN_MS}ms"}
    sigs = [merge(s, extra) for s in aware.replay.signatures]
    return LatencyResult(table, sigs, list(aware.replay.excluded))


def _metrics(t: Timeline, suffix: str) -> dict[str, Any]:
    if not t.delays_ms:  # no audio: SimulEval skips such an instance
        return {f"{c}{suffix}": (0 if c == "num_chunks" else np.nan) for c in METRIC_COLUMNS}
    return {f"{c}{suffix}": v for c, v in speech_metrics(t.delays_ms, t.durations_ms, t.source_ms).items()}


def _for_dispatch(manifest: pd.DataFrame, source: str) -> pd.DataFrame:
    """The manifest for zero service: a service time left empty (a manifest with ``ready_s``)
    counts as 0, which zero service makes it anyway; every request needs ``dispatch_s``."""
    ok = (manifest["error"] == "").to_numpy()
    missing = ok & manifest["dispatch_s"].isna().to_numpy()
    if missing.any():
        i = int(np.flatnonzero(missing)[0])
        r = manifest.iloc[i]
        raise InputError.at(source, f"is empty for seq {r['seq']} of output "
                            f"{output_label(r, output_keys(manifest))}: the plain (non-computation-aware) "
                            "form delays each part to its dispatch time", field="dispatch_s",
                            accepted="dispatch_s on every request")
    return manifest.assign(service_s=manifest["service_s"].fillna(0.0))


def _with_samples(parts: pd.DataFrame, manifest: pd.DataFrame, chunks: pd.DataFrame | None,
                  keys: list[str]) -> pd.DataFrame:
    """Each part's duration in ms (``_dur_ms``) and, with sample counts (and a chunk table
    with them under chunk release), where its samples are: the columns of
    :func:`~simulplay.sim.part_audio.part_samples` (``audio_key`` only when the manifest
    has one)."""
    if has_samples(manifest) and (chunks is None or "n_samples" in chunks):
        out = part_samples(parts, manifest, chunks)
        n = (out["sample_stop"] - out["sample_start"]).to_numpy(np.int64)
        out["_dur_ms"] = 1000 * n / out["sample_rate"].to_numpy(np.int64)  # SimulEval: 1000 * len(samples) / rate
        return out if "audio_key" in manifest else out.drop(columns="audio_key")
    if chunks is None:  # the replay's request durations (seconds)
        return parts.assign(_dur_ms=parts["audio_s"].to_numpy(float) * 1000)
    out = parts.merge(chunks[keys + ["seq", "chunk", "audio_s"]].rename(columns={"audio_s": "_s"}),
                      on=keys + ["seq", "chunk"], how="left", validate="one_to_one")
    out["_dur_ms"] = out["_s"].to_numpy(float) * 1000  # the chunk table's durations (seconds)
    return out.drop(columns="_s")


def _check_order(delays_ms: list[float], parts: pd.DataFrame, key: dict, keys: list[str], by_chunk: bool,
                 source: str) -> None:
    """SimulEval's chunking of ATD assumes delays that never decrease (a serial clock's do)."""
    for j in range(1, len(delays_ms)):
        if delays_ms[j] < delays_ms[j - 1]:
            where = f"seq {parts['seq'].iloc[j]}" + (f" chunk {parts['chunk'].iloc[j]}" if by_chunk else "")
            raise InputError.at(source, f"part {where} of output {output_label(key, keys)} is ready at "
                                f"{delays_ms[j]:g} ms, before the part before it ({delays_ms[j - 1]:g} ms)",
                                field="ready_offset_s" if by_chunk else "ready_s",
                                accepted="readiness that never decreases within an output (SimulEval's ATD "
                                "assumes it)")
