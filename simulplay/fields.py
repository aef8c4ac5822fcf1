"""Field-level validation of tables read from user files.

A :class:`Checker` converts columns while collecting located problems; ``raise_if_any``
raises one :class:`InputError` listing each (up to a limit), so a user sees every bad
row at once rather than one per run.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from simulplay.errors import InputError, Problem

MAX_REPORTED = 20


class Checker:
    """Collects problems found in one table (``source`` names the file)."""

    def __init__(self, source: str, df: pd.DataFrame, *, row_label: str = "row", rows=None):
        self.source = source
        self.df = df
        self.row_label = row_label
        # 1-based row numbers as the user sees them (data rows or JSONL lines).
        self.rows = list(range(1, len(df) + 1)) if rows is None else list(rows)
        self.problems: list[Problem] = []

    def add(self, message: str, *, row: int | str | None = None, field: str | None = None,
            accepted: str | None = None) -> None:
        self.problems.append(Problem(self.source, message, row, field, self.row_label, accepted))

    def add_at(self, i: int, message: str, field: str | None = None, accepted: str | None = None):
        """Problem at positional row ``i`` of the table."""
        r = self.rows[i]
        self.add(message, row=r if isinstance(r, str) else int(r), field=field, accepted=accepted)

    def raise_if_any(self) -> None:
        if self.problems:
            shown = self.problems[:MAX_REPORTED]
            if len(self.problems) > MAX_REPORTED:
                extra = len(self.problems) - MAX_REPORTED
                shown.append(Problem(self.source, f"… and {extra} more problems"))
            raise InputError(shown)

    def require_columns(self, required: Sequence[str], what: str) -> None:
        missing = [c for c in required if c not in self.df.columns]
        if missing:
            self.add(
                f"missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)}",
                accepted=f"{what} columns {', '.join(required)}",
            )
        self.raise_if_any()

    def numbers(self, col: str, *, allow_empty: bool = False, nonneg: bool = False,
                positive: bool = False, accepted: str = "a finite number in seconds") -> np.ndarray:
        """Column as float64; empty cells become NaN when allowed (vectorized)."""
        raw = self.df[col]
        if raw.dtype.kind in "fiu":
            out = raw.to_numpy(dtype=np.float64, na_value=np.nan)
            empty, bad_text = np.isnan(out), np.zeros(len(out), bool)
            texts = None
        else:
            obj = raw.astype(object)
            is_bool = obj.map(lambda v: isinstance(v, (bool, np.bool_))).to_numpy(bool)
            texts = obj.map(lambda v: "" if v is None or (isinstance(v, float) and np.isnan(v))
                            else str(v).strip())
            empty = (texts == "").to_numpy()
            out = pd.to_numeric(texts.where(~empty & ~is_bool), errors="coerce").to_numpy(np.float64)
            bad_text = np.isnan(out) & ~empty
            low = texts.str.lower().isin(["nan", "+nan", "-nan"]).to_numpy()
            bad_text &= ~low  # a written "nan" is a non-finite number, reported below
        for i in np.flatnonzero(bad_text):
            self.add_at(int(i), f"'{texts.iloc[i]}' is not a number", col, accepted)
        if not allow_empty:
            for i in np.flatnonzero(empty):
                self.add_at(int(i), "is empty or NaN", col, accepted)
        if texts is not None:
            nan_written = ~empty & ~bad_text & np.isnan(out)
            for i in np.flatnonzero(nan_written):
                self.add_at(int(i), f"{texts.iloc[i]} is not finite", col, accepted)
        finite = np.isfinite(out)
        for i in np.flatnonzero(~finite & ~np.isnan(out)):
            self.add_at(int(i), f"{out[i]:g} is not finite", col, accepted)
        if positive:
            for i in np.flatnonzero(finite & (out <= 0)):
                self.add_at(int(i), f"{out[i]:g} is not positive", col, accepted)
        elif nonneg:
            for i in np.flatnonzero(finite & (out < 0)):
                self.add_at(int(i), f"{out[i]:g} is negative", col, accepted)
        out = out.copy()
        out[~finite | (positive & (out <= 0)) | (nonneg & (out < 0))] = np.nan
        return out

    def integers(self, col: str, accepted: str = "a whole number") -> np.ndarray:
        values = self.numbers(col, accepted=accepted)
        ok = np.isfinite(values)
        frac = ok & (values != np.round(values))
        for i in np.flatnonzero(frac):
            self.add_at(int(i), f"{values[i]:g} is not a whole number", col, accepted)
        return np.where(ok, values, 0).astype(np.int64)

    def strings(self, col: str, *, allow_empty: bool = False, accepted: str = "non-empty text") -> list[str]:
        raw = self.df[col].astype(object)
        nested = raw.map(lambda v: isinstance(v, (dict, list, tuple))).to_numpy(bool)
        for i in np.flatnonzero(nested):
            self.add_at(int(i), f"is a {type(raw.iloc[i]).__name__}, not text", col, accepted)
        raw = raw.where(~nested, "")
        missing = raw.isna().to_numpy()
        is_bytes = raw.map(lambda v: isinstance(v, bytes)).to_numpy(bool)
        values = raw.where(~missing, "")
        for i in np.flatnonzero(is_bytes):
            try:
                values.iloc[i] = raw.iloc[i].decode("utf-8")
            except UnicodeDecodeError:
                self.add_at(int(i), "is not UTF-8 text", col, accepted)
                values.iloc[i] = ""
        out = values.astype(str).tolist()
        if not allow_empty:
            for i in np.flatnonzero(np.array([v == "" for v in out], dtype=bool) & ~is_bytes):
                self.add_at(int(i), "is empty", col, accepted)
        return out

    def booleans(self, col: str, default: bool = False) -> np.ndarray:
        accepted = "true/false, 1/0 or empty"
        out = np.full(len(self.df), default)
        for i, v in enumerate(self.df[col].to_numpy(dtype=object)):
            b = _to_bool(v)
            if b is None:
                continue
            if isinstance(b, str):
                self.add_at(i, f"'{b}' is not a boolean", col, accepted)
            else:
                out[i] = b
        return out


def _to_bool(v):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)) and v in (0, 1):
        return bool(v)
    s = str(v).strip().lower()
    if s == "":
        return None
    if s in ("true", "1", "yes", "t"):
        return True
    if s in ("false", "0", "no", "f"):
        return False
    return s
