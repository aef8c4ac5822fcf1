"""Transcribing every output of a synthesized manifest, and the transcripts table.

An output's *compact waveform* is its requests' audio from the store concatenated in
``seq`` order with no idle; compact time ``u`` (seconds) runs from its start, and
request ``j`` starts at ``q_j = Σ_{i<j} n_samples_i / rate``. The waveform is resampled
to 16 kHz (soxr) and transcribed under the window rule (:mod:`.windows`).

The transcripts table (Parquet) has one row per output: the output keys, ``intended``
(the joined text of its requests, spaces restored except before ``glue``),
``recognized`` (the pieces' texts joined with spaces), ``audio_s`` (compact duration),
``n_windows``, ``n_pieces``, ``n_failed_windows``, ``complete`` and ``error`` (the
first failure; an output whose synthesis failed is incomplete and not transcribed),
then list columns: ``request_seq`` / ``request_n_samples`` (every request, in order),
``piece_*`` (window, level 0/1/2, start/end in compact seconds, generated tokens, text,
error) and ``word_*`` (text, start/end in compact seconds, probability, piece index).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simulplay.core.errors import InputError, Interrupted
from simulplay.core.fields import Checker
from simulplay.core.keys import OUTPUT_KEYS
from simulplay.core.progress import NO_PROGRESS, Progress
from simulplay.core.signature import merge, settings_hash
from simulplay.core.tables import read_table, stored_signatures
from simulplay.manifest.validate import output_keys
from simulplay.recognizers.base import Recognizer, recognizer_summary, to_16k
from simulplay.recognizers.windows import WindowRule, failed_windows, pieces_columns, transcribe_waveform
from simulplay.store.store import AudioStore, describe_request
from simulplay.traces.model import join_texts

SCALAR_COLUMNS = ("n_requests", "sample_rate", "audio_s", "intended", "recognized", "n_windows", "n_pieces",
                  "n_failed_windows", "complete", "error")
LIST_COLUMNS = ("request_seq", "request_n_samples", "piece_window", "piece_level", "piece_start_s", "piece_end_s",
                "piece_tokens", "piece_text", "piece_error", "word", "word_start_s", "word_end_s",
                "word_probability", "word_piece")
REQUIRED = (*OUTPUT_KEYS, "intended", "recognized", "complete", "error", "audio_s",
            "request_seq", "request_n_samples", "sample_rate", "piece_start_s", "piece_end_s", "piece_error",
            "word", "word_start_s", "word_end_s", "word_piece")


@dataclass
class TranscriptResult:
    table: pd.DataFrame
    signatures: list[dict[str, Any]]
    meta: dict[str, Any]
    failed_outputs: list[str] = field(default_factory=list)


def transcribe_manifest(manifest: pd.DataFrame, store: AudioStore, recognizer: Recognizer, *, language: str,
                        rule: WindowRule, aligner: Callable | None = None,
                        aligner_identity: dict[str, Any] | None = None, upstream: dict[str, Any] | None = None,
                        source: str = "manifest", progress: Progress = NO_PROGRESS,
                        ) -> TranscriptResult:
    """Transcribe every output of a validated manifest (rows sorted by output and ``seq``)."""
    _check_columns(manifest, source)
    keys = output_keys(manifest)
    if not recognizer.loaded:
        recognizer.load()
    try:
        recognizer.check_language(language)
    except ValueError as e:
        raise InputError.at(f"--language '{language}'", str(e)) from e
    identity = recognizer.identity()
    common = merge(upstream, {"table": "transcripts", "recognizer": recognizer_summary(identity),
                              "language": language, "window": rule.describe(),
                              "aligner": _aligner_label(aligner_identity)})
    rows, sigs, failed = [], [], []
    groups = manifest.groupby(keys, sort=False)
    try:
        for key, reqs in groups:
            key = key if isinstance(key, tuple) else (key,)
            out = dict(zip(keys, key))
            t0 = time.perf_counter()
            row = _transcribe_output(reqs, store, recognizer, language, rule, aligner, source)
            rows.append({**out, **row})
            sigs.append(merge(common, {"rule": out["condition"]}))
            if not row["complete"]:
                failed.append("(" + ", ".join(f"{k}={v}" for k, v in out.items()) + f"): {row['error']}")
            progress.advance(audio_s=row["audio_s"], work_s=time.perf_counter() - t0)
    except KeyboardInterrupt as e:  # Ctrl-C or SIGTERM: transcripts are written only when all are done
        raise Interrupted(f"{len(rows)} of {groups.ngroups} outputs transcribed, none written (the table is "
                          "written whole); run the same command again", e) from None
    table = pd.DataFrame(rows, columns=[*keys, *SCALAR_COLUMNS, *LIST_COLUMNS])
    meta = {"signature": common, "identity": identity, "aligner": aligner_identity, "language": language,
            "window_rule": {"window_s": rule.window_s, "max_level": rule.max_level}}
    return TranscriptResult(table, sigs, meta, failed)


def _aligner_label(identity: dict[str, Any] | None) -> str | None:
    if not identity:
        return None
    return f"{identity.get('package', '?')}/{identity.get('model', '?')}/{settings_hash(identity)}"


def _check_columns(manifest: pd.DataFrame, source: str) -> None:
    check = Checker(source, manifest)
    check.require_columns((*OUTPUT_KEYS, "seq", "text", "audio_key", "sample_rate", "n_samples"),
                          "synthesized manifest (from `simulplay synth`, for recognition)")


def _transcribe_output(reqs: pd.DataFrame, store: AudioStore, recognizer: Recognizer, language: str,
                       rule: WindowRule, aligner, source: str) -> dict[str, Any]:
    texts = [str(t) for t in reqs["text"]]
    glue = reqs["glue"].map(_truthy).to_numpy(bool) if "glue" in reqs else np.zeros(len(reqs), bool)
    n_samples = _whole(reqs["n_samples"])
    rates = sorted({int(r) for r, n in zip(_whole(reqs["sample_rate"]), n_samples) if n > 0})
    if len(rates) > 1:
        raise InputError.at(source, f"output ({reqs['talk_id'].iloc[0]}, {reqs['system'].iloc[0]}, "
                            f"{reqs['condition'].iloc[0]}) mixes sample rates {', '.join(map(str, rates))}",
                            field="sample_rate", accepted="one sample rate per output")
    row: dict[str, Any] = {
        "n_requests": len(reqs), "sample_rate": rates[0] if rates else 0, "audio_s": 0.0,
        "intended": join_texts(texts, glue), "recognized": "", "n_windows": 0, "n_pieces": 0,
        "n_failed_windows": 0, "complete": True, "error": "",
        "request_seq": reqs["seq"].to_numpy(np.int64), "request_n_samples": n_samples,
    }
    row.update(pieces_columns([]))
    failed = (reqs["error"] != "").to_numpy() if "error" in reqs else np.zeros(len(reqs), bool)
    if failed.any():
        row.update(complete=False, error=f"synthesis incomplete: {int(failed.sum())} failed request(s)")
        return row
    rate = row["sample_rate"]
    audio = [_load(store, str(k), int(n), rate, describe_request(r))
             for k, n, r in zip(reqs["audio_key"], n_samples, reqs.itertuples())]
    compact = np.concatenate(audio) if audio else np.zeros(0, np.int16)
    row["audio_s"] = float(len(compact) / rate) if rate else 0.0
    pieces = transcribe_waveform(recognizer, to_16k(compact, rate), language, rule, aligner=aligner)
    bad = failed_windows(pieces)
    row.update(pieces_columns(pieces))
    row.update(recognized=" ".join(p.text for p in pieces if p.text and not p.error),
               n_windows=len({p.window for p in pieces}), n_pieces=len(pieces), n_failed_windows=len(bad),
               complete=not bad, error=next((f"window {p.window}: {p.error}" for p in pieces if p.error), ""))
    return row


def _truthy(value: Any) -> bool:
    """A glue cell from Parquet (bool) or CSV (text)."""
    return str(value).strip().lower() in ("true", "1", "yes", "t", "1.0")


def _whole(values: pd.Series) -> np.ndarray:
    """Counts from Parquet (ints) or CSV (text); empty cells (failed requests) are 0."""
    return pd.to_numeric(values, errors="coerce").fillna(0).astype(np.int64).to_numpy()


def _load(store: AudioStore, key: str, n_samples: int, rate: int, request: str) -> np.ndarray:
    if n_samples == 0:
        return np.zeros(0, np.int16)
    return store.load_audio(key, n_samples=n_samples, sample_rate=rate, request=request)[0]


def read_transcripts(path: str | Path) -> tuple[pd.DataFrame, list[dict[str, Any]], dict[str, Any]]:
    """A transcripts table, its per-row signatures and its metadata (recognizer identity)."""
    source = str(path)
    if Path(path).suffix.lower() != ".parquet":
        raise InputError.at(source, "transcripts are read from Parquet only",
                            accepted="the .parquet table written by `simulplay asr`")
    df, meta = read_table(path)
    if len(df) == 0:
        raise InputError.at(source, "has no rows", accepted="one row per output from `simulplay asr`")
    check = Checker(source, df)
    check.require_columns(REQUIRED, "transcripts")
    for col in OUTPUT_KEYS:
        df[col] = check.strings(col)
    check.raise_if_any()
    sigs = stored_signatures(meta, len(df)) or [{} for _ in range(len(df))]
    return df, sigs, meta
