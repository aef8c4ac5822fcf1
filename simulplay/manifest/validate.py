"""Request manifests: reading and validating the table that ``replay`` reads (docs/formats.md).

Columns: ``talk_id, system, condition, seq, dispatch_s, service_s, audio_s, source_s``;
optional ``ready_s`` (the readiness; ``service_s`` may then be empty), ``text``,
``backend``, ``realization``, ``error`` (non-empty: the request failed) and the
synthesis columns. Rows of one output are its requests in ``seq`` order. An output is
one (talk_id, system, condition[, backend][, realization]).

Durations: a synthesized manifest carries ``n_samples`` and ``sample_rate`` (Hz), and a
request then lasts exactly ``n_samples / sample_rate`` (``audio_s`` must describe the same
number of samples); a hand-written one has only ``audio_s`` in float seconds. Every time
must lie within ±292 years, the range of int64 nanoseconds (:mod:`simulplay.core.timebase`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simulplay.core.errors import InputError
from simulplay.core.fields import MAX_EXACT_INT, Checker
from simulplay.core.keys import OUTPUT_KEYS, RUN_PANEL_KEYS, present
from simulplay.core.tables import read_table
from simulplay.core.timebase import MAX_S, MAX_SAMPLE_RATE, part_dur_ns, to_ns
from simulplay.manifest.columns import MANIFEST_COLUMNS

SAMPLE_COLUMNS = ("n_samples", "sample_rate")
TIME_COLUMNS = ("ready_s", "dispatch_s", "service_s", "audio_s", "source_s")


def output_keys(df: pd.DataFrame) -> list[str]:
    """The columns identifying an output in this table."""
    return [*OUTPUT_KEYS, *present(RUN_PANEL_KEYS, df.columns)]


def has_samples(df: pd.DataFrame) -> bool:
    """Whether the table gives durations as sample counts (``n_samples`` and ``sample_rate``)."""
    return all(c in df.columns for c in SAMPLE_COLUMNS)


def request_dur_ns(manifest: pd.DataFrame, codes: np.ndarray) -> np.ndarray:
    """Each request's duration in int64 ns (rows sorted by output, ``codes`` their output
    numbers): from sample counts when the manifest has them (running totals per output,
    :func:`~simulplay.core.timebase.part_dur_ns`), else ``audio_s`` to the nearest ns."""
    if has_samples(manifest):
        return part_dur_ns(codes, manifest["n_samples"].to_numpy(np.int64), manifest["sample_rate"].to_numpy(np.int64))
    return to_ns(manifest["audio_s"].to_numpy(float))


def samples_disagree(audio_s: np.ndarray, n_samples: np.ndarray, sample_rate: np.ndarray) -> np.ndarray:
    """Rows whose ``audio_s`` (seconds) names another number of samples than ``n_samples``
    at ``sample_rate`` Hz: ``round(audio_s · sample_rate) ≠ n_samples``, or a silent row
    (``n_samples = 0``) with audio. Half a sample either way is the columns' common grain."""
    audio_s, n = np.asarray(audio_s, float), np.asarray(n_samples, np.int64)
    rate = np.asarray(sample_rate, np.int64)
    with np.errstate(invalid="ignore", over="ignore"):
        named = np.rint(audio_s * rate)
    return np.where(n > 0, named != n, audio_s != 0)


def read_manifest(path: str | Path) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Read and validate a manifest (:func:`validate_manifest`: times in float seconds, NaN
    where empty), with the file's metadata; rows come back sorted by output and ``seq``."""
    df, meta = read_table(path)
    return validate_manifest(df, str(path)), meta


