"""``simulplay export-simuleval``: a replay as SimulEval 1.1.4 speech-output folders.

One folder per (system, condition[, backend][, realization]) under ``OUT`` (SimulEval's
score-only mode prints one mean over a folder's instances, and a mean over conditions
would mean nothing), each holding what a live SimulEval speech-to-speech evaluation writes:

* ``config.yaml`` (``source_type: speech``, ``target_type: speech``);
* ``instances.log``: one JSON line per talk (``index`` 0..N−1 in summary order), with
  SimulEval's keys: ``delays`` (ms, one per audible part: its ready time under the
  measured clock, or with ``delays="dispatch"`` its dispatch time), ``durations``
  (``1000·n/rate`` ms), ``prediction_offset``, ``elapsed`` (``[]``, as SimulEval writes for
  speech), ``intervals`` (``[start_ms, duration_ms]`` of SimulEval's serial playback),
  ``prediction_length`` (s), ``source_length`` (ms), ``reference`` (the output's request
  text), ``source`` (``<talk_id>.wav``) and ``prediction`` (the wav's absolute path);
* ``wavs/<index>_pred.wav``: the parts' stored samples laid out as SimulEval lays them
  out: from the first part's start (no leading silence), ``int(rate·gap_ms/1000)`` zero
  samples in each gap, 16-bit PCM, mono.

``OUT/exports.csv`` lists the folders with the means ``simuleval --score-only`` prints
(StartOffset, EndOffset, NumChunks over the instances with audio). Everything is written
in a temporary folder beside ``OUT`` and moved into place: a failure leaves nothing.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from statistics import mean
from typing import Any

import numpy as np
import pandas as pd
import soundfile as sf

from simulplay.analysis.latency import DEFINITION, speech_metrics, speech_playback
from simulplay.analysis.latency_table import Timeline, speech_timelines
from simulplay.core.fields import Checker
from simulplay.core.paths import check_new_folder, new_folder
from simulplay.core.signature import merge
from simulplay.core.tables import write_table
from simulplay.manifest.validate import output_keys
from simulplay.sim.part_audio import LoadAudio, PartAudio
from simulplay.sim.variants import Release
from simulplay.traces.model import join_texts

GROUP_KEYS = ("system", "condition", "backend", "realization")
EXPORT_COLUMNS = ("folder", "n_instances", "n_without_audio", "start_offset_ms", "end_offset_ms", "num_chunks")
CONFIG = "source_type: speech\ntarget_type: speech\n"


@dataclass
class ExportResult:
    table: pd.DataFrame  # one row per folder (EXPORT_COLUMNS with the group keys)
    signatures: list[dict[str, Any]]
    excluded: list[str] = field(default_factory=list)


def export_simuleval(manifest: pd.DataFrame, load_audio: LoadAudio, out: str | Path, *, delays: str = "ready",
                     release: str | Release = "request", chunks: pd.DataFrame | None = None,
                     allow_incomplete: bool = False, upstream: Mapping[str, Any] | None = None,
                     source: str = "manifest") -> ExportResult:
    """Write the folders (module docstring) for a validated, synthesized manifest."""
    target = check_new_folder(out)
    Checker(source, manifest).require_columns(("audio_key", "n_samples", "sample_rate"),
                                              "synthesized manifest (for the output wavs)")
    tl = speech_timelines(manifest, delays=delays, release=release, chunks=chunks, allow_incomplete=allow_incomplete,
                          upstream=upstream, source=source)
    texts = _texts(manifest)
    keys = [k for k in GROUP_KEYS if k in tl.replay.summary]
    groups: dict[tuple, list[int]] = {}
    for i, t in enumerate(tl.timelines):
        groups.setdefault(tuple(t.key[k] for k in keys), []).append(i)
    names = _folder_names(list(groups))
    audio = PartAudio(load_audio, source)
    rows, sigs = [], []
    with new_folder(target) as tmp:
        for (group, members), name in zip(groups.items(), names):
            timelines = [tl.timelines[i] for i in members]
            _write_folder(tmp / name, target.resolve() / name, timelines, texts, audio)
            rows.append({"folder": name, **dict(zip(keys, group)), **_means(timelines)})
            sigs.append(merge(tl.replay.signatures[members[0]], {"table": "simuleval-export", "delays": delays,
                                                                 "latency": DEFINITION}))
        table = pd.DataFrame(rows, columns=["folder", *keys, *EXPORT_COLUMNS[1:]])
        write_table(table, tmp / "exports.csv", sigs, kind="simuleval-export")
    return ExportResult(table, sigs, list(tl.replay.excluded))


def _texts(manifest: pd.DataFrame) -> dict[tuple, str]:
    """Each output's request text joined as the trace joins updates ('' without a text column)."""
    if "text" not in manifest:
        return {}
    keys = output_keys(manifest)
    glue = manifest["glue"] if "glue" in manifest else pd.Series(False, index=manifest.index)
    return {tuple(k if isinstance(k, tuple) else (k,)): join_texts(list(g["text"].astype(str)),
                                                                   glue.loc[g.index].astype(bool).to_numpy())
            for k, g in manifest.groupby(keys, sort=False)}


