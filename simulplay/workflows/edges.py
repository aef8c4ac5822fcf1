"""The edge-silence sweep over a synthesized manifest: speech probabilities of every stored
waveform (from the store's cache, or by VAD inference, then cached), the trimmed replays
at each threshold, η per threshold and the non-speech share of duration reductions.

The computations are :mod:`simulplay.analysis.edge_replay` (trimming, replay, shares) and
:mod:`simulplay.analysis.eta`; the model is :mod:`simulplay.vad`. Errors name the
``source`` the caller passes (the manifest file, a flag, an experiment key).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simulplay.analysis.bootstrap import Bootstrap
from simulplay.analysis.edge_replay import EdgesResult, audio_columns, nonspeech_share, replay_trimmed
from simulplay.analysis.eta import EtaResult, compute_eta
from simulplay.core.errors import FileFault, InputError, Interrupted
from simulplay.core.paths import check_folder_writable
from simulplay.core.progress import NO_PROGRESS, Progress, tracking
from simulplay.core.tables import write_table
from simulplay.grouping import canonical_condition
from simulplay.sim.replay import drop_incomplete
from simulplay.store.store import AudioStore, describe_request
from simulplay.traces.model import Stream
from simulplay.vad import ProbabilityCache, SileroVad, VadStats, to_vad_input


def parse_thresholds(text: str, source: str = "--thresholds") -> tuple[float, ...]:
    """``0.3,0.5,0.7`` → sorted distinct speech-probability thresholds, each in (0, 1]."""
    accepted = "comma-separated speech-probability thresholds in (0, 1], e.g. 0.3,0.5,0.7"
    out = []
    for part in text.split(","):
        try:
            value = float(part)
        except ValueError as e:
            raise InputError.at(f"{source} '{text}'", f"'{part.strip()}' is not a number", accepted=accepted) from e
        if not 0 < value <= 1:
            raise InputError.at(f"{source} '{text}'", f"{value:g} is not in (0, 1]", accepted=accepted)
        if value in out:
            raise InputError.at(f"{source} '{text}'", f"{value:g} is repeated", accepted=accepted)
        out.append(value)
    return tuple(sorted(out))


def check_guard(guard_ms: float, source: str = "--guard-ms") -> float:
    """The guard kept around speech, in milliseconds (finite, ≥ 0)."""
    if not (np.isfinite(guard_ms) and guard_ms >= 0):
        raise InputError.at(f"{source} {guard_ms:g}", "is not a duration ≥ 0", accepted="milliseconds ≥ 0, e.g. 100")
    return float(guard_ms)


def speech_probabilities(audio: Iterable[tuple[str, int, int]], store: AudioStore, model: SileroVad, *,
                         progress: Progress = NO_PROGRESS, requests: Mapping[str, str] | None = None,
                         ) -> tuple[dict[str, np.ndarray], VadStats]:
    """Probabilities per audio key (one per 512-sample frame at 16 kHz), from the cache or
    by inference (then cached).

    ``audio``: ``(audio_key, n_samples, sample_rate)`` triples (repeats and the empty key
    of a silent request are fine); ``progress`` hears of every waveform inferred (its
    seconds of audio and of inference); ``requests`` names a request of each key, for the
    message when its stored audio is damaged (:class:`~simulplay.store.store.AudioDamage`).
    The store's session lock is held throughout the inference (the cache writes into the
    store), which first checks that the store can be written; with every waveform cached the
    store is only read.
    """
    wanted = {k: (int(n), int(r)) for k, n, r in audio if k}
    cache = ProbabilityCache(store.root, model)
    stats = VadStats()
    out: dict[str, np.ndarray] = {}
    todo = []
    for key, (n, rate) in wanted.items():
        probs = cache.get(key, n, rate)
        if probs is None:
            todo.append(key)
        else:
            out[key] = probs
    stats.cached = len(out)
    if not todo:
        return out, stats
    check_folder_writable(store.root, shown=store.root / "vad", field="--store")  # where the cache goes
    with store.session(), tracking(progress, len(todo), f"silero-vad {model.variant}") as bar:
        try:
            for key in todo:
                n, rate = wanted[key]
                out[key], spent = _infer(store, model, cache, key, n, rate, (requests or {}).get(key))
                stats.inferred += 1
                stats.keys.append(key)
                stats.audio_s += n / rate
                stats.inference_s += spent
                bar.advance(audio_s=n / rate, work_s=spent)
        except KeyboardInterrupt as e:  # Ctrl-C or SIGTERM: every finished waveform is cached
            raise Interrupted(_kept(out, wanted), e) from None
        except FileFault as e:  # a full disk
            raise e.keeping(_kept(out, wanted)) from e.__cause__
    return out, stats


def _kept(out: Mapping, wanted: Mapping) -> str:
    return (f"speech probabilities of {len(out)} of {len(wanted)} waveforms done and kept in the store's cache; "
            "run the same command again to resume")


def _infer(store: AudioStore, model: SileroVad, cache: ProbabilityCache, key: str, n: int,
           rate: int, request: str | None) -> tuple[np.ndarray, float]:
    """One stored waveform's probabilities (cached now) and the inference seconds."""
    samples, _ = store.load_audio(key, n_samples=n, sample_rate=rate, request=request)
    t0 = time.perf_counter()
    probs = model.probabilities(to_vad_input(samples, rate))
    spent = time.perf_counter() - t0
    cache.put(key, probs)
    return probs, spent


