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
"""

from __future__ import annotations

import hashlib
from pathlib import Path

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
