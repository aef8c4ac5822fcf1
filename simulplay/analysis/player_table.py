"""The player table: streaming player metrics for every output of a replayed manifest.

One row per output and pre-buffer value (outputs in manifest order, pre-buffers
ascending). Per-output columns repeat on each of its rows; ``prebuffer_*`` columns
belong to the row's pre-buffer. Times are seconds from source start, durations seconds.
The metric definitions and conventions are in :mod:`simulplay.analysis.player`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from simulplay.analysis import player as pl
from simulplay.core.errors import InputError
from simulplay.core.fields import Checker
from simulplay.core.keys import OUTPUT_ID, OUTPUT_KEYS
from simulplay.core.signature import merge
from simulplay.core.specs import format_value
from simulplay.core.timebase import MAX_S, from_ns, to_ns
from simulplay.manifest.validate import output_keys
from simulplay.sim.replay import ReplayResult, replay
from simulplay.sim.variants import Release, ServiceModel, parse_release

PLAYER_COLUMNS = (
    "prebuffer_s", "n_parts", "n_arrivals", "audio_s", "first_ready_s", "first_playable_s",
    "first_audible_s", "stall_count", "stall_total_s", "stall_longest_s", "required_startup_delay_s",
    "stall_free_prebuffer_s", "n_frames", "fluidity_deadlines", "fluidity_missed", "fluidity_index",
    "prebuffer_first_sound_s", "prebuffer_stall_count", "prebuffer_stall_total_s",
    "prebuffer_stall_longest_s", "prebuffer_end_s", "source_s",
)
COUNT_COLUMNS = ("n_arrivals", "stall_count", "n_frames", "fluidity_deadlines", "fluidity_missed",
                 "prebuffer_stall_count")
AUDIO_COLUMNS = ("audio_key", "sample_rate", "n_samples")

#: Given one output's parts (rows of the replay's part table, in play order): their
#: waveforms in that order (silent parts empty) and their sample rate in Hz.
WaveformSource = Callable[[pd.DataFrame], tuple[Sequence[np.ndarray], int]]
#: ``audio_key`` → (samples, sample rate in Hz), as ``AudioStore.load_audio``.
LoadAudio = Callable[[str], tuple[np.ndarray, int]]


@dataclass(frozen=True)
class PlayerConfig:
    """Player settings, in seconds (the CLI takes milliseconds for the short ones)."""

    frame_s: float = 0.020
    min_stall_s: float = 0.010
    startup_delay_s: float = 0.0
    prebuffers_s: tuple[float, ...] = (0.0, 0.5, 1.5)
    window_s: float = 0.010
    threshold_dbfs: float = -40.0

    def to_dict(self) -> dict[str, Any]:
        """``name: player`` and every setting (seconds, dBFS), to rebuild the config."""
        return {"name": "player", **asdict(self)}

    def signature(self, prebuffer_s: float, audible: bool) -> dict[str, Any]:
        """The player's part of a row's signature (milliseconds and seconds spelled out)."""
        sig = {"table": "player", "frame": _ms(self.frame_s), "min_stall": _ms(self.min_stall_s),
               "startup_delay": _ms(self.startup_delay_s), "prebuffer": f"{format_value(float(prebuffer_s))}s"}
        if audible:
            sig["audible"] = f"{format_value(float(self.threshold_dbfs))}dBFS/{_ms(self.window_s)}"
        return sig


def _ms(seconds: float) -> str:
    return f"{format_value(round(seconds * 1000, 9))}ms"


def player_config(*, frame_ms: float = 20.0, min_stall_ms: float = 10.0, startup_delay_ms: float = 0.0,
                  prebuffer_s: str = "0,0.5,1.5") -> PlayerConfig:
    """Validate the CLI's settings (``*_ms`` in milliseconds, ``frame_ms`` at least 1 ns;
    ``prebuffer_s`` comma-separated seconds) into a config in seconds; every bad one is
    reported at once, as one :class:`InputError`."""
    problems: list[InputError] = []
    for flag, value, positive in (("--frame-ms", frame_ms, True), ("--min-stall-ms", min_stall_ms, False),
                                  ("--startup-delay-ms", startup_delay_ms, False)):
        if not math.isfinite(value) or value < 0 or (positive and round(value * 1e6) < 1) or value / 1000 >= MAX_S:
            accepted = ("milliseconds ≥ 0.000001 (1 ns)" if positive else "milliseconds ≥ 0") + ", within 292 years"
            problems.append(InputError.at(f"{flag} {value:g}", "is out of range", accepted=accepted))
    try:
        prebuffers = parse_prebuffers(prebuffer_s)
    except InputError as e:
        problems.append(e)
        prebuffers = ()
    if problems:
        raise InputError([p for e in problems for p in e.problems])
    return PlayerConfig(frame_s=frame_ms / 1000, min_stall_s=min_stall_ms / 1000,
                        startup_delay_s=startup_delay_ms / 1000, prebuffers_s=prebuffers)


def parse_prebuffers(text: str) -> tuple[float, ...]:
    """``0,0.5,1.5`` → ascending pre-buffers in seconds (each finite, ≥ 0, no repeats)."""
    source, accepted = f"--prebuffer-s '{text}'", "comma-separated seconds ≥ 0, e.g. 0,0.5,1.5"
    items = [t.strip() for t in text.split(",")]
    values = []
    for item in items:
        try:
            v = float(item)
        except ValueError as e:
            raise InputError.at(source, f"'{item}' is not a number", accepted=accepted) from e
        if not math.isfinite(v) or v < 0:
            raise InputError.at(source, f"{item} is not ≥ 0", accepted=accepted)
        if v >= MAX_S:
            raise InputError.at(source, f"{item} is beyond 292 years", accepted=accepted)
        values.append(v)
    if len(set(values)) != len(values):
        raise InputError.at(source, "repeats a value", accepted=accepted)
    return tuple(sorted(values))


@dataclass
class PlayerResult:
    """The player table (times in seconds), one signature per table row, and the outputs
    that replay excluded (``allow_incomplete``)."""

    table: pd.DataFrame
    signatures: list[dict[str, Any]]  # one per table row
    excluded: list[str] = field(default_factory=list)


def player_metrics(
    manifest: pd.DataFrame,
    *,
    config: PlayerConfig,
    release: str | Release = "request",
    service: ServiceModel | None = None,
    chunks: pd.DataFrame | None = None,
    allow_incomplete: bool = False,
    upstream: Mapping[str, Any] | None = None,
    source: str = "manifest",
    load_audio: LoadAudio | None = None,
    silent_parts: str = "skip",
) -> PlayerResult:
    """Replay a validated manifest and compute the player table.

    ``load_audio`` maps an ``audio_key`` to its samples and rate; when given, the manifest needs
    ``audio_key, sample_rate, n_samples`` and ``first_audible_s`` is computed. ``silent_parts``:
    ``skip`` or ``hold`` (:mod:`simulplay.analysis.player`).
    """
    audio = _checked_audio(manifest, source) if load_audio is not None else None
    release = parse_release(release)
    res = replay(manifest, service=service, release=release, chunks=chunks,
                 allow_incomplete=allow_incomplete, upstream=upstream, source=source, silent_parts=silent_parts)
    waveforms = None if audio is None else _waveform_source(res, audio, load_audio, release, source)
    return player_table(res, config, waveforms, hold=silent_parts == "hold")


def player_table(res: ReplayResult, config: PlayerConfig, waveforms: WaveformSource | None = None, *,
                 hold: bool = False) -> PlayerResult:
    """Player rows for every output of a replay, times and durations in seconds (see the
    module docstring); ``waveforms`` adds ``first_audible_s``; ``hold``: silent parts hold
    the clock at their readiness (the replay's ``--silent-parts hold``)."""
    keys = output_keys(res.summary)
    parts = res.parts
    codes = parts[keys].merge(res.summary[keys].assign(_out=np.arange(len(res.summary))), on=keys,
                              how="left")["_out"].to_numpy()
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(res.summary) + 1))
    ready, audio = parts["ready_s"].to_numpy(float), parts["audio_s"].to_numpy(float)
    rows, sigs = [], []
    for i, (key_row, sig) in enumerate(zip(res.summary[keys].to_dict("records"), res.signatures)):
        sel = order[bounds[i]:bounds[i + 1]]
        tl = pl.timeline(ready[sel], audio[sel], hold=hold)
        common = {**key_row, "n_parts": len(sel), **output_metrics(tl, config)}
        if waveforms is not None:
            common["first_audible_s"] = _first_audible(ready[sel], audio[sel], waveforms(parts.iloc[sel]), config,
                                                       hold)
        common["source_s"] = float(res.summary["source_s"].iloc[i])
        for p in config.prebuffers_s:
            rows.append({**common, "prebuffer_s": p, **prebuffer_metrics(tl, p, config)})
            sigs.append(merge(sig, config.signature(p, waveforms is not None)))
    table = pd.DataFrame(rows, columns=list(keys) + list(PLAYER_COLUMNS))
    for col in COUNT_COLUMNS:
        table[col] = table[col].astype("Int64")
    return PlayerResult(table, sigs, list(res.excluded))