def edge_replay(manifest: pd.DataFrame, store: AudioStore, thresholds: Sequence[float], *, guard_ms: float = 100.0,
                vad: SileroVad | None = None, allow_incomplete: bool = False,
                upstream: Mapping[str, Any] | None = None, source: str = "manifest",
                progress: Progress = NO_PROGRESS, silent_parts: str = "skip",
                streams: Sequence[Stream] | None = None) -> EdgesResult:
    """Replay a validated synthesized manifest once per threshold with trimmed durations
    (``guard_ms``: milliseconds kept before the first and after the last speech frame;
    ``silent_parts``: what a request trimmed to nothing does, as in replay; ``streams``: the
    run's traces, on which closed-loop outputs are decided again per threshold)."""
    vad = vad or SileroVad()
    kept, excluded = drop_incomplete(manifest, allow_incomplete, source)
    audio = audio_columns(kept, source)
    labels = {}
    for key, row in zip(audio["audio_key"], kept.loc[audio.index].itertuples()):
        labels.setdefault(key, describe_request(row))
    probs, stats = speech_probabilities(audio[["audio_key", "n_samples", "sample_rate"]].itertuples(index=False),
                                        store, vad, progress=progress, requests=labels)
    summary, sigs, parts, trims = replay_trimmed(kept, audio, probs, thresholds, guard_ms=guard_ms,
                                                 vad_label=vad.label(), excluded=excluded,
                                                 allow_incomplete=allow_incomplete, upstream=upstream, source=source,
                                                 silent_parts=silent_parts, streams=streams)
    return EdgesResult(summary, sigs, parts, trims, stats, dict(vad.identity), excluded)


@dataclass
class EdgesRun:
    """An edge-silence sweep with its η table and non-speech shares (Truong & Le (2026),
    Tables 10 and 16 shapes)."""

    result: EdgesResult
    eta: EtaResult | None = None  # when a, f and reference were given
    share: pd.DataFrame | None = None
    share_signatures: list[dict[str, Any]] | None = None


def run_edges(manifest: pd.DataFrame, store: AudioStore, thresholds: Sequence[float], *, guard_ms: float = 100.0,
              vad: SileroVad | None = None, a: str | None = None, f: str | None = None,
              reference: str | None = None, boot: Bootstrap | None = None,
              pairs: Sequence[tuple[str, str]] | None = None, allow_incomplete: bool = False,
              upstream: Mapping[str, Any] | None = None, source: str = "manifest",
              progress: Progress = NO_PROGRESS, silent_parts: str = "skip",
              streams: Sequence[Stream] | None = None) -> EdgesRun:
    """Sweep, then η per threshold (when ``a``, ``f``, ``reference``) and the non-speech share
    for ``pairs`` (``None``: no share table; empty: ``reference`` against every other condition)."""
    _check_names(manifest, a, f, [reference] + [c for p in pairs or () for c in p], source)
    res = edge_replay(manifest, store, thresholds, guard_ms=guard_ms, vad=vad, allow_incomplete=allow_incomplete,
                      upstream=upstream, source=source, progress=progress, silent_parts=silent_parts,
                      streams=streams)
    run = EdgesRun(res)
    if a is not None and f is not None and reference is not None:
        run.eta = compute_eta(res.summary, a=a, f=f, reference=reference, boot=boot,
                              allow_incomplete=allow_incomplete, upstream=res.signatures, source=source)
    if pairs is not None:
        if not pairs and reference is not None:
            ref = canonical_condition(reference)
            others = dict.fromkeys(canonical_condition(c) for c in res.summary["condition"])
            pairs = [(ref, c) for c in others if c != ref]
        run.share, run.share_signatures = nonspeech_share(res, pairs, allow_incomplete=allow_incomplete,
                                                          source=source)
    return run


def _check_names(manifest: pd.DataFrame, a: str | None, f: str | None, conditions: Sequence[str | None],
                 source: str) -> None:
    """Systems and conditions the caller names exist, before any inference runs."""
    systems = list(dict.fromkeys(manifest["system"]))
    for flag, name in (("--a", a), ("--f", f)):
        if name is not None and name not in systems:
            raise InputError.at(source, f"no system '{name}'", field=flag, accepted=", ".join(systems))
    known = list(dict.fromkeys(manifest["condition"].map(canonical_condition)))
    for c in conditions:
        if c is not None and canonical_condition(c) not in known:
            raise InputError.at(source, f"no condition '{c}'", field="--reference/--pair", accepted=", ".join(known))


def write_edges(run: EdgesRun, summary: Path, *, eta: Path | None = None, share: Path | None = None) -> None:
    """The sweep's summary (with the VAD identity in its metadata), and its η and
    non-speech share tables when asked for and computed."""
    er = run.result
    write_table(er.summary, summary, er.signatures, kind="edges-summary", extra_meta={"vad": er.vad})
    if eta is not None and run.eta is not None:
        write_table(run.eta.table, eta, run.eta.table_signatures, kind="eta-edges", signature_column=True,
                    notes=run.eta.notes)
    if share is not None and run.share is not None:
        write_table(run.share, share, run.share_signatures, kind="edges-nonspeech", signature_column=True)
