"""Trace validation and per-stream statistics."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from simulplay.core.errors import InputError
from simulplay.core.fields import Checker
from simulplay.traces.model import TRACE_COLUMNS, ends_terminal, streams_from_frame, word_count
from simulplay.traces.revisions import apply_update, revision_stats


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
    if "retract" in df.columns:  # a missing cell (a JSONL update without "retract", an empty CSV cell) is 0
        df = df.assign(retract=df["retract"].astype(object).where(df["retract"].notna(), 0))
    check = Checker(source, df, row_label=row_label, rows=rows)
    check.require_columns(TRACE_COLUMNS, "trace")
    talk = check.strings("talk_id", accepted="a non-empty talk id")
    system = check.strings("system", accepted="a non-empty system name")
    seq = check.integers("seq", accepted="a whole number, unique within a stream")
    time_s = check.numbers("time_s", nonneg=True, accepted="seconds from source start, ≥ 0")
    revising = "retract" in df.columns
    retract = (check.integers("retract", accepted="characters to remove from the end of the hypothesis, ≥ 0")
               if revising else np.zeros(len(df), np.int64))
    text = check.strings("text", allow_empty=revising, accepted="the update's new text (non-empty)")
    for i in np.flatnonzero(retract < 0):
        check.add_at(int(i), f"{retract[i]} is negative", "retract",
                     "characters to remove from the end of the hypothesis, ≥ 0")
    if revising:
        for i, t in enumerate(text):
            if not t and retract[i] <= 0:
                check.add_at(i, "is empty", "text", "the update's new text (empty only when it retracts)")
    for i, t in enumerate(text):
        if t and not t.strip():
            check.add_at(i, "is only whitespace", "text", "the update's new text (a space before a word is "
                         "the join's job; mark continuations with glue)")
    source_s = check.numbers("source_s", positive=True, accepted="the source duration in seconds, > 0")
    glue = check.booleans("glue") if "glue" in df.columns else np.zeros(len(df), bool)
    check.raise_if_any()

    out = pd.DataFrame({"talk_id": talk, "system": system, "seq": seq, "time_s": time_s,
                        "text": text, "source_s": source_s, "glue": glue})
    if retract.any():  # an all-zero column is today's append-only trace: left out, as if absent
        out["retract"] = retract
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
        if "retract" in s.columns:
            _check_retractions(s, check)


def _check_retractions(s: pd.DataFrame, check: Checker) -> None:
    """Each retraction removes at most what the hypothesis holds (the stream's first problem only)."""
    h = ""
    for x, g, r, row in zip(s["text"], s["glue"], s["retract"].to_numpy(), s["_row"]):
        if r > len(h):
            check.add(f"retract {r} is more than the {len(h)} character(s) of the hypothesis so far", row=row,
                      field="retract", accepted="at most the length of the hypothesis before this update")
            return
        h = apply_update(h, int(r), x, bool(g))


def trace_stats(frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """:func:`stream_stats` of several validated trace frames, one table (streams in order)."""
    return pd.concat([stream_stats(f) for f in frames], ignore_index=True)


def stream_stats(df: pd.DataFrame) -> pd.DataFrame:
    """Per-stream update statistics (Truong & Le (2026), Table 11 shape), one row per stream;
    ``source_s`` in seconds, ``after_source_end`` counts updates with ``time_s > source_s``.

    ``words`` counts whitespace words of the assembled text (glue honoured); the per-update
    figures count the words of each update's own text. ``pct_terminal_punct`` is the share
    of updates whose own text ends a sentence by :func:`ends_terminal`, the definition the
    ``punct`` rule uses (in %).

    A trace with retractions also gets ``revisions`` (updates that retract),
    ``retracted_chars`` and ``normalized_erasure`` (retracted words over the words of the
    final hypothesis, :mod:`simulplay.traces.revisions`); ``words`` counts the final
    hypothesis. Append-only traces keep today's columns. A trace holding non-speech event
    tags (:mod:`simulplay.traces.events`) also gets ``event_tags`` and ``event_updates``
    (updates holding part of one)."""
    from simulplay.traces.events import stream_event_stats

    rows = []
    revising = "retract" in df.columns
    streams = streams_from_frame(df, revising=True)
    for s, ((talk, system), g) in zip(streams, df.groupby(["talk_id", "system"], sort=False)):
        words = np.array([word_count(t) for t in g["text"]])
        rows.append({
            "talk_id": talk,
            "system": system,
            "updates": len(g),
            "words": word_count(s.joined),
            "median_words": float(np.median(words)),
            "p90_words": float(np.percentile(words, 90)),
            "pct_le2_words": 100.0 * float(np.mean(words <= 2)),
            "pct_terminal_punct": 100.0 * float(np.mean([ends_terminal(t) for t in g["text"]])),
            "after_source_end": int((g["time_s"] > g["source_s"]).sum()),
            "source_s": float(g["source_s"].iloc[0]),
        })
        rows[-1].update(stream_event_stats(s))
        if revising:
            rev = revision_stats(s)
            rows[-1].update(revisions=rev["revisions"], retracted_chars=rev["retracted_chars"],
                            normalized_erasure=rev["normalized_erasure"])
    out = pd.DataFrame(rows)
    return out if out["event_tags"].any() else out.drop(columns=["event_tags", "event_updates"])


def late_streams(stats: pd.DataFrame) -> str:
    """One warning line when more than half of a stream's updates fall after its source end
    (a stream's translation cannot run that late: times in milliseconds read as seconds, or a
    computation-aware clock far behind the source), naming up to three such streams; ``""``
    when no stream is."""
    late = stats[stats["after_source_end"] * 2 > stats["updates"]]
    if late.empty:
        return ""
    shown = "; ".join(f"talk {r.talk_id}, system {r.system}: {r.after_source_end} of {r.updates} updates after "
                      f"{r.source_s:g} s" for r in late.head(3).itertuples())
    more = f"; and {len(late) - 3} more" if len(late) > 3 else ""
    return (f"{len(late)} of {len(stats)} stream(s) have most of their updates after the source end ({shown}{more}): "
            "are the times milliseconds given as seconds, or is a computation-aware clock far behind the source?")
