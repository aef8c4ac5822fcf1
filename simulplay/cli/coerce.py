"""Plain command-line values without Pydantic: typer 0.29 coerces every parameter through a
Pydantic ``TypeAdapter``, and importing Pydantic and building the adapters costs a command
about 0.1 s, a tenth of a `replay` or `eta` on a large panel.

:func:`install` gives each parameter of a command whose annotation is ``str``, ``int``,
``float``, ``bool``, ``pathlib.Path`` or ``list[str]`` (no parser, no choices, no file type) a
coercion that takes the common values itself: text as it is, whole numbers written as
digits (``-?[0-9]{1,18}``), decimals written as digits with an optional fraction,
numbers and booleans already of the type, and paths (``Path(text)``, then typer's own checks of the
path's options), each within the parameter's ``min``/``max``. It returns what the adapter
returns for those values (``int("007")`` is the adapter's 7, ``Path("")`` its
``Path(".")``). Any other value, and any value the fast path cannot take (out of range, a
path that fails typer's checks), goes to the parameter's own typer coercion, which then
imports Pydantic and gives exactly typer's result or error.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# typer's private modules, on purpose: typer offers no public way to replace a parameter's
# coercion, and its public path builds a Pydantic adapter per parameter (module docstring).
# What is used here (typer._coercion's RuntimeParam and build_runtime_param, typer._param_types'
# coerce_cli_path and lenient_issubclass, typer.core's _TyperParameter and its _runtime_param)
# is that of the typer versions in SUPPORTED_TYPER, to which pyproject.toml pins typer;
# tests/cli/test_coerce.py checks the installed typer is one of them and has every name.
from typer._coercion import RuntimeParam, build_runtime_param
from typer._param_types import coerce_cli_path, lenient_issubclass
from typer.core import _TyperParameter

#: The typer releases (major, minor) whose private names this module uses.
SUPPORTED_TYPER = ((0, 29),)

_INT = re.compile(r"-?[0-9]{1,18}")
_FLOAT = re.compile(r"-?[0-9]{1,15}(?:\.[0-9]{1,15})?")
_MISS = object()


@dataclass(frozen=True)
class PlainParam(RuntimeParam):
    """A parameter's coercion: the fast path of the module docstring, else typer's own
    (built on first need from ``descriptor``)."""

    descriptor: Any = None
    _kind: list = field(default_factory=list)  # the fast path's kind (None: none), once known
    _typer: list = field(default_factory=list)  # typer's RuntimeParam, once built

    def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
        if not self._kind:  # known at the first value: most parameters of most commands never get one
            self._kind.append(_kind(self.descriptor))
        try:
            out = _MISS if self._kind[0] is None else _fast(self._kind[0], value, self.parameter_info, param, ctx)
        except Exception:  # typer's path checks refused it: typer says why, in its words
            out = _MISS
        if out is not _MISS:
            return out
        if not self._typer:
            self._typer.append(build_runtime_param(self.descriptor))
        return self._typer[0]._coerce_value(value, param=param, ctx=ctx)


def _in_range(number: float, info: Any) -> bool:
    return ((info.min is None or number >= info.min) and (info.max is None or number <= info.max)
            and not info.clamp)


def _fast(kind: str, value: Any, info: Any, param: Any, ctx: Any) -> Any:
    """The coerced value, or ``_MISS`` for typer's own coercion."""
    if kind == "str":
        return value if type(value) is str else _MISS
    if kind == "bool":
        return value if type(value) is bool else _MISS
    if kind == "list[str]":
        return list(value) if type(value) in (list, tuple) and all(type(v) is str for v in value) else _MISS
    if kind == "int":
        number = value if type(value) is int else int(value) if type(value) is str and _INT.fullmatch(value) else None
        return number if number is not None and _in_range(number, info) else _MISS
    if kind == "float":
        if type(value) is float and math.isfinite(value):
            number = value
        elif type(value) is str and _FLOAT.fullmatch(value):
            number = float(value)
        else:
            return _MISS
        return number if _in_range(number, info) else _MISS
    if kind == "path" and type(value) is str:
        return coerce_cli_path(Path(value), info, path_type=Path, param=param, ctx=ctx)
    return _MISS


def _kind(descriptor: Any) -> str | None:
    """Which fast path a parameter's type descriptor takes, or None."""
    info, annotation = descriptor.parameter_info, descriptor.annotation
    if info.parser is not None or descriptor.file_annotation is not None or descriptor.is_choice:
        return None
    if annotation in (str, int, float, bool):
        return annotation.__name__
    if annotation == list[str]:
        return "list[str]"
    if annotation is Path and info.path_type is None and lenient_issubclass(annotation, Path):
        return "path"
    return None


def install(params: list[Any]) -> None:
    """Give each parameter of ``params`` the fast coercion (module docstring), which takes
    plain values itself and hands the rest to typer's own."""
    for p in params:
        if isinstance(p, _TyperParameter) and getattr(p, "_runtime_param", _MISS) is None:
            d = p.type_descriptor
            p._runtime_param = PlainParam(d.parameter_info, d.annotation, d)
