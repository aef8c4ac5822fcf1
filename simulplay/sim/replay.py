"""Replay a request manifest: synthesizer clock, parts, serial playback, summary.

Releases and service models are the variants of :mod:`simulplay.sim.variants`:
``release="request"`` (primary): a request's audio is ready when the whole request is
done. ``release="chunk"`` (sentence-release replay): each chunk is ready at its request's
start plus its recorded offset (offsets follow the service model).

Time is exact (:mod:`simulplay.core.timebase`): dispatch, service, readiness and offsets
are taken from float seconds to the nearest nanosecond once, durations come from
``n_samples / sample_rate`` when the manifest has those columns (running totals per
output, :func:`~simulplay.core.timebase.part_dur_ns`; a hand-written manifest's
``audio_s`` otherwise), and the clock and playback run on int64 nanoseconds. Tables get
float seconds back (``from_ns``) only when they are built.

``silent_parts`` is the reading of parts without audio (:mod:`simulplay.sim.playback`):
``skip`` (default) leaves them out of playback; ``hold`` plays them as zero-length parts
that hold the clock at their readiness. Under ``hold``, ``first_play_s`` is the playback
start of the first part even when it is silent, ``idle_s`` includes waits before silent
parts, and ``limiting_seq`` may be a silent part; the summary's signature records the
reading (``silent``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from simulplay.core.errors import IncompleteError, InputError
from simulplay.core.keys import OUTPUT_ID
from simulplay.core.signature import base_signature, merge
from simulplay.core.timebase import MAX_S, from_ns, part_dur_ns, to_ns
from simulplay.grouping.policy import loop_signature
from simulplay.manifest.validate import has_samples, output_keys, request_dur_ns, samples_disagree
from simulplay.sim.playback import serial_playback, summarize_playback
from simulplay.sim.segments import seg_sum
from simulplay.sim.variants import Measured, Release, ServiceModel, parse_release, parse_silent_parts

OUTPUT_KEY_COLUMNS = OUTPUT_ID


@dataclass
class ReplayResult:
    """Summary (one row per output), parts (one per played or silent part), the summary's
    signatures and the outputs excluded as incomplete.

    Times are float seconds from source start, durations seconds; ``first_play_s``,
    ``end_s`` and ``offset_s`` (``end_s − source_s``) are NaN for an output with no audio,
    as are a silent part's ``play_s`` and ``end_s``; ``limiting_seq`` is the seq of the
    limiting part (the last maximizing ``r_k + Σ_{j≥k} d_j``; the first part when every part
    was ready in time; ``<NA>`` without audio)."""

    summary: pd.DataFrame
    parts: pd.DataFrame
    signatures: list[dict[str, Any]]  # one per summary row
    excluded: list[str] = field(default_factory=list)

    def part_signatures(self) -> list[dict[str, Any]]:
        """One signature per part row: the signature of the part's output."""
        keys = [c for c in self.summary.columns if c in OUTPUT_KEY_COLUMNS]
        by_output = {tuple(row): sig for row, sig in zip(self.summary[keys].itertuples(index=False), self.signatures)}
        return [by_output[tuple(r)] for r in self.parts[keys].itertuples(index=False)]


def output_label(row: Mapping[str, Any], keys: list[str]) -> str:
    """An output named for messages: ``(talk_id=t1, system=A, condition=immediate)``."""
    return "(" + ", ".join(f"{k}={row[k]}" for k in keys) + ")"


def incomplete_outputs(manifest: pd.DataFrame) -> pd.Series:
    """Boolean per output (indexed by output keys): has a failed request."""
    keys = output_keys(manifest)
    bad = (manifest["error"] != "") | manifest["audio_s"].isna()
    return bad.groupby([manifest[k] for k in keys], sort=False).any()


def drop_incomplete(manifest: pd.DataFrame, allow_incomplete: bool, source: str) -> tuple[pd.DataFrame, list[str]]:
    """Fail closed on outputs with failed requests, or drop and name them when allowed."""
    keys = output_keys(manifest)
    if not ((manifest["error"] != "") | manifest["audio_s"].isna()).any():  # no failed request: nothing to group
        return manifest, []
    flags = incomplete_outputs(manifest)
    bad = flags[flags]
    if bad.empty:
        return manifest, []
    labels = [output_label(dict(zip(keys, k if isinstance(k, tuple) else (k,))), keys) for k in bad.index]
    if not allow_incomplete:
        shown = "; ".join(labels[:5]) + (f"; … {len(labels) - 5} more" if len(labels) > 5 else "")
        raise IncompleteError(
            f"{source}: {len(labels)} incomplete output(s) with failed requests: {shown} "
            "(rerun the synthesis, or pass --allow-incomplete to exclude them and count them)"
        )
    index = pd.MultiIndex.from_frame(manifest[keys]) if len(keys) > 1 else pd.Index(manifest[keys[0]])
    keep = ~index.isin(bad.index)
    return manifest[np.asarray(keep)].reset_index(drop=True), labels