def validate_manifest(df: pd.DataFrame, source: str) -> pd.DataFrame:
    """Check a raw manifest (``source`` names it in errors) and return it canonical.

    Keys come back as text, ``seq`` as int64 (unique per output; a synthesized manifest,
    one with ``audio_key``, must hold every seq from 0), ``error`` as text (``""``: the
    request succeeded), times as float seconds with NaN where empty (``ready_s`` all NaN
    when the file has no such column); ``n_samples``/``sample_rate`` (Hz), when present, as
    int64 (0 on failed requests). Rows are sorted by output (file order of first
    appearance), then ``seq``. Every problem is an :class:`InputError` naming row and field.
    """
    if len(df) == 0:
        raise InputError.at(source, "has no rows", accepted="one row per request")
    check = Checker(source, df)
    check.require_columns(MANIFEST_COLUMNS, "request manifest")
    out = df.copy()
    for col in OUTPUT_KEYS + tuple(k for k in RUN_PANEL_KEYS if k in df):
        out[col] = check.text(col, accepted=f"a non-empty {col}")
    out["seq"] = check.integers("seq", accepted="a whole number, unique within an output")
    error = check.text("error", allow_empty=True) if "error" in df else [""] * len(df)
    out["error"] = error
    failed = (error != "").to_numpy(bool) if isinstance(error, pd.Series) else np.array([e != "" for e in error])
    has_ready = "ready_s" in df
    ready = check.numbers("ready_s", allow_empty=True) if has_ready else np.full(len(df), np.nan)
    out["ready_s"] = ready
    out["dispatch_s"] = check.numbers("dispatch_s", allow_empty=True,
                                      accepted="seconds from source start (empty only with ready_s)")
    out["service_s"] = check.numbers("service_s", allow_empty=True, nonneg=True,
                                     accepted="seconds ≥ 0 (empty only with ready_s)")
    out["audio_s"] = check.numbers("audio_s", allow_empty=True, nonneg=True,
                                   accepted="the part's audio duration in seconds, ≥ 0")
    out["source_s"] = check.numbers("source_s", positive=True, accepted="the source duration in seconds, > 0")
    check_time_range(check, out, [c for c in TIME_COLUMNS if c in out])
    if has_samples(df):
        _check_samples(check, out, failed)
    check.raise_if_any()
    ok = ~failed
    no_ready = ok & np.isnan(ready)
    for i in np.flatnonzero(ok & out["audio_s"].isna().to_numpy()):
        check.add_at(int(i), "is empty", "audio_s", "the audio duration of a request without error")
    for col, what in (("dispatch_s", "a dispatch time"), ("service_s", "a service time")):
        for i in np.flatnonzero(no_ready & out[col].isna().to_numpy()):
            check.add_at(int(i), "is empty and there is no ready_s", col, what)
    out["_row"] = check.rows
    keys = output_keys(out)
    codes = out.groupby(keys, sort=False).ngroup().to_numpy()
    sound = _outputs_sound(out, codes, has_ready)
    for key, g in ([] if sound else out.groupby(keys, sort=False)):  # the loop names the first problem
        label = ", ".join(map(str, key))
        dup = g["seq"].duplicated().to_numpy()
        for i in np.flatnonzero(dup):
            check.add(f"seq {g['seq'].iloc[i]} repeats in output ({label})", row=g["_row"].iloc[i],
                      field="seq", accepted="unique seq per output")
        if not dup.any():
            _check_order(check, g, label)
        src = g["source_s"].to_numpy()
        for i in np.flatnonzero(src != src[0])[:1]:
            check.add(f"source_s {src[i]:g} differs from {src[0]:g} in output ({label})",
                      row=g["_row"].iloc[i], field="source_s", accepted="one source duration per output")
        rd = np.isnan(g["ready_s"].to_numpy()) & (g["error"] == "").to_numpy()
        if has_ready and rd.any() and not rd.all():
            i = int(np.flatnonzero(rd)[0])
            check.add(f"is empty while other requests of output ({label}) have it", row=g["_row"].iloc[i],
                      field="ready_s", accepted="ready_s on every request of an output or on none")
    check.raise_if_any()
    out = out.assign(_output=codes).sort_values(["_output", "seq"], kind="stable")
    return out.drop(columns=["_row", "_output"]).reset_index(drop=True)


def _outputs_sound(out: pd.DataFrame, codes: np.ndarray, has_ready: bool) -> bool:
    """Whether every output passes the per-output checks of :func:`validate_manifest`, all
    at once (array operations over the whole table): each output's ``seq`` is 0..n−1 without
    repeats, its known dispatch times never go backwards in ``seq`` order, it has one
    ``source_s``, and ``ready_s`` on every request without error or on none. When this is
    false the per-output loop finds and names the first problem."""
    seq = out["seq"].to_numpy()
    order = np.lexsort((seq, codes))
    c, q = codes[order], seq[order]
    first = np.r_[True, c[1:] != c[:-1]]
    start = np.maximum.accumulate(np.where(first, np.arange(len(c)), 0))
    if not np.array_equal(q, np.arange(len(c)) - start):  # numbered 0..n−1 per output (no repeat, no gap)
        return False
    d = out["dispatch_s"].to_numpy(float)[order]
    known = ~np.isnan(d)
    last = pd.Series(np.where(known, d, np.nan)).groupby(c).ffill().to_numpy()  # last known dispatch so far
    prev = np.r_[np.nan, last[:-1]]
    prev[first] = np.nan
    if np.any(known & (d < prev)):
        return False
    src = out["source_s"].to_numpy(float)[order]
    if np.any(src != src[start]):
        return False
    if has_ready:
        rd = (np.isnan(out["ready_s"].to_numpy(float)) & (out["error"] == "").to_numpy())[order]
        n = np.bincount(c, minlength=c.max() + 1)
        empty = np.bincount(c, weights=rd, minlength=c.max() + 1)
        if np.any((empty > 0) & (empty < n)):
            return False
    return True