def output_metrics(tl: pl.Timeline, config: PlayerConfig) -> dict[str, Any]:
    """Per-output player metrics of one timeline, in seconds (missing without audio)."""
    out: dict[str, Any] = {"n_arrivals": len(tl), "audio_s": from_ns(tl.total)}
    if len(tl) == 0:
        return out  # no audio: every other metric is missing
    frame, min_stall = int(to_ns(config.frame_s)), int(to_ns(config.min_stall_s))
    zero = pl.stalls(tl, 0, min_stall)
    first = pl.first_playable(tl, frame)
    flu = pl.fluidity(tl, frame, int(to_ns(config.startup_delay_s)))
    out.update(
        first_ready_s=from_ns(tl.time[0]),
        first_playable_s=math.nan if first is None else from_ns(first),
        stall_count=zero.count, stall_total_s=from_ns(zero.total), stall_longest_s=from_ns(zero.longest),
        required_startup_delay_s=from_ns(pl.required_startup_delay(tl)),
        stall_free_prebuffer_s=from_ns(pl.stall_free_prebuffer(tl, min_stall)),
        n_frames=0 if flu is None else flu.frames,
        fluidity_deadlines=0 if flu is None else flu.deadlines,
        fluidity_missed=0 if flu is None else flu.missed,
        fluidity_index=math.nan if flu is None else flu.index,
    )
    return out


