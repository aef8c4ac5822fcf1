"""Requests tables read from a file: a ``simulplay group`` output, possibly edited, or
one made by another tool (Parquet or CSV), validated in full before any synthesis.

Required columns ``talk_id, system, condition, seq, dispatch_s, text, source_s``;
optional ``glue`` (default false), ``trigger`` (default empty), ``n_updates`` (default
unknown) and ``group`` (default: each request its own group, ``group = seq``); other
columns are ignored. An output is one (talk_id, system, condition); its ``seq`` runs
0..n−1 (rows may come in any order) and its ``dispatch_s`` (seconds from source start,
finite, ≥ 0) never decreases in ``seq`` order. ``text`` is non-empty and not only
whitespace (punctuation alone is allowed: it yields no audio). ``source_s`` (seconds,
> 0) is one value per talk. ``condition`` is any non-empty label: a RULE string is
written in its canonical form (``punct`` → ``punct:cap=2,min_words=3``), any other label
(an edited plan's own name) is kept as it is; two labels of one rule are refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simulplay.core.errors import InputError
from simulplay.core.fields import Checker
from simulplay.core.keys import OUTPUT_KEYS
from simulplay.core.provenance import sha256_of_file
from simulplay.core.tables import read_table, stored_signatures
from simulplay.grouping.registry import canonical_condition
from simulplay.grouping.requests import REQUEST_COLUMNS

REQUIRED_COLUMNS = (*OUTPUT_KEYS, "seq", "dispatch_s", "text", "source_s")


@dataclass(frozen=True)
class RequestsFile:
    """A validated requests table with where it came from.

    ``frame`` has :data:`REQUEST_COLUMNS` plus ``_row`` (the 1-based data row in the
    file), outputs in order of first appearance and rows of an output in ``seq`` order.
    ``signatures`` are the file's per-row structured signatures (Parquet written by
    simulplay; data row ``r`` has ``signatures[r - 1]``), or ``None``.
    """

    frame: pd.DataFrame
    path: Path
    sha256: str
    signatures: list[dict[str, Any]] | None

    def provenance(self) -> dict[str, str]:
        """Signature fields naming the file: its name and the first 12 hex digits of its SHA-256."""
        return {"requests": self.path.name, "requests_sha256": self.sha256[:12]}


def read_requests(path: str | Path) -> RequestsFile:
    """Read and validate a requests table; :class:`InputError` names file, row and field."""
    p = Path(path)
    df, meta = read_table(p)
    frame = validate_requests(df, str(p))
    return RequestsFile(frame, p, sha256_of_file(p), stored_signatures(meta, len(df)))


def validate_requests(df: pd.DataFrame, source: str) -> pd.DataFrame:
    """Check a raw requests table and return it in canonical columns and types (``dispatch_s``
    and ``source_s`` float seconds, ``seq`` 0..n−1 per output; see the module for the rules)."""
    if len(df) == 0:
        raise InputError.at(source, "has no rows", accepted="one row per request")
    check = Checker(source, df)
    check.require_columns(REQUIRED_COLUMNS, "requests")
    out = pd.DataFrame({k: check.strings(k, accepted=f"a non-empty {k}") for k in OUTPUT_KEYS})
    out["seq"] = check.integers("seq", accepted="a whole number, 0..n−1 within an output")
    out["dispatch_s"] = check.numbers("dispatch_s", nonneg=True, accepted="seconds from source start, ≥ 0")
    out["text"] = check.strings("text", accepted="the request's text (non-empty)")
    out["source_s"] = check.numbers("source_s", positive=True, accepted="the source duration in seconds, > 0")
    out["glue"] = check.booleans("glue") if "glue" in df else np.zeros(len(df), bool)
    out["trigger"] = check.strings("trigger", allow_empty=True) if "trigger" in df else [""] * len(df)
    out["n_updates"] = _counts(check, "n_updates", 1) if "n_updates" in df else pd.array([pd.NA] * len(df),
                                                                                       dtype="Int64")
    out["group"] = _counts(check, "group", 0) if "group" in df else out["seq"]
    for col, what in (("condition", "a condition label"), ("text", "the request's text")):
        for i, v in enumerate(out[col]):
            if v and not v.strip():
                check.add_at(i, "is only whitespace", col, what + " (not only whitespace)")
    check.raise_if_any()
    out["_row"] = check.rows
    out["condition"] = _canonical_conditions(out, check)
    _check_outputs(out, check)
    _check_talks(out, check)
    check.raise_if_any()
    order = out.groupby(list(OUTPUT_KEYS), sort=False).ngroup()  # file order of outputs
    out = out.assign(_output=order).sort_values(["_output", "seq"], kind="stable")
    return out[[*REQUEST_COLUMNS, "_row"]].reset_index(drop=True)


def _counts(check: Checker, col: str, low: int) -> np.ndarray:
    """A column of whole numbers ≥ ``low`` (bad cells reported once each, returned as ``low``)."""
    accepted = f"a whole number ≥ {low}"
    values = check.numbers(col, accepted=accepted)
    ok = np.isfinite(values)
    for i in np.flatnonzero(ok & (values != np.round(values))):
        check.add_at(int(i), f"{values[i]:g} is not a whole number", col, accepted)
    for i in np.flatnonzero(ok & (values < low)):
        check.add_at(int(i), f"{values[i]:g} is below {low}", col, accepted)
    return np.where(ok, values, low).astype(np.int64)


def _canonical_conditions(out: pd.DataFrame, check: Checker) -> list[str]:
    """Labels that are RULE strings in canonical form; two labels of one rule refused."""
    labels = list(dict.fromkeys(out["condition"]))
    canon = {label: canonical_condition(label) for label in labels}
    first: dict[str, str] = {}
    for label in labels:
        other = first.setdefault(canon[label], label)
        if other != label:
            i = int(np.flatnonzero((out["condition"] == label).to_numpy())[0])
            check.add_at(i, f"condition '{label}' and '{other}' (earlier rows) are the same rule "
                         f"'{canon[label]}'", "condition", "one label per grouping rule")
    return [canon[c] for c in out["condition"]]


def _check_outputs(out: pd.DataFrame, check: Checker) -> None:
    """Per output: seq is 0..n−1, and dispatch_s never decreases in seq order."""
    for key, g in out.groupby(list(OUTPUT_KEYS), sort=False):
        label = ", ".join(f"{k}={v}" for k, v in zip(OUTPUT_KEYS, key))
        g = g.sort_values("seq", kind="stable")
        seq = g["seq"].to_numpy()
        dup = np.flatnonzero(seq[1:] == seq[:-1]) + 1
        for i in dup:
            check.add(f"seq {seq[i]} repeats in output ({label})", row=int(g["_row"].iloc[i]), field="seq",
                      accepted="each seq once per output")
        if len(dup):
            continue
        wrong = np.flatnonzero(seq != np.arange(len(seq)))
        if len(wrong):
            i = int(wrong[0])
            check.add(f"seq {seq[i]} where {i} is due: output ({label}) has {len(seq)} request(s), so seq "
                      f"must run 0..{len(seq) - 1}", row=int(g["_row"].iloc[i]), field="seq",
                      accepted="seq 0..n−1 within each output, no gaps")
            continue
        d = g["dispatch_s"].to_numpy()
        for i in np.flatnonzero(np.diff(d) < 0) + 1:
            check.add(f"dispatch_s {d[i]:g} is earlier than seq {seq[i] - 1}'s {d[i - 1]:g} in output ({label})",
                      row=int(g["_row"].iloc[i]), field="dispatch_s",
                      accepted="non-decreasing dispatch times in seq order")


def _check_talks(out: pd.DataFrame, check: Checker) -> None:
    """One source duration per talk (all its systems and conditions)."""
    for talk, g in out.groupby("talk_id", sort=False):
        src = g["source_s"].to_numpy()
        for i in np.flatnonzero(src != src[0])[:1]:
            check.add(f"source_s {src[i]:g} differs from {src[0]:g} (row {g['_row'].iloc[0]}) for talk {talk}",
                      row=int(g["_row"].iloc[i]), field="source_s", accepted="one source duration per talk")
