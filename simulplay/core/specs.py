"""Named registries of configurable components and the ``name:key=value,…`` spec syntax.

Grouping rules, backends and recognizers are frozen dataclasses registered under a name;
their fields are their parameters. A spec string ``name`` or ``name:key=value,key=value``
builds one; a bool parameter named alone is ``true`` (``piper:deterministic`` is
``piper:deterministic=true``); :func:`canonical_spec` writes every parameter back in field
order, so a saved spec recreates the exact object.

Building an instance has no side effects: a config that names files or folders checks
them in its ``check()`` method (raising ``ValueError``), which :meth:`Registry.parse`
calls for specs a user gives (the explicit factory) and the runtime object's ``load()``
calls again, while :meth:`Registry.from_dict` rebuilds a saved config (``to_dict()``)
without looking at the machine, so it can be rebuilt anywhere.

Field metadata refines a parameter: ``choices`` (a tuple of strings) limits its values
and names them in errors; ``omit_default=True`` leaves it out of the canonical string
while it holds its default, so adding such a parameter keeps existing strings stable.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Container
from typing import Any, Generic, TypeVar

from simulplay.core import plugins
from simulplay.core.errors import InputError, RegistryError

T = TypeVar("T")


def format_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return str(int(v)) if v.is_integer() else repr(v)
    return str(v)


class Registry(Generic[T]):
    """A registry of dataclass types keyed by name (``what`` names it in messages). A name
    that is not registered is looked up in the entry-point ``group`` of installed plugins
    (:mod:`simulplay.core.plugins`); ``key`` is the signature key whose values name these
    components, so that a plugin's components are named in signatures."""

    def __init__(self, what: str, *, group: str | None = None, key: str | None = None):
        self.what = what
        self.group = group
        self.key = key
        self._items: dict[str, type[T]] = {}

    def register(self, name: str) -> Callable[[type[T]], type[T]]:
        def deco(cls: type[T]) -> type[T]:
            if name in self._items:
                raise plugins.duplicate(self.what, self.key, name)
            if not dataclasses.is_dataclass(cls):
                raise RegistryError(f"{self.what} '{name}' must be a dataclass")
            cls.name = name
            self._items[name] = cls
            plugins.registering(self.key, name, getattr(cls, "__module__", ""))
            return cls

        return deco

    def names(self) -> list[str]:
        return sorted(self._items)

    def has(self, name: str) -> bool:
        """Whether ``name`` is registered, built in or by a plugin (an installed entry point
        of that name is loaded now)."""
        if name not in self._items and self.group:
            plugins.load_entry_point(self.group, name, lambda: name in self._items, self.what)
        return name in self._items

    def get(self, name: str, where: str) -> type[T]:
        if not self.has(name):
            known = sorted({*self.names(), *(plugins.entry_point_names(self.group) if self.group else ())})
            raise InputError.at(where, f"unknown {self.what} '{name}'", accepted=", ".join(known))
        return self._items[name]

    def names_in_order(self) -> list[str]:
        """The registered names in registration order."""
        return list(self._items)

    def parse(self, text: str, *, source: str, check: bool = True) -> T:
        """Build an instance from a spec string; errors name the spec and what is accepted.
        With ``check`` the instance's ``check()`` (files and folders it names) runs too."""
        name, _, rest = text.strip().partition(":")
        where = f"{source} '{text}'"
        cls = self.get(name, where)
        fields = {f.name: f for f in dataclasses.fields(cls) if f.init and not f.name.startswith("_")}
        accepted = ", ".join(f"{k}=<{_kind(f)}>" for k, f in fields.items()) or "no parameters"
        kwargs: dict[str, Any] = {}
        flags = {k for k, f in fields.items() if _kind(f) == "bool"}
        for item in filter(None, (s.strip() for s in _split_items(rest, flags))):
            key, eq, value = item.partition("=")
            if not eq and key in fields and _kind(fields[key]) == "bool":
                eq, value = "=", "true"  # a bool parameter named alone is switched on
            if not eq or key not in fields:
                raise InputError.at(where, f"unknown parameter '{item}' for {self.what} '{name}'",
                                    accepted=accepted)
            if key in kwargs:
                raise InputError.at(where, f"parameter '{key}' is given twice", accepted=accepted)
            kwargs[key] = convert(value, fields[key], where)
        return build(cls, kwargs, where, accepted, check=check)

    def from_dict(self, data: dict[str, Any], *, key: str, source: str = "config") -> T:
        """Rebuild a saved config: ``data[key]`` is the registered name, the other items its
        parameters (``to_dict()``'s output). Files it names are not looked at."""
        name = data.get(key)
        cls = self.get(str(name), f"{source} '{name}'")
        kwargs = {k: v for k, v in data.items() if k != key}
        accepted = ", ".join(f.name for f in dataclasses.fields(cls) if f.init and not f.name.startswith("_"))
        return build(cls, kwargs, f"{source} '{name}'", accepted or "no parameters", check=False)