def _check_order(check: Checker, g: pd.DataFrame, label: str) -> None:
    """An output's requests are numbered 0..n−1 and dispatched in ``seq`` order (times never
    go backwards); the first request out of place is a problem."""
    s = g.sort_values("seq", kind="stable")
    seqs = s["seq"].to_numpy()
    wrong = np.flatnonzero(seqs != np.arange(len(seqs)))
    if len(wrong):
        k = int(wrong[0])
        check.add(f"seq {seqs[k]} where {k} is expected: output ({label}) has {len(seqs)} requests, numbered "
                  f"0..{len(seqs) - 1} in order (a synthesized manifest holds every request)",
                  row=s["_row"].iloc[k], field="seq", accepted="seq 0..n−1 within each output, rows not removed")
        return
    d = s["dispatch_s"].to_numpy(float)
    known = np.flatnonzero(~np.isnan(d))
    back = known[1:][np.diff(d[known]) < 0]
    if len(back):
        k = int(back[0])
        prev = int(known[np.searchsorted(known, k) - 1])
        check.add(f"dispatch_s {d[k]:g} of seq {k} is earlier than {d[prev]:g} of seq {prev} in output ({label})",
                  row=s["_row"].iloc[k], field="dispatch_s",
                  accepted="dispatch times that never go backwards in seq order")


def check_time_range(check: Checker, table: pd.DataFrame, columns) -> None:
    """Times (seconds) beyond ±292 years do not fit int64 nanoseconds: each is a problem."""
    for col in columns:
        values = table[col].to_numpy(float)
        for i in np.flatnonzero(np.abs(np.nan_to_num(values)) >= MAX_S):
            check.add_at(int(i), f"{values[i]:g} s is beyond ±292 years", col,
                         "a time within ±292 years (the range of int64 nanoseconds)")


def _check_samples(check: Checker, out: pd.DataFrame, failed: np.ndarray) -> None:
    """Sample counts and rates of the requests without error: whole numbers, a rate of
    1..10⁹ Hz for audio, and ``audio_s`` naming the same number of samples. They come
    back as int64 columns (0 on failed requests)."""
    what_n = "the sample count, a whole number ≥ 0 (at most 2^53)"
    what_sr = f"the sample rate in Hz, a whole number 1..{MAX_SAMPLE_RATE} (for audio)"
    ok = ~failed
    n = check.numbers("n_samples", allow_empty=True, accepted=what_n)
    rate = check.numbers("sample_rate", allow_empty=True, accepted=what_sr)
    good_n = np.isfinite(n) & (n >= 0) & (n == np.round(n)) & (n <= MAX_EXACT_INT)
    good_sr = np.isfinite(rate) & (rate >= 1) & (rate <= MAX_SAMPLE_RATE) & (rate == np.round(rate))
    for i in np.flatnonzero(ok & ~good_n):
        message = "is empty" if np.isnan(n[i]) else f"{n[i]:g} is not a whole number 0..2^53"
        check.add_at(int(i), message, "n_samples", what_n)
    sounding = ok & good_n & (n > 0)
    for i in np.flatnonzero(sounding & ~good_sr):
        message = "is empty" if np.isnan(rate[i]) else f"{rate[i]:g} is not a sample rate"
        check.add_at(int(i), message, "sample_rate", what_sr)
    usable = ok & good_n & (good_sr | ~sounding)
    n_int = np.where(usable, n, 0).astype(np.int64)
    rate_int = np.where(usable & good_sr, rate, 0).astype(np.int64)
    audio = out["audio_s"].to_numpy(float)
    for i in np.flatnonzero(usable & np.isfinite(audio) & samples_disagree(audio, n_int, rate_int)):
        check.add_at(int(i), f"{audio[i]:g} s is not n_samples / sample_rate = {n_int[i]} / {rate_int[i]} Hz",
                     "audio_s", "the duration that n_samples and sample_rate give")
    out["n_samples"], out["sample_rate"] = n_int, rate_int