def replay(
    manifest: pd.DataFrame,
    *,
    service: ServiceModel | None = None,
    release: str | Release = "request",
    chunks: pd.DataFrame | None = None,
    allow_incomplete: bool = False,
    upstream: Mapping[str, Any] | None = None,
    source: str = "manifest",
    silent_parts: str = "skip",
) -> ReplayResult:
    """Replay every output of a validated manifest (see :mod:`simulplay.manifest.validate`).

    Tables come back in float seconds from source start; every value is a whole number of
    nanoseconds computed exactly (module docstring). A caller that changes a request's
    duration after validation changes ``n_samples`` too when the manifest has it.
    """
    rel = parse_release(release)
    silent = parse_silent_parts(silent_parts)
    manifest, excluded = drop_incomplete(manifest, allow_incomplete, source)
    keys = output_keys(manifest)
    if manifest.empty:
        raise IncompleteError(f"{source}: no complete output to replay ({len(excluded)} excluded)")
    service = (service or Measured()).bind(manifest, source)
    codes = manifest.groupby(keys, sort=False).ngroup().to_numpy()
    # each output's first row: codes number the outputs in order of first appearance
    first = np.unique(codes, return_index=True)[1]
    outputs = manifest.iloc[first][keys + ["source_s"]].reset_index(drop=True)
    _check_range(manifest, codes, service, chunks if rel.needs_chunks else None, source)
    clock, ready = _request_clock(manifest, codes, service, source)
    queue = getattr(clock, "queue", None)  # shared servers: each request's wait for a worker

    if not rel.needs_chunks:
        part_codes, part_ready, part_dur = codes, ready, request_dur_ns(manifest, codes)
        parts = manifest[keys + ["seq"]].copy()
        part_row = np.arange(len(manifest))
    else:
        parts, part_codes, part_ready, part_dur, part_row = _chunk_parts(manifest, keys, codes, clock, service,
                                                                         chunks, source)

    played = part_dur > 0 if silent == "skip" else np.ones(len(part_dur), bool)
    pb = serial_playback(part_codes[played], part_ready[played], part_dur[played])
    res = summarize_playback(pb, len(outputs))
    heard = res.played & (res.audio > 0)  # an output without audio has no end under either reading

    play = np.full(len(part_dur), np.nan)
    end = np.full(len(part_dur), np.nan)
    idle = np.zeros(len(part_dur))
    play[played], end[played], idle[played] = from_ns(pb.play), from_ns(pb.end), from_ns(pb.idle)
    parts = parts.assign(ready_s=from_ns(part_ready), play_s=play, end_s=end, audio_s=from_ns(part_dur), idle_s=idle)

    seq_played = parts["seq"].to_numpy()[played]
    limiting = pd.array([int(seq_played[k]) if k >= 0 and h else pd.NA for k, h in zip(res.limiting, heard)],
                        dtype="Int64")
    summary = outputs[keys].copy()
    summary["n_parts"] = np.bincount(part_codes, minlength=len(outputs))
    source_ns = to_ns(outputs["source_s"].to_numpy(float))
    summary["first_play_s"] = np.where(heard, from_ns(res.first_play), np.nan)
    summary["audio_s"] = from_ns(res.audio)
    summary["idle_s"] = np.where(heard, from_ns(res.idle), 0.0)
    summary["end_s"] = np.where(heard, from_ns(res.end), np.nan)
    summary["offset_s"] = np.where(heard, from_ns(res.end - source_ns), np.nan)
    summary["source_s"] = outputs["source_s"].to_numpy()
    summary["limiting_seq"] = limiting
    if queue is not None:  # a chunk's queue_s is its request's
        parts["queue_s"] = from_ns(queue[part_row])
        summary["queue_s"] = from_ns(seg_sum(queue, codes, len(outputs)))

    common = merge(upstream, base_signature(
        release=rel.label(), service=service.label(), trim="none", silent=silent,
        excluded=len(excluded) if allow_incomplete else None))
    changed = rel.label() != "request" or service.label() != "measured" or silent != "skip"
    sigs = [merge(common, {"rule": row["condition"], "backend": row.get("backend")}, service.output_signature(row),
                  loop_signature(str(row["condition"]), changed))
            for row in summary.to_dict("records")]
    return ReplayResult(summary, parts, sigs, excluded)


