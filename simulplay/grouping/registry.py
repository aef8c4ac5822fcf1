"""The registry of grouping rules and the RULE-string parser.

A rule is a frozen dataclass registered under a name with :func:`register_rule`; its
fields are its parameters (with defaults) and ``group(stream)`` returns its groups. A
RULE string is ``name`` or ``name:key=value,key=value``. The canonical string lists
every parameter in field order (``punct`` → ``punct:cap=2,min_words=3``), so saved
conditions recreate the exact rule::

    @register_rule("every_other")
    @dataclass(frozen=True)
    class EveryOther(Rule):
        def group(self, stream): ...
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from simulplay.errors import InputError, RegistryError
from simulplay.traces.model import Stream

TRIGGERS = ("immediate", "timer", "punct", "words", "eos")


@dataclass(frozen=True)
class Group:
    """Consecutive updates ``first..last`` (indices into the stream) released together."""

    first: int
    last: int
    dispatch_s: float
    trigger: str

    @property
    def n_updates(self) -> int:
        return self.last - self.first + 1


@dataclass(frozen=True)
class Rule:
    """Base class: subclasses are frozen dataclasses whose fields are parameters."""

    name: ClassVar[str] = ""

    def group(self, stream: Stream) -> list[Group]:  # pragma: no cover - interface
        raise NotImplementedError

    def params(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def canonical(self) -> str:
        """The canonical RULE string, e.g. ``timer:w=4``."""
        params = self.params()
        if not params:
            return self.name
        return self.name + ":" + ",".join(f"{k}={format_number(v)}" for k, v in params.items())

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.name, **self.params()}

    def __str__(self) -> str:
        return self.canonical()


_RULES: dict[str, type[Rule]] = {}
R = TypeVar("R", bound=type[Rule])


def register_rule(name: str) -> Callable[[R], R]:
    """Class decorator adding a rule to the registry under ``name``."""

    def deco(cls: R) -> R:
        if name in _RULES:
            raise RegistryError(f"grouping rule '{name}' is already registered")
        if not dataclasses.is_dataclass(cls):
            raise RegistryError(f"grouping rule '{name}' must be a dataclass")
        cls.name = name
        _RULES[name] = cls
        return cls

    return deco


def known_rules() -> list[str]:
    return sorted(_RULES)


def format_number(v: Any) -> str:
    if isinstance(v, float):
        return str(int(v)) if v.is_integer() else repr(v)
    return str(v)


def parse_rule(text: str, *, source: str = "--rule") -> Rule:
    """Parse a RULE string (``immediate``, ``timer:w=4``, ``punct``, ``words:n=6,cap=3``)."""
    name, _, rest = text.strip().partition(":")
    where = f"{source} '{text}'"
    if name not in _RULES:
        raise InputError.at(where, f"unknown grouping rule '{name}'", accepted=", ".join(known_rules()))
    cls = _RULES[name]
    fields = {f.name: f for f in dataclasses.fields(cls)}
    accepted = ", ".join(f"{k}=<{f.type}>" for k, f in fields.items()) or "no parameters"
    kwargs: dict[str, Any] = {}
    for item in filter(None, (s.strip() for s in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq or key not in fields:
            raise InputError.at(where, f"unknown parameter '{item}' for rule '{name}'", accepted=accepted)
        kwargs[key] = _convert(value, fields[key], where)
    try:
        return cls(**kwargs)
    except ValueError as e:
        raise InputError.at(where, str(e), accepted=accepted) from e


def _convert(value: str, field: dataclasses.Field, where: str) -> Any:
    kind = field.type if isinstance(field.type, str) else getattr(field.type, "__name__", "")
    try:
        if kind == "int":
            return int(value)
        if kind == "float":
            return float(value)
    except ValueError as e:
        raise InputError.at(where, f"'{field.name}={value}' is not a {kind}", accepted=f"{field.name}=<{kind}>") from e
    return value


def canonical_condition(text: str) -> str:
    """The canonical string of a RULE string, or the text unchanged if it is not one.

    Manifests may label conditions freely; known rules compare by canonical form.
    """
    try:
        return parse_rule(text).canonical()
    except InputError:
        return text
