"""Plugins: a user's rules, backends, recognizers and replay variants in every command (docs/plugins.md).

Two ways in, both without editing simulplay:

* entry points of an installed distribution, in the groups of :data:`GROUPS`: the entry
  point's name is the registered name, its value a module (or ``module:attr``) whose import
  registers it. A registry loads one only when a name is not built in (:func:`load_entry_point`);
* ``--plugin MODULE`` on any command (:func:`split_plugin_args`) or an experiment file's
  ``plugins = [...]`` (:func:`experiment_plugins`): a dotted module importable from
  ``sys.path`` or the current folder, or a path to a ``.py`` file, imported before the command runs.

Every component a plugin registers remembers where it came from (:class:`PluginIdentity`:
the distribution or module name, its version, the module file's SHA-256), and every signature
that names it gains a ``plugin`` entry (:func:`with_plugins`, called by
:func:`simulplay.core.signature.merge` and ``base_signature``). A built-in component adds
nothing, so signatures without plugins are unchanged. A plugin that fails to import, that
registers a name already taken, or an entry point that does not register its name, is a
one-line :class:`~simulplay.core.errors.InputError` (exit code 2).
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simulplay.core.errors import InputError, RegistryError

#: Entry-point groups, one per kind of component (replay variants: service models and releases).
GROUPS = ("simulplay.rules", "simulplay.backends", "simulplay.recognizers", "simulplay.variants", "simulplay.commits")
#: Signature keys whose values name a registered component (``name`` or ``name:params``).
SIGNATURE_KEYS = ("rule", "backend", "release", "service", "recognizer", "commit")
ACCEPTED = "a module importable from sys.path (my_rules, pkg.my_rules) or a path to a .py file (./my_rules.py)"
_DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


@dataclass(frozen=True)
class PluginIdentity:
    """Where a component came from: ``name`` (the distribution of an entry point, else the
    module), ``version`` (the distribution's, else the module's ``__version__`` or
    ``unversioned``), ``sha256`` (of the module's file) and the ``module`` imported."""

    name: str
    version: str
    sha256: str
    module: str

    def entry(self, component: str) -> str:
        """The signature's ``plugin`` entry for ``component``: ``clause=my-rules@0.1/sha256:…``."""
        return f"{component}={self.name}@{self.version}/sha256:{self.sha256}"


_ORIGINS: dict[tuple[str, str], PluginIdentity] = {}  # (signature key, name) → its plugin
_LOADING: list[PluginIdentity] = []  # the plugin being imported (registrations are attributed to it)
_LOADED: dict[str, PluginIdentity] = {}  # a --plugin module or file → its identity
_TRIED: set[tuple[str, str]] = set()  # entry points already loaded (group, name)


def registering(key: str | None, name: str, module: str) -> None:
    """Note a registration (called by :meth:`Registry.register`) of a class defined in
    ``module``: while a plugin is imported, ``name`` under the signature key ``key`` belongs to
    it, unless simulplay's own modules register it (its built-ins, first imported by the plugin)."""
    if _LOADING and key and module != "simulplay" and not module.startswith("simulplay."):
        _ORIGINS[(key, name)] = _LOADING[-1]


def duplicate(what: str, key: str | None, name: str) -> RegistryError:
    """The error of a second registration of ``name``: by a plugin, or built in."""
    owner = _ORIGINS.get((key, name)) if key else None
    if owner is not None:
        return RegistryError(f"{what} '{name}' is already registered by plugin {owner.name}")
    if _LOADING:
        return RegistryError(f"{what} '{name}' is built into simulplay")
    return RegistryError(f"{what} '{name}' is already registered")


def origin(key: str, name: str) -> PluginIdentity | None:
    """The plugin that registered ``name`` under the signature key ``key`` (None: built in)."""
    return _ORIGINS.get((key, name))


def entries(key: str, value: Any) -> list[str]:
    """The ``plugin`` entries of a signature value naming components (a spec or a list of them):
    of the plugin loaded now, else those a file read in this process stored (:func:`remember`)."""
    if not _ORIGINS and not _STORED:
        return []
    out = []
    for item in value if isinstance(value, (list, tuple)) else [value]:
        if isinstance(item, str):
            name = _name(item)
            ident = _ORIGINS.get((key, name))
            if ident is not None:
                out.append(ident.entry(name))
            elif (key, name) in _STORED:
                out.append(_STORED[(key, name)])
    return out


def _name(spec: str) -> str:
    return re.split(r"[:=]", spec.strip(), maxsplit=1)[0]


_STORED: dict[tuple[str, str], str] = {}  # (signature key, name) → the plugin entry a file read here stored


def forget_stored() -> None:
    """Drop what :func:`remember` kept (the command line, after each command)."""
    _STORED.clear()


def remember(meta: Mapping[str, Any]) -> None:
    """Keep the ``plugin`` entries of a table's stored signatures (``signature`` and the
    per-row ``signatures``), each under the component its signature names, so that numbers
    made from the table in a command run without the plugin still name it."""
    sigs = [meta.get("signature"), *(meta.get("signatures") or [])]
    for sig in sigs:
        if not isinstance(sig, Mapping) or "plugin" not in sig:
            continue
        for entry in _as_list(sig["plugin"]):
            name = entry.partition("=")[0]
            for key in SIGNATURE_KEYS:
                value = sig.get(key)
                if any(isinstance(v, str) and _name(v) == name
                       for v in (value if isinstance(value, (list, tuple)) else [value])):
                    _STORED.setdefault((key, name), entry)


def with_origin(identity: dict[str, Any], key: str, name: str) -> dict[str, Any]:
    """``identity`` with a ``plugin`` entry when ``name`` (under the signature key ``key``) comes
    from a plugin, so that a new version of the plugin's file makes new request keys; unchanged
    (the same dict) for a built-in component."""
    found = entries(key, name)
    return {**identity, "plugin": found} if found else identity


def with_plugins(sig: dict[str, Any], parts: Iterable[Mapping[str, Any] | None] = ()) -> dict[str, Any]:
    """``sig`` with its ``plugin`` key: the union of the ``plugin`` entries of ``parts`` and of
    ``sig`` and those of the plugin components ``sig`` names; no key when there are none."""
    found = {e for p in (*parts, sig) if p for e in _as_list(p.get("plugin"))}
    for key in SIGNATURE_KEYS:
        if key in sig:
            found.update(entries(key, sig[key]))
    if found:
        sig["plugin"] = sorted(found)
    return sig


def _as_list(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if value != "(per row)" else []
    return [str(v) for v in value] if isinstance(value, (list, tuple)) else []


# ---- entry points ----------------------------------------------------------------


@functools.cache
def _entry_points(group: str) -> dict[str, Any]:
    """The installed entry points of ``group`` by name (importlib.metadata, imported here:
    a command that needs none skips its import)."""
    import importlib.metadata

    return {ep.name: ep for ep in importlib.metadata.entry_points(group=group)}


def entry_point_names(group: str) -> list[str]:
    """The names installed distributions declare in ``group`` (nothing is imported)."""
    return sorted(_entry_points(group))


def load_entry_point(group: str, name: str, is_registered: Callable[[], bool], what: str) -> None:
    """Import the entry point ``name`` of ``group`` if one is installed (once); its import must
    register ``name``."""
    ep = _entry_points(group).get(name)
    if ep is None or (group, name) in _TRIED:
        return
    _TRIED.add((group, name))
    dist = ep.dist
    dist_name = dist.metadata["Name"] if dist is not None else ep.module
    version = dist.version if dist is not None else "unversioned"
    where = f"entry point '{name}' of {dist_name} {version} (group {group})"
    ident = PluginIdentity(dist_name, version, _module_sha256(ep.module, where), ep.module)
    _import(where, ident, ep.load)
    if not is_registered():
        raise InputError.at(where, f"importing {ep.value} does not register {what} '{name}'",
                            accepted=f"an entry point named after what its module registers (@register_…(\"{name}\"))")


# ---- --plugin and plugins = [...] ------------------------------------------------


def split_plugin_args(argv: list[str]) -> tuple[list[str], list[str]]:
    """``argv`` without its ``--plugin MODULE`` / ``--plugin=MODULE`` options (anywhere before
    ``--``), and the modules they name, in order."""
    rest: list[str] = []
    plugins: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            rest += argv[i:]
            break
        if arg == "--plugin":
            if i + 1 >= len(argv):
                raise InputError.at("--plugin", "needs a value", accepted=ACCEPTED)
            plugins.append(argv[i + 1])
            i += 2
            continue
        if arg.startswith("--plugin="):
            plugins.append(arg.partition("=")[2])
        else:
            rest.append(arg)
        i += 1
    return rest, plugins


def load_plugins(specs: Iterable[str], *, source: str = "--plugin", base: Path | None = None) -> list[PluginIdentity]:
    """Import each plugin module (a dotted name, or a ``.py`` path, relative to ``base`` if
    given) once; errors name ``source`` and the module."""
    return [load_plugin(s, source=source, base=base) for s in specs]


def load_plugin(spec: str, *, source: str = "--plugin", base: Path | None = None) -> PluginIdentity:
    """Import one plugin module (see :func:`load_plugins`) and return its identity."""
    where = f"{source} '{spec}'"
    text = spec.strip()
    if text.endswith(".py") or "/" in text or "\\" in text:
        return _load_file((base / text) if base is not None else Path(text), where)
    if not _DOTTED.fullmatch(text):
        raise InputError.at(where, "is neither a module name nor a .py file", accepted=ACCEPTED)
    if text in _LOADED:
        return _LOADED[text]
    here = os.getcwd()  # the current folder, as `python -m` has it (the console script's path starts at its bin/)
    if "" not in sys.path and here not in sys.path:
        sys.path.append(here)  # last: an installed module of the same name wins
    holder = PluginIdentity(text, "unversioned", _module_sha256(text, where), text)
    module = _import(where, holder, lambda: importlib.import_module(text))
    return _settle(text, holder, module)


def experiment_plugins(data: dict[str, Any], path: Path) -> dict[str, Any]:
    """Load an experiment file's ``plugins = [...]`` (paths relative to the file's folder)
    and return its other keys."""
    plugins = data.get("plugins", [])
    where = f"{path}, field 'plugins'"
    if not isinstance(plugins, list) or not all(isinstance(p, str) for p in plugins):
        raise InputError.at(where, f"{plugins!r} is not a list of strings", accepted=f"a list: {ACCEPTED}")
    load_plugins(plugins, source=where, base=path.parent)
    return {k: v for k, v in data.items() if k != "plugins"}


def _load_file(path: Path, where: str) -> PluginIdentity:
    path = path.resolve()
    if not path.is_file() or path.suffix != ".py":
        raise InputError.at(where, "no such .py file" if not path.exists() else "is not a .py file", accepted=ACCEPTED)
    if str(path) in _LOADED:
        return _LOADED[str(path)]
    name = path.stem
    loaded = sys.modules.get(name)
    if not name.isidentifier() or (loaded is not None and getattr(loaded, "__file__", None) != str(path)):
        raise InputError.at(where, f"the file name '{name}' is not a free module name (already imported, "
                            "or not an identifier)", accepted="a .py file named like a new module (my_rules.py)")
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise InputError.at(where, "cannot be imported", accepted=ACCEPTED)
    module = importlib.util.module_from_spec(spec)
    holder = PluginIdentity(name, "unversioned", _sha256(path), name)

    def run():
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(name, None)
            raise
        if str(path.parent) not in sys.path:  # worker processes (spawn) import it by name to rebuild configs
            sys.path.append(str(path.parent))
        return module

    return _settle(str(path), holder, _import(where, holder, run))


def _settle(key: str, holder: PluginIdentity, module: Any) -> PluginIdentity:
    """The identity with the module's ``__version__``, for every component it registered."""
    version = getattr(module, "__version__", None)
    ident = PluginIdentity(holder.name, str(version), holder.sha256, holder.module) if version else holder
    for k, v in list(_ORIGINS.items()):
        if v is holder:
            _ORIGINS[k] = ident
    _LOADED[key] = ident
    return ident


def _import(where: str, ident: PluginIdentity, load: Callable[[], Any]) -> Any:
    _LOADING.append(ident)
    try:
        return load()
    except RegistryError as e:
        raise InputError.at(where, f"registers a name already taken: {e}",
                            accepted="a name of its own (rename it where the plugin registers it)") from e
    except InputError:
        raise
    except Exception as e:  # the user's module: any failure is one line naming it
        message = " ".join(f"{type(e).__name__}: {e}".split())
        raise InputError.at(where, f"failed to import ({message})", accepted=ACCEPTED) from e
    finally:
        _LOADING.pop()


def _module_sha256(module: str, where: str) -> str:
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError) as e:
        raise InputError.at(where, f"failed to import ({type(e).__name__}: {e})", accepted=ACCEPTED) from e
    if spec is None or not spec.origin or not Path(spec.origin).is_file():
        raise InputError.at(where, f"failed to import (no module named '{module}' with a file)", accepted=ACCEPTED)
    return _sha256(Path(spec.origin))


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