def _check_range(manifest: pd.DataFrame, codes: np.ndarray, service: ServiceModel,
                 chunks: pd.DataFrame | None, source: str) -> None:
    """Refuse times whose exact sums could leave int64: the largest time plus an output's
    summed service and audio must stay below 2⁶² ns (about 146 years), so that every sum
    and difference of the clock and the playback (at most twice that) fits."""
    n = int(codes.max()) + 1
    per_output = {"service_s": service.request_seconds(manifest),
                  "audio_s": manifest["audio_s"].to_numpy(float)}
    reach = {col: float(np.nanmax(np.abs(manifest[col].to_numpy(float)), initial=0.0))
             for col in ("dispatch_s", "ready_s")}
    reach |= {col: float(np.bincount(codes, np.nan_to_num(np.abs(v), nan=0.0, posinf=np.inf), minlength=n).max())
              for col, v in per_output.items()}
    if chunks is not None and len(chunks):
        offsets = service.chunk_seconds(np.abs(chunks["ready_offset_s"].to_numpy(float)))
        reach["ready_offset_s"] = float(np.nanmax(offsets, initial=0.0))
    total = sum(reach.values())
    if not total < MAX_S / 2:
        field = max(reach, key=reach.get)
        raise InputError.at(source, f"times reach {total:.4g} s ({service.label()} service), beyond the "
                            "±146 years that exact nanosecond sums hold", field=field,
                            accepted="times, summed service and summed audio within ±146 years")


def _request_clock(manifest: pd.DataFrame, codes: np.ndarray, service: ServiceModel, source: str):
    ready_given = manifest["ready_s"].notna().to_numpy()
    dispatch = manifest["dispatch_s"].to_numpy(float)
    svc = manifest["service_s"].to_numpy(float)
    need_clock = ~ready_given if service.name == "measured" else np.ones(len(manifest), bool)
    missing = need_clock & (np.isnan(dispatch) | np.isnan(svc))
    if missing.any():
        i = int(np.flatnonzero(missing)[0])
        row = manifest.iloc[i]
        raise InputError.at(source, f"service model '{service.label()}' needs dispatch_s and service_s, "
                            f"missing for seq {row['seq']} of output ({row['talk_id']}, {row['system']}, "
                            f"{row['condition']})", field="service_s" if np.isnan(svc[i]) else "dispatch_s",
                            accepted="dispatch_s and service_s on every request "
                            "(or --service measured with ready_s)")
    clock = service.clock(manifest, codes, to_ns(np.nan_to_num(dispatch)), to_ns(service.request_seconds(manifest)))
    ready = np.where(need_clock, clock.ready, to_ns(manifest["ready_s"].fillna(0.0).to_numpy(float)))
    return clock, ready


def _chunk_parts(manifest, keys, codes, clock, service, chunks, source):
    if chunks is None:
        raise InputError.at(f"{source}", "chunk release needs the chunk table", field="--chunks",
                            accepted="a chunk table from `simulplay synth` (--chunks PATH)")
    if manifest["ready_s"].notna().any() and service.name == "measured" and manifest["service_s"].isna().any():
        raise InputError.at(source, "chunk release needs request start times", field="service_s",
                            accepted="dispatch_s and service_s on every request")
    ch = _checked_chunks(manifest, keys, chunks, source)
    samples = "n_samples" in ch and has_samples(manifest)
    req = manifest[keys + ["seq"] + (["sample_rate"] if samples else [])].assign(
        _code=codes, _start=clock.start, _row=np.arange(len(manifest)))
    ch = ch.drop(columns=["sample_rate"], errors="ignore").merge(req, on=keys + ["seq"], how="inner",
                                                                 validate="many_to_one")
    ch = ch.sort_values(["_row", "chunk"], kind="stable").reset_index(drop=True)
    rows = ch["_row"].to_numpy()
    offsets = to_ns(service.chunk_seconds(ch["ready_offset_s"].to_numpy(float), rows))
    slowdown = getattr(clock, "slowdown", None)  # shared servers: a chunk arrives as slowly as its request
    if slowdown is not None and (slowdown[rows] != 1.0).any():
        offsets = np.where(slowdown[rows] == 1.0, offsets, np.rint(offsets * slowdown[rows]).astype(np.int64))
    ready = ch["_start"].to_numpy() + offsets
    parts = ch[keys + ["seq", "chunk"]].copy()
    codes = ch["_code"].to_numpy()
    if not samples:
        return parts, codes, ready, to_ns(ch["audio_s"].to_numpy(float)), rows
    n, rate = ch["n_samples"].to_numpy(np.int64), ch["sample_rate"].to_numpy(np.int64)
    _same_samples(ch, ch["audio_s"].to_numpy(float), n, rate, f"{source} (chunk table)", "chunk")
    return parts, codes, ready, part_dur_ns(codes, n, rate), rows


