"""``simulplay render``: one audio file per output, holding what the listener hears.

Each file is the output on the source clock (:mod:`simulplay.sim.listener_audio`): silence until
the first part plays and during every idle gap, every part's stored samples from its
playback start in the replay (``--release``, ``--service``), so its length is
``end_s × rate`` to the nearest sample and its sound regions are the replay's playback
intervals to the sample. Mono, 16-bit PCM, FLAC or WAV, at the output's sample rate.

With source audio (``--source-audio DIR``: ``DIR/<talk_id>.wav`` or ``.flac``, the name
made safe by :func:`simulplay.core.paths.safe_component`) the file is stereo: the source on the
left from its first sample (source time 0), the translation on the right, both at the
translation's rate (the source resampled with soxr, quality HQ, when its rate differs;
several source channels averaged); the file then lasts as long as the longer of the two.

``FOLDER/render.parquet`` and ``render.csv`` list every file: ``file``, ``channels``,
``sample_rate`` (Hz), ``n_samples`` (frames), ``duration_s``, ``n_parts`` (parts played),
``first_play_s``, ``audio_s`` (the translation's sound), ``idle_s`` (its silence before the
last part ends, the initial wait included), ``end_s``, ``source_s``, ``source_audio`` and
``source_audio_s`` — seconds from sample counts. Everything is written into a temporary
folder beside FOLDER and moved into place: a failure leaves nothing.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import soundfile as sf

from simulplay.core.errors import InputError
from simulplay.core.paths import check_new_folder, new_folder, safe_component, safe_names
from simulplay.core.progress import NO_PROGRESS, Progress, tracking
from simulplay.core.signature import merge
from simulplay.core.tables import write_table
from simulplay.grouping import canonical_condition
from simulplay.manifest.validate import output_keys
from simulplay.sim.listener_audio import RESAMPLE_QUALITY, Rendered, render_output, resample
from simulplay.sim.part_audio import LoadAudio, PartAudio, part_samples, require_audio
from simulplay.sim.replay import output_label, replay
from simulplay.sim.variants import Release, ServiceModel, parse_release

FORMATS = {"flac": "FLAC", "wav": "WAV"}
SOURCE_SUFFIXES = (".wav", ".flac")
#: The most a source file's duration may differ from the manifest's ``source_s`` (seconds).
SOURCE_TOLERANCE_S = 1.0
RENDER_COLUMNS = ("file", "channels", "sample_rate", "n_samples", "duration_s", "n_parts", "first_play_s",
                  "audio_s", "idle_s", "end_s", "source_s", "source_audio", "source_audio_s")


@dataclass
class RenderResult:
    """One row per file written (:data:`RENDER_COLUMNS` after the output keys), their
    signatures, and the outputs excluded as incomplete."""

    table: pd.DataFrame
    signatures: list[dict[str, Any]]
    folder: Path
    excluded: list[str] = field(default_factory=list)


def check_format(fmt: str) -> str:
    if fmt not in FORMATS:
        raise InputError.at(f"--format '{fmt}'", "is not a format render writes", accepted=" or ".join(FORMATS))
    return fmt


def check_source_folder(folder: str | Path | None) -> Path | None:
    if folder is None:
        return None
    p = Path(folder)
    if not p.is_dir():
        raise InputError.at(p, "is not a folder", field="--source-audio",
                            accepted="a folder holding one <talk_id>.wav (or .flac) per talk")
    return p


def select_outputs(manifest: pd.DataFrame, talks: Sequence[str] = (), conditions: Sequence[str] = ()) -> pd.DataFrame:
    """The manifest's rows of the given talks and conditions (all when none is given);
    a talk or condition the manifest lacks is an InputError listing those it has."""
    keep = np.ones(len(manifest), bool)
    if talks:
        known = list(dict.fromkeys(manifest["talk_id"]))
        for t in talks:
            if t not in known:
                raise InputError.at(f"--talk '{t}'", "is not a talk of the manifest", accepted=", ".join(known[:20]))
        keep &= manifest["talk_id"].isin(talks).to_numpy()
    if conditions:
        labels = manifest["condition"].map(canonical_condition)
        known = list(dict.fromkeys(labels))
        wanted = [canonical_condition(c) for c in conditions]
        for c, w in zip(conditions, wanted):
            if w not in known:
                raise InputError.at(f"--condition '{c}'", "is not a condition of the manifest",
                                    accepted=", ".join(known[:20]))
        keep &= labels.isin(wanted).to_numpy()
    return manifest[keep].reset_index(drop=True)


def render_outputs(manifest: pd.DataFrame, load_audio: LoadAudio, out: str | Path, *, talks: Sequence[str] = (),
                   conditions: Sequence[str] = (), release: str | Release = "request",
                   service: ServiceModel | None = None, chunks: pd.DataFrame | None = None,
                   source_audio: str | Path | None = None, fmt: str = "flac", allow_incomplete: bool = False,
                   upstream: Mapping[str, Any] | None = None, source: str = "manifest",
                   progress: Progress = NO_PROGRESS) -> RenderResult:
    """Render every selected output of a validated, synthesized manifest into the new
    folder ``out`` (module docstring); ``load_audio`` reads the store's samples by key."""
    target = check_new_folder(out)
    fmt, sources = check_format(fmt), check_source_folder(source_audio)
    require_audio(manifest, source, "for render")
    rel = parse_release(release)
    chosen = select_outputs(manifest, talks, conditions)
    res = replay(chosen, service=service, release=rel, chunks=chunks, allow_incomplete=allow_incomplete,
                 upstream=upstream, source=source)
    keys = output_keys(res.summary)
    parts = part_samples(res.parts, chosen, chunks if rel.needs_chunks else None, source=source)
    by_output = dict(tuple(parts.groupby(keys, sort=False)))
    outputs = res.summary[keys].to_dict("records")
    names = safe_names([[str(o[k]) for k in keys] for o in outputs])
    rates = _fallback_rates(chosen, keys)
    audio, src = PartAudio(load_audio, source), _SourceCache(sources)
    rows, sigs = [], []
    with new_folder(target) as tmp:
        with tracking(progress, len(outputs), "render") as bar:
            for i, (key, name) in enumerate(zip(outputs, names)):
                group = by_output.get(tuple(key[k] for k in keys), parts.iloc[:0])
                fallback = rates.get(tuple(key[k] for k in keys), 0)
                row, seconds = _render_one(group, key, keys, tmp, f"{name}.{fmt}", fmt, audio, src, fallback,
                                           float(res.summary["source_s"].iloc[i]), source)
                rows.append(row)
                sigs.append(merge(res.signatures[i], _signature(fmt, src.folder is not None)))
                bar.advance(audio_s=seconds)
        table = pd.DataFrame(rows, columns=keys + list(RENDER_COLUMNS))
        for suffix in (".parquet", ".csv"):
            write_table(table, tmp / f"render{suffix}", sigs, kind="render")
    return RenderResult(table, sigs, target, list(res.excluded))


