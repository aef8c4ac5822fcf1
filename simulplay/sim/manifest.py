"""Request manifests: reading and validating the table that ``replay`` reads (SPEC §7).

Columns: ``talk_id, system, condition, seq, dispatch_s, service_s, audio_s, source_s``;
optional ``ready_s`` (the readiness; ``service_s`` may then be empty), ``text``,
``backend``, ``realization``, ``error`` (non-empty: the request failed) and the
synthesis columns. Rows of one output are its requests in ``seq`` order. An output is
one (talk_id, system, condition[, backend][, realization]).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simulplay.errors import InputError
from simulplay.fields import Checker
from simulplay.tables import read_table

MANIFEST_COLUMNS = ("talk_id", "system", "condition", "seq", "dispatch_s", "service_s",
                    "audio_s", "source_s")
OPTIONAL_KEYS = ("backend", "realization")


def output_keys(df: pd.DataFrame) -> list[str]:
    """The columns identifying an output in this table."""
    return ["talk_id", "system", "condition"] + [k for k in OPTIONAL_KEYS if k in df.columns]


def read_manifest(path: str | Path) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Read and validate a manifest; rows come back sorted by output and ``seq``."""
    df, meta = read_table(path)
    return validate_manifest(df, str(path)), meta


def validate_manifest(df: pd.DataFrame, source: str) -> pd.DataFrame:
    if len(df) == 0:
        raise InputError.at(source, "has no rows", accepted="one row per request")
    check = Checker(source, df)
    check.require_columns(MANIFEST_COLUMNS, "request manifest")
    out = df.copy()
    for col in ("talk_id", "system", "condition") + tuple(k for k in OPTIONAL_KEYS if k in df):
        out[col] = check.strings(col, accepted=f"a non-empty {col}")
    out["seq"] = check.integers("seq", accepted="a whole number, unique within an output")
    error = check.strings("error", allow_empty=True) if "error" in df else [""] * len(df)
    out["error"] = error
    failed = np.array([e != "" for e in error])
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
    for key, g in out.groupby(keys, sort=False):
        label = ", ".join(map(str, key))
        dup = g["seq"].duplicated().to_numpy()
        for i in np.flatnonzero(dup):
            check.add(f"seq {g['seq'].iloc[i]} repeats in output ({label})", row=g["_row"].iloc[i],
                      field="seq", accepted="unique seq per output")
        if "audio_key" in g and not dup.any():  # synthesized: every planned request is a row
            seqs = np.sort(g["seq"].to_numpy())
            if seqs[0] != 0 or seqs[-1] != len(seqs) - 1:
                missing = sorted(set(range(int(seqs[-1]) + 1)) - set(seqs.tolist()))[:3]
                check.add(f"output ({label}) lacks request seq {', '.join(map(str, missing)) or seqs[0] - 1} "
                          "(a synthesized manifest holds every request from seq 0)", row=g["_row"].iloc[0],
                          field="seq", accepted="the manifest written by `simulplay synth`, rows not removed")
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
    order = out.groupby(keys, sort=False).ngroup()
    out = out.assign(_output=order).sort_values(["_output", "seq"], kind="stable")
    return out.drop(columns=["_row", "_output"]).reset_index(drop=True)