def prebuffer_metrics(tl: pl.Timeline, prebuffer_s: float, config: PlayerConfig) -> dict[str, Any]:
    """Playback ``prebuffer_s`` after the first arrival: first sound, stalls, end (seconds)."""
    if len(tl) == 0:
        return {}
    s = pl.stalls(tl, int(to_ns(prebuffer_s)), int(to_ns(config.min_stall_s)))
    return {"prebuffer_first_sound_s": from_ns(s.start), "prebuffer_stall_count": s.count,
            "prebuffer_stall_total_s": from_ns(s.total), "prebuffer_stall_longest_s": from_ns(s.longest),
            "prebuffer_end_s": from_ns(s.end)}


def _first_audible(ready_s, audio_s, source: tuple[Sequence[np.ndarray], int], config: PlayerConfig,
                   hold: bool = False) -> float:
    arrays, rate = source
    j = pl.first_audible_part(arrays, rate, window_s=config.window_s, threshold_dbfs=config.threshold_dbfs)
    return math.nan if j < 0 else float(pl.part_arrivals(ready_s, audio_s, hold=hold)[j])


def _checked_audio(manifest: pd.DataFrame, source: str) -> pd.DataFrame:
    """``audio_key, sample_rate, n_samples`` of the requests without error, checked (before
    any replay, so that a bad column is reported as such)."""
    Checker(source, manifest).require_columns((*OUTPUT_KEYS, "seq") + AUDIO_COLUMNS,
                                              "synthesized manifest (for first_audible_s)")
    keys = output_keys(manifest)
    ok = manifest[manifest["error"] == ""].reset_index(drop=True)
    labels = ["/".join(map(str, k)) + f" seq {s}" for k, s in zip(ok[keys].itertuples(index=False), ok["seq"])]
    check = Checker(source, ok, row_label="request", rows=labels)
    audio = ok[keys + ["seq"]].copy()
    audio["audio_key"] = check.strings("audio_key", allow_empty=True)
    audio["sample_rate"] = check.integers("sample_rate", accepted="the sample rate in Hz, > 0")
    audio["n_samples"] = check.integers("n_samples", accepted="the sample count, ≥ 0")
    sounding = audio["n_samples"].to_numpy() > 0
    for i in np.flatnonzero(sounding & (audio["sample_rate"].to_numpy() <= 0)):
        check.add_at(int(i), "is not positive", "sample_rate", "the sample rate in Hz, > 0 (for audio)")
    for i in np.flatnonzero(audio["n_samples"].to_numpy() < 0):
        check.add_at(int(i), "is negative", "n_samples", "the sample count, ≥ 0")
    check.raise_if_any()
    return audio