def _render_one(group: pd.DataFrame, key: dict[str, Any], keys: list[str], folder: Path, file: str, fmt: str,
                audio: PartAudio, src: _SourceCache, fallback_rate: int, source_s: float,
                source: str) -> tuple[dict[str, Any], float]:
    """Render and write one output; its table row and its seconds of sound. An output
    without audio (and without source audio) gets no file (``file`` empty)."""
    label = output_label(key, keys)
    rendered = render_output(group, audio, label=label, source=source)
    audio.clear()
    left, rate = src.get(str(key["talk_id"]), rendered.rate or fallback_rate, source_s, label)
    if not rendered.n_parts and left is None:
        file, frames, channels = "", 0, 1
    else:
        frames, channels = _write(folder / file, rendered, left, rate, fmt)
    row = {**key, **_row(file, frames, channels, rate, rendered, src, left, source_s)}
    return row, (rendered.audio / rate if rate else 0.0)


def _fallback_rates(manifest: pd.DataFrame, keys: list[str]) -> dict[tuple, int]:
    """Each output's largest request sample rate: the rate of an output without audio."""
    rates = manifest.groupby(keys, sort=False)["sample_rate"].max()
    return {(k if isinstance(k, tuple) else (k,)): int(v) for k, v in rates.items()}


def _signature(fmt: str, stereo: bool) -> dict[str, Any]:
    sig = {"table": "render", "render": "nearest-sample", "format": f"{fmt}-pcm16"}
    if stereo:
        sig |= {"channels": "source-left,translation-right", "resampler": f"soxr-{RESAMPLE_QUALITY}"}
    return sig


