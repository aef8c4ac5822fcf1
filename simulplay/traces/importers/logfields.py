"""The checked fields of one log line, and the importers' checked options.

:class:`Fields` reads typed values (numbers, lists, strings) from one parsed JSON object
and records each problem, located at its line, in a :class:`simulplay.core.fields.Checker`
— the same sink the table validators use, so a log's problems are reported together,
at most ten shown. It does not duplicate the Checker's column converters: those convert
whole table columns (pandas, vectorised, CSV text such as ``"1e3"``), while a log line's
values arrive as JSON types, one object at a time, and a JSON ``true`` or a string is not
a number here.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from simulplay.core.errors import InputError, clip
from simulplay.core.fields import Checker


def check_choice(option: str, value: str, choices: Sequence[str]) -> str:
    """``value`` if it is one of ``choices``; otherwise an :class:`InputError` naming ``option``."""
    if value not in choices:
        raise InputError.at(f"{option} '{value}'", f"unknown value for {option}", accepted=" or ".join(choices))
    return value


def check_system(system: str) -> str:
    """``system`` unchanged if it is not blank; otherwise an :class:`InputError` naming ``--system``."""
    if not system.strip():
        raise InputError.at("--system", "is empty", accepted="a non-empty system name")
    return system


class Fields:
    """Typed access to the keys of one log line; problems go to ``check`` at that line."""

    def __init__(self, check: Checker, lineno: int, obj: dict):
        self.check, self.lineno, self.obj = check, lineno, obj

    def problem(self, message: str, key: str | None = None, accepted: str | None = None) -> None:
        """Record a problem at this line (field ``key``, what would be ``accepted``)."""
        self.check.add(message, row=self.lineno, field=key, accepted=accepted)

    def present(self, key: str, accepted: str) -> bool:
        """Whether the line has ``key``; a missing key is recorded as a problem."""
        if key not in self.obj:
            self.problem("is missing", key, accepted)
            return False
        return True

    def number(self, key: str, accepted: str, *, positive: bool = False) -> float | None:
        """A finite number ≥ 0 (> 0 when ``positive``), or ``None`` after recording why not."""
        if not self.present(key, accepted):
            return None
        return self._number(self.obj[key], key, accepted, positive=positive)

    def _number(self, v: Any, key: str, accepted: str, *, positive: bool = False, item: str = ""):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            self.problem(f"{item}{shown(v)} is not a number", key, accepted)
            return None
        try:
            x = float(v)
        except OverflowError:  # an integer literal beyond a float's range
            self.problem(f"{item}{clip(v)} is too large (beyond a float's range, ±1.8e308)", key, accepted)
            return None
        if not math.isfinite(x):
            self.problem(f"{item}{x} is not finite", key, accepted)
        elif x < 0 or (positive and x == 0):
            self.problem(f"{item}{x:g} is not {'positive' if positive else '≥ 0'}", key, accepted)
        else:
            return x
        return None

    def numbers(self, key: str, accepted: str, *, ordered: bool = False) -> list[float] | None:
        """A list of finite numbers ≥ 0 (non-decreasing when ``ordered``)."""
        if not self.present(key, accepted):
            return None
        v = self.obj[key]
        if not isinstance(v, list):
            self.problem("is not a list", key, accepted)
            return None
        out = [self._number(x, key, accepted, item=f"item {k}: ") for k, x in enumerate(v)]
        if any(x is None for x in out):
            return None
        if ordered:
            for k in range(1, len(out)):
                if out[k] < out[k - 1]:
                    self.problem(f"item {k} ({out[k]:g}) is earlier than item {k - 1} ({out[k - 1]:g})",
                                 key, "non-decreasing times")
                    return None
        return out

    def strings(self, key: str, accepted: str) -> list[str] | None:
        """The list of strings at ``key``, or ``None`` after recording why not."""
        if not self.present(key, accepted):
            return None
        v = self.obj[key]
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            self.problem("is not a list of strings", key, accepted)
            return None
        return v

    def string(self, key: str, accepted: str) -> str | None:
        """The string at ``key``, or ``None`` after recording why not."""
        if not self.present(key, accepted):
            return None
        v = self.obj[key]
        if not isinstance(v, str):
            self.problem(f"{shown(v)} is not a string", key, accepted)
            return None
        return v


def shown(value: Any) -> str:
    """A parsed JSON value as JSON, cut to 40 characters, for messages."""
    return clip(json.dumps(value, ensure_ascii=False), 40)
