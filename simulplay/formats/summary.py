"""The playback summary (``simulplay replay``, ``summary.parquet`` of a run): one row per output.

Columns: the output keys (and panel keys), then :data:`SUMMARY_COLUMNS` (seconds, NaN for an
output without audio). η reads :data:`SUMMARY_REQUIRED` of it (:func:`validate_summary`:
``audio_s``, ``idle_s``, ``offset_s`` in seconds, ``source_s`` > 0). A run's sensitivity
replays write theirs and their η tables under one file label per replay variant
(:func:`variant_label`: ``summary.service-zero.parquet``, ``eta.service-zero.csv``; the
label of the replay a table's signature names: :func:`replay_label`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from simulplay.core.errors import InputError
from simulplay.core.fields import Checker
from simulplay.core.keys import OUTPUT_KEYS, PANEL_KEYS
from simulplay.core.tables import read_table, stored_signatures

#: The summary's columns after the keys, in the order replay writes them.
SUMMARY_COLUMNS = ("n_parts", "first_play_s", "audio_s", "idle_s", "end_s", "offset_s",
                   "source_s", "limiting_seq")
#: What η needs of a summary.
SUMMARY_REQUIRED = (*OUTPUT_KEYS, "audio_s", "idle_s", "offset_s", "source_s")
#: What the report reads of a run's summary.
SUMMARY_READ = (*OUTPUT_KEYS, "n_parts", "first_play_s", "audio_s", "idle_s", "offset_s", "source_s")


def variant_label(variant: str) -> str:
    """The file label of a replay variant's tables: its text with ``=`` as ``-``
    (``service=zero`` → ``service-zero``)."""
    return variant.replace("=", "-")


#: The primary replay's settings, as a replay's structured signature names them.
PRIMARY = (("release", "request"), ("service", "measured"), ("trim", "none"), ("silent", "skip"))


def replay_label(signature: dict[str, Any]) -> str:
    """The file label of the replay a structured signature names: ``""`` for the primary one
    (request release, measured service, no trim, silent parts skipped), else its sensitivity
    replay's (``service-zero``, ``release-chunk+service-zero``)."""
    return variant_label("+".join(f"{k}={signature[k]}" for k, primary in PRIMARY
                                  if signature.get(k, primary) != primary))


def read_summary(path: str | Path) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """A playback summary (``audio_s``, ``idle_s``, ``offset_s`` in seconds, NaN for an
    output without audio; ``source_s`` > 0) and its per-row upstream signatures."""
    df, meta = read_table(path)
    out = validate_summary(df, str(path))
    sigs = stored_signatures(meta, len(df))
    if sigs is None:
        shown = df["signature"].tolist() if "signature" in df else [None] * len(df)
        sigs = [{"replay": s} if s else {} for s in shown]
    return out, sigs


def validate_summary(df: pd.DataFrame, source: str) -> pd.DataFrame:
    """Check a raw playback summary (``source`` names it in errors) and return the columns
    η reads: the output keys and panel keys as text, ``audio_s``, ``idle_s`` and
    ``offset_s`` in seconds (NaN for an output without audio), ``source_s`` > 0 seconds."""
    if len(df) == 0:
        raise InputError.at(source, "has no rows", accepted="a playback summary from `simulplay replay`")
    check = Checker(source, df)
    check.require_columns(SUMMARY_REQUIRED, "playback summary")
    out = pd.DataFrame({c: check.strings(c) for c in OUTPUT_KEYS})
    for c in PANEL_KEYS:
        if c in df:
            out[c] = check.strings(c)
    for c in ("audio_s", "idle_s", "offset_s"):
        out[c] = check.numbers(c, allow_empty=True)
    out["source_s"] = check.numbers("source_s", positive=True)
    check.raise_if_any()
    return out
