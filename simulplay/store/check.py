"""Checking a whole audio store and removing what killed runs left behind.

:func:`verify_store` reads every record (``records/*.json``) and the audio it names: the
record is readable and complete, the FLAC exists, decodes, holds the samples its key names
(SHA-256) and as many as the record says, at its rate. It also counts temporary files
(``.<name>.*.tmp``: a write cut by a kill), lock files no process holds, failed requests, and
audio files no record refers to (not a fault: kept). :func:`gc_store` removes the temporary
files and stale lock files; it holds the store's session lock exclusively, so it refuses
while a ``synth``, ``run`` or ``edges`` works on the store.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from simulplay.core.errors import InputError
from simulplay.store.store import AudioStore, describe_request

SHOWN = 10  # damaged requests listed by name; the rest are counted


@dataclass
class StoreReport:
    """What :func:`verify_store` found (paths absolute), or what :func:`gc_store` removed."""

    root: Path
    records: int = 0
    failed: int = 0
    audio_files: int = 0
    damaged: list[str] = field(default_factory=list)  # one line per damaged request
    temporary: list[Path] = field(default_factory=list)
    temporary_bytes: int = 0
    stale_locks: list[Path] = field(default_factory=list)
    held_locks: int = 0
    unreferenced_audio: int = 0

    @property
    def sound(self) -> bool:
        """No damaged request and nothing left behind by a killed run."""
        return not (self.damaged or self.temporary or self.stale_locks)

    def summary(self) -> str:
        return (f"store {self.root}: {self.records} records ({self.failed} failed requests besides), "
                f"{self.audio_files} audio files; {len(self.damaged)} damaged, {len(self.temporary)} temporary "
                f"files, {len(self.stale_locks)} stale lock files, {self.held_locks} locks held by running "
                f"processes, {self.unreferenced_audio} audio files no record refers to (kept)")


def verify_store(root: str | Path) -> StoreReport:
    """Check every record and its audio (every file decoded), and count leftovers (nothing
    is changed)."""
    store = AudioStore.open(root, create=False)
    report = StoreReport(store.root.resolve())
    referenced: set[str] = set()
    for key in sorted(store.completed_keys()):
        report.records += 1
        rec = store.get_record(key) or {}
        referenced.add(str(rec.get("audio_key", "")))
        problem = store.record_problem(key, full=True)
        if problem:
            origin = rec.get("origin")
            who = describe_request(origin) if isinstance(origin, dict) else "(origin unknown)"
            report.damaged.append(f"request {key} {who} {problem}")
    report.failed = len(list((store.root / "records").glob("*.failed.json")))
    audio_files = list((store.root / "audio").glob("*/*.flac"))
    report.audio_files = len(audio_files)
    report.unreferenced_audio = sum(p.stem not in referenced for p in audio_files)
    report.temporary = temporary_files(store.root)
    report.stale_locks, report.held_locks = _locks(store)
    return report


def temporary_files(root: Path) -> list[Path]:
    """Files named ``.<name>.*.tmp`` anywhere in the store (atomic writes cut short)."""
    return sorted(p for p in root.rglob(".*.tmp") if p.is_file())


def _locks(store: AudioStore) -> tuple[list[Path], int]:
    stale, held = [], 0
    for path in sorted((store.root / "locks").glob("*.lock")):
        fd = _try(path)
        if fd is None:
            held += 1
        else:
            os.close(fd)
            stale.append(path)
    return stale, held


def _try(path: Path) -> int | None:
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


@contextmanager
def exclusive(store: AudioStore) -> Iterator[None]:
    """The store's session lock, exclusively: no other process is working on the store."""
    fd = os.open(store.root / "locks", os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InputError.at(f"store {store.root}", "is in use by a running simulplay process (synth, run or "
                                "edges)", accepted="a store no command is working on: run gc when it has "
                                "finished") from None
        yield
    finally:
        os.close(fd)


def gc_store(root: str | Path) -> StoreReport:
    """Remove temporary files and stale lock files; returns what was removed."""
    store = AudioStore.open(root, create=False)
    (store.root / "locks").mkdir(exist_ok=True)
    report = StoreReport(store.root.resolve())
    with exclusive(store):
        for path in temporary_files(store.root):
            report.temporary_bytes += path.stat().st_size
            path.unlink(missing_ok=True)
            report.temporary.append(path)
        for path in sorted((store.root / "locks").glob("*.lock")):
            fd = _try(path)
            if fd is None:
                report.held_locks += 1
                continue
            try:
                path.unlink(missing_ok=True)  # while holding it: a waiter retries on a new file
            finally:
                os.close(fd)
            report.stale_locks.append(path)
    return report