def _folder_names(groups: list[tuple]) -> list[str]:
    """File-system-safe folder names (``A__timer-w-4``); a clash gets ``-2``, ``-3``…"""
    names: list[str] = []
    for group in groups:
        base = "__".join(re.sub(r"[^A-Za-z0-9._-]+", "-", str(v)).strip("-") or "x" for v in group)
        name, k = base, 2
        while name in names:
            name, k = f"{base}-{k}", k + 1
        names.append(name)
    return names


def _write_folder(folder: Path, final: Path, timelines: list[Timeline], texts: dict[tuple, str],
                  audio: PartAudio) -> None:
    (folder / "wavs").mkdir(parents=True)
    (folder / "config.yaml").write_text(CONFIG, encoding="utf-8")
    with open(folder / "instances.log", "w", encoding="utf-8") as log:
        for index, t in enumerate(timelines):
            wav_name = f"wavs/{index}_pred.wav"
            line: dict[str, Any] = {"index": index, "prediction": (final / wav_name).as_posix(), "delays": t.delays_ms,
                                    "durations": t.durations_ms}
            if t.delays_ms:
                pb = speech_playback(t.delays_ms, t.durations_ms)
                samples = _layout(t, pb, audio)
                audio.clear()
                buf = io.BytesIO()  # in memory: a full disk is then an OSError naming the file
                sf.write(buf, samples, t.sample_rate, format="WAV", subtype="PCM_16")
                (folder / wav_name).write_bytes(buf.getbuffer())
                line |= {"prediction_offset": t.delays_ms[0], "elapsed": [],
                         "intervals": [list(i) for i in pb.intervals],
                         "prediction_length": len(samples) / t.sample_rate}
            else:  # no audio: SimulEval writes no wav and skips the instance when scoring
                line |= {"prediction_offset": t.source_ms, "elapsed": [], "intervals": [], "prediction_length": 0.0}
            key = tuple(t.key.values())
            line |= {"source_length": t.source_ms, "reference": texts.get(key, ""), "source": f"{t.key['talk_id']}.wav"}
            log.write(json.dumps(line) + "\n")


def _layout(t: Timeline, pb, audio: PartAudio) -> np.ndarray:
    """The output's samples as SimulEval's ``summarize`` writes them (module docstring),
    each part's read from the store and checked by :class:`~simulplay.sim.part_audio.PartAudio`."""
    pieces: list[np.ndarray] = []
    prev_end = t.delays_ms[0]
    for (start, duration), piece in zip(pb.intervals, t.pieces):
        if start > prev_end:
            pieces.append(np.zeros(int(t.sample_rate * (start - prev_end) / 1000), np.int16))
        pieces.append(audio.samples(piece.audio_key, piece.total, t.sample_rate)[piece.start:piece.stop])
        prev_end = start + duration
    return np.concatenate(pieces).astype(np.int16, copy=False)


def _means(timelines: list[Timeline]) -> dict[str, Any]:
    """What ``simuleval --score-only`` prints (unrounded): means over instances with audio."""
    scored = [speech_metrics(t.delays_ms, t.durations_ms, t.source_ms) for t in timelines if t.delays_ms]
    out: dict[str, Any] = {"n_instances": len(timelines), "n_without_audio": len(timelines) - len(scored)}
    for col in ("start_offset_ms", "end_offset_ms", "num_chunks"):
        out[col] = float(mean(s[col] for s in scored)) if scored else np.nan
    return out
