"""Names from data (talk ids, system names, conditions) as single, safe path components.

A talk id is whatever a trace or log says: ``../../etc/t1``, ``/abs``, ``..``, a name with
NUL bytes or 10,000 characters. A command that writes or reads one file per talk must turn
the id into a name with :func:`safe_component` (or place it with :func:`child_path`), never
join it to a folder as it is.

The encoding is percent-style and reversible (:func:`original_name`): ASCII letters, digits,
``-`` and ``_`` stay, ``.`` stays except at the start (no hidden files, no ``.`` or ``..``),
and every other character becomes ``%XX`` per UTF-8 byte (upper-case hex), ``%`` itself
included, so distinct ids give distinct names. An encoded name longer than
:data:`MAX_COMPONENT` characters is cut and ends in ``~`` and 16 hex digits of the id's
SHA-256 (still distinct, no longer reversible; ``~`` appears in no other encoded name).
Letters keep their case: on a case-insensitive file system (macOS, Windows) ``T1`` and
``t1`` would share a file, which Linux, where simulplay runs, keeps apart.

:func:`safe_names` joins several components into one file name stem per row;
:func:`check_new_folder` and :func:`new_folder` are how a command writes a folder of files
(``render``, ``export-simuleval``): into a temporary folder beside the target, moved into
place when everything is written.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from simulplay.errors import InputError

#: Longest component written (characters; file systems allow 255 bytes).
MAX_COMPONENT = 120
_KEEP = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.")


def safe_component(name: str) -> str:
    """``name`` as one file or folder name that cannot leave the folder it is put in.

    ``safe_component("../../etc/t1") == "%2E.%2F..%2Fetc%2Ft1"``,
    ``safe_component("/abs") == "%2Fabs"``, ``safe_component("ted_1096_0") == "ted_1096_0"``.
    Raises ValueError for an empty name (ids are never empty)."""
    if not name:
        raise ValueError("an empty name has no file name")
    out = []
    for i, ch in enumerate(name):
        if ch in _KEEP and not (i == 0 and ch == "."):
            out.append(ch)
        else:
            out.extend(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass"))
    text = "".join(out)
    if len(text) <= MAX_COMPONENT:
        return text
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    head = text[: MAX_COMPONENT - 17]
    cut = head.rfind("%", len(head) - 2)  # never end inside a %XX
    return (head[:cut] if cut >= 0 else head) + "~" + digest


def original_name(component: str) -> str | None:
    """The name :func:`safe_component` encoded, or None for a cut (hashed) component."""
    if "~" in component:
        return None
    return bytes(_unquote(component)).decode("utf-8", "surrogatepass")


def _unquote(text: str) -> bytearray:
    out = bytearray()
    i = 0
    while i < len(text):
        if text[i] == "%":
            out.append(int(text[i + 1:i + 3], 16))
            i += 3
        else:
            out.extend(text[i].encode())
            i += 1
    return out


def child_path(folder: str | Path, name: str, suffix: str = "") -> Path:
    """``folder / (safe_component(name) + suffix)``; ``suffix`` is the program's own (``.wav``)."""
    return Path(folder) / (safe_component(name) + suffix)


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