def _waveform_source(res: ReplayResult, audio: pd.DataFrame, load_audio: LoadAudio,
                     release: Release, source: str) -> WaveformSource:
    """Per output, load each request's samples (checked against ``n_samples``) and, for
    chunk release, cut them at the chunks' cumulative durations rounded to samples."""
    keys = output_keys(res.summary)
    by_output = {tuple(k): g for k, g in audio.groupby(keys, sort=False)}

    def waveforms(parts: pd.DataFrame) -> tuple[list[np.ndarray], int]:
        key = tuple(parts[keys].iloc[0]) if len(parts) else None
        reqs = by_output.get(key, audio.iloc[:0])
        rates = reqs["sample_rate"][reqs["n_samples"] > 0].unique()  # a silent request needs no rate
        if len(rates) > 1:
            raise InputError.at(source, f"output ({', '.join(map(str, key))}) mixes sample rates "
                                f"{', '.join(map(str, sorted(rates)))}", field="sample_rate",
                                accepted="one sample rate per output")
        rate = int(rates[0]) if len(rates) else 1
        loaded = {int(r.seq): _load(load_audio, r.audio_key, int(r.n_samples), int(r.sample_rate),
                                    _label(r)) for r in reqs.itertuples()}
        if not release.needs_chunks:
            return [loaded[int(s)] for s in parts["seq"]], rate
        out = []
        for seq, part_chunks in parts.groupby("seq", sort=False):
            w = loaded[int(seq)]
            cuts = np.rint(np.cumsum(part_chunks["audio_s"].to_numpy(float)) * rate).astype(np.int64)
            cuts = np.minimum(cuts, len(w))
            cuts[-1] = len(w)  # the last chunk ends with the request
            out.extend(np.split(w, cuts[:-1]))
        return out, rate

    return waveforms


def _load(load_audio: LoadAudio, key: str, n_samples: int, rate: int, request: str) -> np.ndarray:
    if n_samples == 0:
        return np.zeros(0, np.float32)
    try:
        samples, got_rate = load_audio(key)
    except InputError as e:  # the store's AudioDamage: name the request too
        if not hasattr(e, "with_request"):
            raise
        raise e.with_request(request) from None
    samples = np.asarray(samples)
    if samples.ndim != 1 or len(samples) != n_samples:
        raise InputError.at(f"audio {key}", f"expected {n_samples} mono samples, got shape {samples.shape}",
                            accepted="the samples the manifest's n_samples describes")
    if int(got_rate) != rate:
        raise InputError.at(f"audio {key}", f"stored at {got_rate} Hz, manifest says {rate} Hz",
                            field="sample_rate", accepted="the manifest's sample rate")
    return samples


def _label(r) -> str:
    keys = [k for k in (*OUTPUT_ID, "seq") if hasattr(r, k)]
    return "(" + ", ".join(f"{k.removesuffix('_id')} {getattr(r, k)}" for k in keys) + ")"