def _write(path: Path, rendered: Rendered, left: np.ndarray | None, rate: int, fmt: str) -> tuple[int, int]:
    """Write one file; returns its frames and channels."""
    data = rendered.samples
    if left is not None:
        frames = max(len(left), len(data))
        stereo = np.zeros((frames, 2), np.int16)
        stereo[:len(left), 0], stereo[:len(data), 1] = left, data
        data = stereo
    buf = io.BytesIO()  # encoded in memory: a full disk is then an OSError naming the file (libsndfile's is not)
    sf.write(buf, data, rate, format=FORMATS[fmt], subtype="PCM_16")
    path.write_bytes(buf.getbuffer())
    return len(data), 1 if data.ndim == 1 else 2


def _row(file: str, frames: int, channels: int, rate: int, r: Rendered, src: _SourceCache,
         left: np.ndarray | None, source_s: float) -> dict[str, Any]:
    played = r.n_parts > 0
    return {"file": file, "channels": channels, "sample_rate": rate, "n_samples": frames,
            "duration_s": frames / rate if rate else 0.0, "n_parts": r.n_parts,
            "first_play_s": int(r.starts[0]) / rate if played else np.nan, "audio_s": r.audio / rate if rate else 0.0,
            "idle_s": r.idle / rate if played else np.nan, "end_s": r.end / rate if played else np.nan,
            "source_s": source_s, "source_audio": src.name if left is not None else "",
            "source_audio_s": src.duration_s if left is not None else np.nan}


class _SourceCache:
    """The source audio of one talk at a time, at the rate asked for (int16 mono)."""

    def __init__(self, folder: Path | None):
        self.folder = folder
        self._key: tuple[str, int] | None = None
        self._samples: np.ndarray | None = None
        self._rate = 0
        self.name, self.duration_s = "", float("nan")

    def get(self, talk_id: str, rate: int, source_s: float, label: str) -> tuple[np.ndarray | None, int]:
        """The talk's source samples at ``rate`` Hz (its own rate when ``rate`` is 0) and
        that rate; ``(None, rate)`` without source audio."""
        if self.folder is None:
            return None, rate
        if self._key != (talk_id, rate):
            path = source_file(self.folder, talk_id)
            self._samples, self.duration_s, self._rate = read_source(path, rate, source_s, label)
            self._key, self.name = (talk_id, rate), path.name
        return self._samples, self._rate


def source_file(folder: Path, talk_id: str) -> Path:
    """``folder/<safe talk id>.wav`` (or ``.flac``): the talk's source audio."""
    stem = safe_component(talk_id)
    for suffix in SOURCE_SUFFIXES:
        p = folder / f"{stem}{suffix}"
        if p.is_file():
            return p
    raise InputError.at(folder, f"has no {stem}.wav (or {stem}.flac) for talk '{talk_id}'", field="--source-audio",
                        accepted="one wav per talk, named by its talk_id")


def read_source(path: Path, rate: int, source_s: float, label: str) -> tuple[np.ndarray, float, int]:
    """A source file as int16 mono at ``rate`` Hz (its own rate when 0; channels averaged,
    soxr when the rates differ; a mono 16-bit file at ``rate`` is taken sample for sample),
    its duration in seconds (within :data:`SOURCE_TOLERANCE_S` of ``source_s``) and the rate."""
    try:
        info = sf.info(str(path))
        rate = rate or info.samplerate
        direct = info.channels == 1 and info.samplerate == rate and info.subtype == "PCM_16"
        data, got = sf.read(str(path), dtype="int16" if direct else "float64", always_2d=not direct)
    except (sf.LibsndfileError, RuntimeError) as e:
        raise InputError.at(path, f"is not readable audio ({e})", field="--source-audio",
                            accepted="a WAV or FLAC file") from e
    duration = len(data) / got
    if abs(duration - source_s) > SOURCE_TOLERANCE_S:
        raise InputError.at(path, f"lasts {duration:.3f} s, but {label} has source_s {source_s:g} s",
                            field="--source-audio", accepted=f"the talk's source audio (within "
                            f"{SOURCE_TOLERANCE_S:g} s of source_s)")
    if direct:
        return np.asarray(data, np.int16), duration, rate
    return resample(data.mean(axis=1), got, rate), duration, rate
