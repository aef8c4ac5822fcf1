"""Field-level validation of tables read from user files.

A :class:`Checker` converts columns while collecting located problems; ``raise_if_any``
raises one :class:`InputError` listing each (it shows the first ten and counts the rest),
so a user sees every bad row at once rather than one per run.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from simulplay.core.errors import InputError, Problem, clip

#: Whole numbers beyond ±2⁵³ are not exact in float64; a count or ``seq`` beyond it is refused.
MAX_EXACT_INT = 2**53
_WHOLE = re.compile(r"[+-]?\d+")
_INF_WORDS = ("inf", "+inf", "-inf", "infinity", "+infinity", "-infinity")


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
            raise InputError(self.problems)

    def require_columns(self, required: Sequence[str], what: str) -> None:
        missing = [c for c in required if c not in self.df.columns]
        if missing:
            self.add(
                f"missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)}",
                accepted=f"{what} columns {', '.join(required)}",
            )
        names = pd.Index(self.df.columns)
        for name in dict.fromkeys(names[names.duplicated()]):  # a column read twice would be a table, not a column
            self.add(f"column {name} appears {int((names == name).sum())} times", field=str(name),
                     accepted="one column of each name")
        self.raise_if_any()

    def numbers(self, col: str, *, allow_empty: bool = False, nonneg: bool = False,
                positive: bool = False, accepted: str = "a finite number in seconds") -> np.ndarray:
        """Column as float64; empty cells become NaN when allowed (vectorized). Text that is
        no number, NaN, ±infinity (also a literal too large for a float) and, as asked,
        negative or non-positive values are problems; their cells come back NaN."""
        raw = self.df[col]
        if raw.dtype.kind in "fiu":
            out = raw.to_numpy(dtype=np.float64, na_value=np.nan)
            empty, bad_text = np.isnan(out), np.zeros(len(out), bool)
            texts = None
        else:
            texts, out, empty, bad_text = _parse_numbers(raw)
        for i in np.flatnonzero(bad_text):
            self.add_at(int(i), _not_a_number(texts.iloc[i]), col, accepted)
        if not allow_empty:
            for i in np.flatnonzero(empty):
                self.add_at(int(i), "is empty or NaN", col, accepted)
        if texts is not None:
            nan_written = ~empty & ~bad_text & np.isnan(out)
            for i in np.flatnonzero(nan_written):
                self.add_at(int(i), f"{clip(texts.iloc[i])} is not finite", col, accepted)
        finite = np.isfinite(out)
        for i in np.flatnonzero(~finite & ~np.isnan(out)):
            written = None if texts is None else texts.iloc[i]
            self.add_at(int(i), _infinite(out[i], written), col, accepted)
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
        """Column as int64: whole numbers within ±2⁵³ (exact in float64); anything else is a
        problem and comes back 0."""
        values = self.numbers(col, accepted=accepted)
        ok = np.isfinite(values)
        frac = ok & (values != np.round(values))
        for i in np.flatnonzero(frac):
            self.add_at(int(i), f"{values[i]:g} is not a whole number", col, accepted)
        huge = ok & ~frac & (np.abs(np.where(ok, values, 0)) > MAX_EXACT_INT)
        for i in np.flatnonzero(huge):
            self.add_at(int(i), f"{values[i]:g} is too large (beyond ±2^53)", col, accepted)
        return np.where(ok & ~huge, values, 0).astype(np.int64)

    def text(self, col: str, *, allow_empty: bool = False, accepted: str = "non-empty text") -> pd.Series | list[str]:
        """:meth:`strings`, to be set back as a column: a column of text only that already has
        the dtype pandas gives a list of ``str`` comes back as it is (the same values a list
        would give, without building one and converting it back)."""
        column = self.df[col]
        if column.dtype == pd.Series(["x"]).dtype and self._plain_text(column, col, allow_empty, accepted):
            return column
        return self.strings(col, allow_empty=allow_empty, accepted=accepted)

    def _plain_text(self, column: pd.Series, col: str, allow_empty: bool, accepted: str) -> bool:
        """Whether ``column`` is text only (pandas infers ``string`` and no cell is missing);
        if so, its empty cells are problems unless allowed."""
        # (pandas' str dtype is "string" to infer_dtype even with cells missing: those are looked at)
        if pd.api.types.infer_dtype(column, skipna=False) != "string" or column.isna().any():
            return False
        if not allow_empty:
            for i in np.flatnonzero((column.str.len() == 0).to_numpy(bool)):
                self.add_at(int(i), "is empty", col, accepted)
        return True

    def strings(self, col: str, *, allow_empty: bool = False, accepted: str = "non-empty text") -> list[str]:
        """Column as a list of ``str``: nested values, bytes that are not UTF-8 and (unless
        allowed) empty cells are problems. A column of text only (pandas infers ``string`` and
        no cell is missing) is taken as it is, without looking at each cell in Python."""
        column = self.df[col]
        if self._plain_text(column, col, allow_empty, accepted):
            return column.tolist()
        raw = column.astype(object)
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
                self.add_at(i, f"'{clip(b)}' is not a boolean", col, accepted)
            else:
                out[i] = b
        return out


def _parse_numbers(raw: pd.Series):
    """Text (or mixed) cells as (texts, float64 values, empty, not-a-number) arrays."""
    obj = raw.astype(object)
    is_bool = obj.map(lambda v: isinstance(v, (bool, np.bool_))).to_numpy(bool)
    texts = obj.map(lambda v: "" if v is None or (isinstance(v, float) and np.isnan(v))
                    else _cell_text(v))
    empty = (texts == "").to_numpy()
    out = pd.to_numeric(texts.where(~empty & ~is_bool), errors="coerce").to_numpy(np.float64)
    bad_text = np.isnan(out) & ~empty
    low = texts.str.lower().isin(["nan", "+nan", "-nan"]).to_numpy()
    bad_text &= ~low  # a written "nan" is a non-finite number, reported by the caller
    return texts, out, empty, bad_text


def _cell_text(v) -> str:
    try:
        return str(v).strip()
    except ValueError:  # an int beyond Python's digit limit for str()
        return "9" * 400


def _not_a_number(text: str) -> str:
    if _WHOLE.fullmatch(text):
        return f"'{clip(text)}' has {len(text.lstrip('+-'))} digits, too many for a number"
    return f"'{clip(text)}' is not a number"


def _infinite(value: float, written: str | None) -> str:
    if written is None or written.lower() in _INF_WORDS:
        return f"{value:g} is not finite"
    return f"'{clip(written)}' is too large (beyond a float's range, ±1.8e308)"


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
