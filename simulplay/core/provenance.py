"""Provenance: what identities and signatures record about files, packages and machines.

One copy of each helper, used by TTS backends, recognizers, the VAD, importers, the
synthesis run and the report alike: a file's or a folder's SHA-256, an installed
package's version, the CPU model and a source checkout's git revision.
"""

from __future__ import annotations

import hashlib
import os
import platform
import subprocess
from functools import lru_cache
from importlib import metadata
from pathlib import Path

#: What :func:`package_version` returns for a distribution that is not installed.
NOT_INSTALLED = "not-installed"


@lru_cache(maxsize=256)
def package_version(dist: str) -> str:
    """The installed version of distribution ``dist`` (e.g. ``piper-tts``), or ``not-installed``
    (looked up once per process: scanning the installed distributions takes tens of ms)."""
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return NOT_INSTALLED


def sha256_of_file(path: str | Path) -> str:
    """The file's SHA-256 (64 hex digits), read now in 1 MiB blocks (data files: traces,
    logs, requests tables, report inputs)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@lru_cache(maxsize=64)
def _sha256_cached(path: str, size: int, mtime_ns: int) -> str:
    return sha256_of_file(path)


def file_sha256(path: str | Path) -> str:
    """The SHA-256 of a model, voice or prompt file, remembered per (path, size in bytes,
    modification time in ns), so identities hash a large file once per process."""
    st = os.stat(path)
    return _sha256_cached(str(path), st.st_size, st.st_mtime_ns)


def file_fingerprint(path: str | Path) -> str:
    """The first 12 hex digits of the file's SHA-256, read now (what signatures show)."""
    return sha256_of_file(path)[:12]


def folder_sha256(folder: str | Path) -> str:
    """SHA-256 over a model folder: every file's relative path and content hash, sorted."""
    root = Path(folder)
    h = hashlib.sha256()
    for p in sorted(q for q in root.rglob("*") if q.is_file()):
        h.update(f"{p.relative_to(root).as_posix()}:{file_sha256(p)}\n".encode())
    return h.hexdigest()


@lru_cache(maxsize=1)
def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else what :mod:`platform` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def git_revision(folder: str | Path) -> str:
    """The git commit checked out in ``folder``, or ``unknown`` when it is not a git work tree."""
    try:
        out = subprocess.run(["git", "-C", str(folder), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else "unknown"


def machine() -> dict[str, object]:
    """Where numbers were measured: host name, CPU model, logical cores (``cores``) and the
    cores this process may use (``usable_cores``), the platform, and the 1-, 5- and
    15-minute load averages now (None where the platform has none)."""
    import socket

    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count()
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        load = None
    return {"host": socket.gethostname(), "cpu": cpu_model(), "cores": os.cpu_count(), "usable_cores": usable,
            "platform": platform.platform(), "load": load}


def machine_line(info: dict[str, object]) -> str:
    """One line for a reader: ``AMD EPYC, 2 cores (2 usable), load 1.60/0.83/1.31, host vm``."""
    load = info.get("load")
    load_text = "/".join(f"{x:.2f}" for x in load) if isinstance(load, (list, tuple)) else "unknown"
    return (f"{info.get('cpu')}, {info.get('cores')} cores ({info.get('usable_cores')} usable), "
            f"load {load_text}, host {info.get('host')}")
