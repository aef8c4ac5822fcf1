"""File names made from data: talk ids, systems and conditions never become paths.

A talk id such as ``../../etc/t1`` or ``/abs`` must not reach outside the folder a
command writes into or reads from. :func:`safe_component` turns any string into one
path component that stays inside its folder: an ordinary name (letters, digits and
``._-``, not starting with a dot, at most 100 characters) is kept as it is, so ``t1``
stays ``t1`` and a user's ``DIR/t1.wav`` is found; anything else is made of its safe
characters plus ``~`` and 8 hex digits of its SHA-256, so two different ids never share a
name (``timer:w=4`` → ``timer-w-4~…``; ``~`` never appears in a kept name).

:func:`check_new_folder` and :func:`new_folder` are how a command writes a folder of
files (``render``, ``export-simuleval``): into a temporary folder beside the target,
moved into place when everything is written.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from simulplay.errors import InputError

_KEEP = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_STEM = 80  # characters of a changed name kept before its hash


def safe_component(name: str) -> str:
    """``name`` as one safe path component (module docstring): unchanged when it is an
    ordinary name, else its safe characters, ``~`` and 8 hex digits of its SHA-256."""
    name = str(name)
    if _KEEP.fullmatch(name):
        return name
    stem = _UNSAFE.sub("-", name).lstrip(".-")[:_STEM]
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{stem}~{digest}"


def safe_names(parts: Sequence[Sequence[str]], *, sep: str = "__") -> list[str]:
    """One file name stem per row of ``parts`` (each a sequence of strings): the safe
    components joined with ``sep``; a stem equal to an earlier row's (``a__b`` + ``c``
    against ``a`` + ``b__c``) gets ``-2``, ``-3``… so every row has its own name."""
    names: list[str] = []
    seen: set[str] = set()
    for row in parts:
        base = sep.join(safe_component(p) for p in row)
        name, k = base, 2
        while name in seen:
            name, k = f"{base}-{k}", k + 1
        seen.add(name)
        names.append(name)
    return names


def check_new_folder(out: str | Path, flag: str = "--out") -> Path:
    """``out`` must be a new folder, or an empty one, in an existing folder (checked before
    any work; ``flag`` names the option in the error)."""
    p = Path(out)
    if p.exists() and (not p.is_dir() or any(p.iterdir())):
        raise InputError.at(p, "exists and is not an empty folder", field=flag,
                            accepted="a new folder (or an empty one)")
    if not p.parent.is_dir():
        raise InputError.at(p, f"folder {p.parent} does not exist", field=flag,
                            accepted="a folder whose parent exists")
    return p


@contextmanager
def new_folder(target: str | Path) -> Iterator[Path]:
    """A temporary folder beside ``target`` (new, or empty as :func:`check_new_folder`
    checked) to fill; on success it is moved to ``target``, on any error removed, so a
    failure leaves nothing half-written."""
    target = Path(target)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        yield tmp
        tmp.chmod(0o755)
        if target.exists():
            target.rmdir()
        os.replace(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
