"""Trace validation and per-stream statistics."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from simulplay.core.errors import InputError
from simulplay.core.fields import Checker
from simulplay.traces.model import TRACE_COLUMNS, ends_terminal, join_texts, word_count


def validate_trace_frame(
    df: pd.DataFrame, source: str, *, rows=None, row_label: str = "row"
) -> pd.DataFrame:
    """Check a raw trace table and return it in canonical form and types: ``time_s`` and
    ``source_s`` float64 seconds, ``seq`` int64 as given (unique per stream), ``glue`` bool
    (false when absent); streams in file order, rows in ``seq`` order.

    Covers missing columns, bad numbers (non-numeric, NaN, infinite, negative), times
    going backwards, duplicate or fractional ``seq``, missing/non-positive/varying
    ``source_s``, empty ids or text, and non-UTF-8 text. Availability after the source
    end is valid (``validate`` counts it).
    """
    if len(df) == 0:
        raise InputError.at(source, "has no rows", accepted="at least one update")
    check = Checker(source, df, row_label=row_label, rows=rows)
    check.require_columns(TRACE_COLUMNS, "trace")
    talk = check.strings("talk_id", accepted="a non-empty talk id")
    system = check.strings("system", accepted="a non-empty system name")
    seq = check.integers("seq", accepted="a whole number, unique within a stream")
    time_s = check.numbers("time_s", nonneg=True, accepted="seconds from source start, ≥ 0")
    text = check.strings("text", accepted="the update's new text (non-empty)")
    for i, t in enumerate(text):
        if t and not t.strip():
            check.add_at(i, "is only whitespace", "text", "the update's new text (a space before a word is "
                         "the join's job; mark continuations with glue)")
    source_s = check.numbers("source_s", positive=True, accepted="the source duration in seconds, > 0")
    glue = check.booleans("glue") if "glue" in df.columns else np.zeros(len(df), bool)
    check.raise_if_any()

    out = pd.DataFrame({"talk_id": talk, "system": system, "seq": seq, "time_s": time_s,
                        "text": text, "source_s": source_s, "glue": glue})
    out["_row"] = list(check.rows)
    _check_streams(out, check)
    check.raise_if_any()
    order = out.groupby(["talk_id", "system"], sort=False).ngroup()  # file order of streams
    out = out.assign(_stream=order).sort_values(["_stream", "seq"], kind="stable")
    return out.drop(columns=["_row", "_stream"]).reset_index(drop=True)


def _check_streams(df: pd.DataFrame, check: Checker) -> None:
    for (talk, system), g in df.groupby(["talk_id", "system"], sort=False):
        dup = g["seq"].duplicated(keep="first")
        for i in np.flatnonzero(dup.to_numpy()):
            check.add(f"seq {g['seq'].iloc[i]} repeats within stream ({talk}, {system})",
                      row=g["_row"].iloc[i], field="seq", accepted="unique seq per stream")
        src = g["source_s"].to_numpy()
        for i in np.flatnonzero(src != src[0]):
            check.add(f"source_s {src[i]:g} differs from {src[0]:g} earlier in stream ({talk}, {system})",
                      row=g["_row"].iloc[i], field="source_s", accepted="one source duration per stream")
        if dup.any():
            continue
        s = g.sort_values("seq", kind="stable")
        t = s["time_s"].to_numpy()
        back = np.flatnonzero(np.diff(t) < 0) + 1
        for i in back:
            check.add(f"time_s {t[i]:g} is earlier than the previous update's {t[i - 1]:g}",
                      row=s["_row"].iloc[i], field="time_s",
                      accepted="non-decreasing times in seq order")


def trace_stats(frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """:func:`stream_stats` of several validated trace frames, one table (streams in order)."""
    return pd.concat([stream_stats(f) for f in frames], ignore_index=True)


def stream_stats(df: pd.DataFrame) -> pd.DataFrame:
    """Per-stream update statistics (Truong & Le (2026), Table 11 shape), one row per stream;
    ``source_s`` in seconds, ``after_source_end`` counts updates with ``time_s > source_s``.

    ``words`` counts whitespace words of the assembled text (glue honoured); the per-update
    figures count the words of each update's own text. ``pct_terminal_punct`` is the share
    of updates whose own text ends a sentence by :func:`ends_terminal`, the definition the
    ``punct`` rule uses (in %)."""
    rows = []
    for (talk, system), g in df.groupby(["talk_id", "system"], sort=False):
        words = np.array([word_count(t) for t in g["text"]])
        rows.append({
            "talk_id": talk,
            "system": system,
            "updates": len(g),
            "words": word_count(join_texts(list(g["text"]), g["glue"].to_numpy())),
            "median_words": float(np.median(words)),
            "p90_words": float(np.percentile(words, 90)),
            "pct_le2_words": 100.0 * float(np.mean(words <= 2)),
            "pct_terminal_punct": 100.0 * float(np.mean([ends_terminal(t) for t in g["text"]])),
            "after_source_end": int((g["time_s"] > g["source_s"]).sum()),
            "source_s": float(g["source_s"].iloc[0]),
        })
    return pd.DataFrame(rows)