def build(cls, kwargs: dict[str, Any], where: str, accepted: str, *, check: bool = False):
    """``cls(**kwargs)`` (and its ``check()`` when asked); a ValueError or TypeError becomes
    an InputError at ``where`` naming what is accepted."""
    try:
        obj = cls(**kwargs)
        if check and callable(getattr(obj, "check", None)):
            obj.check()
        return obj
    except (ValueError, TypeError) as e:  # an error may say what it accepts instead (a package to install)
        raise InputError.at(where, str(e), accepted=getattr(e, "accepted", None) or accepted) from e


def _split_items(rest: str, flags: Container[str] = ()) -> list[str]:
    """Split on commas that start a new ``key=`` item or name a bool parameter of ``flags``
    alone (values such as paths may hold commas)."""
    items: list[str] = []
    for part in rest.split(","):
        if items and "=" not in part and part.strip() not in flags:
            items[-1] += "," + part
        else:
            items.append(part)
    return items


def _kind(field: dataclasses.Field) -> str:
    if field.metadata.get("choices"):
        return "|".join(field.metadata["choices"])
    t = field.type if isinstance(field.type, str) else getattr(field.type, "__name__", str(field.type))
    return t.replace(" | None", "").replace("None | ", "")


def convert(value: str, field: dataclasses.Field, where: str) -> Any:
    """Convert a spec value to the field's declared type (int, float, bool or str), or
    check it against the field's ``choices``."""
    choices = field.metadata.get("choices")
    if choices:
        if value not in choices:
            raise InputError.at(where, f"'{field.name}={value}' is not one of {', '.join(choices)}",
                                accepted=" or ".join(f"{field.name}={c}" for c in choices))
        return value
    kind = _kind(field)
    try:
        if kind == "int":
            return int(value)
        if kind == "float":
            return float(value)
        if kind == "bool":
            low = value.strip().lower()
            if low in ("1", "true", "yes", "on"):
                return True
            if low in ("0", "false", "no", "off"):
                return False
            raise ValueError(value)
    except ValueError as e:
        raise InputError.at(where, f"'{field.name}={value}' is not a {kind}",
                            accepted=f"{field.name}=<{kind}>") from e
    return value


def params(obj) -> dict[str, Any]:
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)
            if f.init and not f.name.startswith("_")}


def canonical_spec(obj) -> str:
    """``name:key=value,…`` with every parameter in field order, except one marked
    ``omit_default`` that holds its default."""
    omitted = {f.name for f in dataclasses.fields(obj)
               if f.metadata.get("omit_default") and getattr(obj, f.name) == f.default}
    p = {k: v for k, v in params(obj).items() if k not in omitted}
    if not p:
        return obj.name
    return obj.name + ":" + ",".join(f"{k}={format_value(v)}" for k, v in p.items())
