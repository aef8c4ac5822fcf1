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

Before any work a command checks that it can write where its outputs go:
:func:`check_folder_writable` writes a test file there and removes it, and
:func:`check_out_folder` does so for a folder that is made if missing (``report``,
``run``); what fails is a one-line InputError with the system's reason (exit code 2).
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from simulplay.core.errors import FileFault, InputError, path_refused

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


#: Name of the test file :func:`check_folder_writable` writes and removes (``.*.tmp``, as
#: temporary files are, so that ``store gc`` removes one a killed process left).
WRITE_CHECK = ".simulplay-write-check."


def check_folder_writable(folder: str | Path, *, shown: str | Path | None = None, field: str | None = None) -> None:
    """Before any work: a test file of a few bytes can be written in ``folder`` and removed,
    or an InputError naming ``shown`` (default ``folder``) and ``field`` says why not (read-only,
    permission denied, no space left) and what to do."""
    folder = Path(folder)
    try:
        fd, name = tempfile.mkstemp(prefix=WRITE_CHECK, suffix=".tmp", dir=folder)
        try:
            os.write(fd, b"simulplay write check\n")
        finally:
            os.close(fd)
            os.unlink(name)
    except OSError as e:
        what = "cannot be written" if shown is None or Path(shown) == folder else f"cannot be written in {folder}"
        if e.errno == errno.ENOENT and folder.is_dir():  # /proc, /sys: a folder that makes no new files
            e = OSError(errno.EROFS, "no new files on this file system")
        raise path_refused(shown or folder, what, e, field=field) from None


def check_out_folder(out: str | Path, flag: str = "--out", *, beside: bool = False) -> Path:
    """``out`` is a folder, or can be made (its nearest existing parent is a folder), and files
    can be written there (and, with ``beside``, in its parent folder too, where a report is
    written first and then moved in): checked before any work, nothing is created."""
    p = Path(out)
    if p.exists() and not p.is_dir():
        raise InputError.at(p, "is a file", field=flag, accepted="a folder (made if missing)")
    if beside and not p.absolute().parent.is_dir():
        raise InputError.at(p, f"folder {p.parent} does not exist", field=flag, accepted="a folder whose parent exists")
    existing = next(a for a in (p, *p.absolute().parents) if a.exists())
    if not existing.is_dir():
        raise InputError.at(p, f"{existing} is not a folder", field=flag, accepted="a folder (made if missing)")
    check_folder_writable(existing, shown=p, field=flag)
    if beside and existing == p and p.absolute().parent != p.absolute():
        check_folder_writable(p.absolute().parent, shown=p, field=flag)
    return p


def check_new_folder(out: str | Path, flag: str = "--out") -> Path:
    """``out`` must be a new folder, or an empty one, in an existing folder where files can
    be written (checked before any work; ``flag`` names the option in the error)."""
    p = Path(out)
    if p.exists() and (not p.is_dir() or any(p.iterdir())):
        raise InputError.at(p, "exists and is not an empty folder", field=flag,
                            accepted="a new folder (or an empty one)")
    if not p.parent.is_dir():
        raise InputError.at(p, f"folder {p.parent} does not exist", field=flag,
                            accepted="a folder whose parent exists")
    check_folder_writable(p.parent, shown=p, field=flag)
    return p


@contextmanager
def new_folder(target: str | Path) -> Iterator[Path]:
    """A temporary folder beside ``target`` (new, or empty as :func:`check_new_folder`
    checked) to fill; on success it is moved to ``target``, on any error removed, so a
    failure leaves nothing half-written. An OSError (disk full, read-only) becomes a
    :class:`~simulplay.core.errors.FileFault` naming ``target``."""
    target = Path(target)
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    except OSError as e:
        raise FileFault(target, "cannot write", e) from e
    try:
        yield tmp
        tmp.chmod(0o755)
        if target.exists():
            target.rmdir()
        os.replace(tmp, target)
    except OSError as e:
        raise FileFault(target, "cannot write", e) from e
    except FileFault as e:  # a file in the temporary folder: name the folder the user asked for
        raise FileFault(target, e.action, e.error) from e.error
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