def _checked_chunks(manifest: pd.DataFrame, keys: list[str], chunks: pd.DataFrame, source: str) -> pd.DataFrame:
    """The chunks of exactly the manifest's requests: same output keys, each (request,
    chunk) once, every request with audio covered, and each request's chunks making up its
    audio: with sample counts on both sides, chunk ``n_samples`` sum exactly to the
    request's. A table with float seconds only is read at the nanosecond: each value taken
    to the nearest ns is within 0.5 ns of the duration it stands for, so ``k`` chunks and
    their request may differ by ``(k + 1) // 2`` ns and no more. Chunks of outputs the
    manifest no longer holds (excluded as incomplete) are left out."""
    where = f"{source} (chunk table)"
    chunk_keys = [k for k in OUTPUT_ID if k in chunks]
    if chunk_keys != keys:
        raise InputError.at(where, f"identifies outputs by {', '.join(chunk_keys)}, the manifest by "
                            f"{', '.join(keys)}", field="--chunks",
                            accepted="the chunk table written with this manifest")
    outputs = manifest[keys].drop_duplicates()
    chunks = chunks.merge(outputs, on=keys, how="inner")  # outputs excluded as incomplete drop out
    ident = keys + ["seq", "chunk"]
    dup = chunks.duplicated(ident).to_numpy()
    if dup.any():
        i = int(dup.argmax())
        raise InputError.at(where, f"chunk {chunks['chunk'].iloc[i]} of request seq {chunks['seq'].iloc[i]} repeats",
                            row=i + 1, field="chunk", accepted="one row per (output, seq, chunk)")
    exact = "n_samples" in chunks and has_samples(manifest)
    col = "n_samples" if exact else "_ns"
    totals = (chunks.assign(_ns=to_ns(chunks["audio_s"].to_numpy(float))).groupby(keys + ["seq"], sort=False)
              .agg(_total=(col, "sum"), _k=(col, "size")).reset_index())
    req = manifest[keys + ["seq", "audio_s"] + (["n_samples"] if exact else [])]
    both = req.merge(totals, on=keys + ["seq"], how="outer", indicator=True)
    orphan = both[both["_merge"] == "right_only"]
    if len(orphan):
        r = orphan.iloc[0]
        raise InputError.at(where, f"has chunks for request seq {r['seq']} of output "
                            f"({', '.join(str(r[k]) for k in keys)}), which the manifest lacks", field="seq",
                            accepted="chunks of the manifest's requests only")
    both = both[both["_merge"] != "right_only"].reset_index(drop=True)
    total = both["_total"].fillna(0).to_numpy(np.int64)
    if exact:
        want = both["n_samples"].to_numpy(np.int64)
        bad = total != want
    else:
        want = to_ns(both["audio_s"].to_numpy(float))
        bad = np.abs(total - want) > (both["_k"].fillna(0).to_numpy(np.int64) + 1) // 2
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        r = both.iloc[i]
        held = (f"{total[i]} samples, the manifest {want[i]}" if exact else
                f"{from_ns(total[i]):.6f} s of audio, the manifest {r['audio_s']:.6f} s "
                f"({abs(int(total[i] - want[i]))} ns apart)")
        raise InputError.at(where, f"chunks of request seq {r['seq']} of output ({', '.join(str(r[k]) for k in keys)}) "
                            f"hold {held}", field="n_samples" if exact else "audio_s",
                            accepted="chunks that together make up each request's audio")
    return chunks


def _same_samples(ch: pd.DataFrame, audio_s: np.ndarray, n: np.ndarray, rate: np.ndarray, where: str,
                  what: str) -> None:
    """``audio_s`` and ``n_samples`` of each row must describe the same audio (to the sample)."""
    bad = samples_disagree(audio_s, n, rate)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError.at(where, f"{what} {ch[what].iloc[i]} of request seq {ch['seq'].iloc[i]}: audio_s "
                            f"{audio_s[i]:g} s is not n_samples / sample_rate = {n[i]} / {rate[i]} Hz",
                            field="audio_s", accepted="audio_s = n_samples / sample_rate")
