"""The audio store: content-addressed FLAC plus one record per completed request.

Layout of a store folder::

    audio/ab/abcdef….flac        samples (int16 PCM in FLAC), named by sha256 of rate + samples
    records/<request key>.json   a completed request: audio key, sample count, service time, chunks
    records/<request key>.failed.json   the last failure of a request (retried on the next run)
    locks/<request key>.lock     held (flock) while a process synthesizes that request
    events.jsonl                 append-only log of syntheses (one line each)

Every file is written to a temporary name and renamed into place, so a process killed at
any moment leaves either the old state or the new one. A request is complete exactly when
its record exists; running again skips it. Two processes share a store safely: the first
to lock a request synthesizes it, the other waits and then reads the record.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf

from simulplay.errors import InputError
from simulplay.tables import atomic_path

#: libFLAC compression level as soundfile takes it (0–1): the fastest, still lossless. It
#: encodes about 12 % faster than the default (0.5) for files about 6 % larger (bench/README).
FLAC_LEVEL = 0.0


class AudioStore:
    """The store folder ``root``. Building one touches nothing: writes create the folders
    they need; :meth:`open` checks (and creates) the folder first, for a path a user gave."""

    def __init__(self, root: str | Path):
        self.root = Path(root)

    @classmethod
    def open(cls, root: str | Path, *, create: bool = True, field: str = "--store") -> AudioStore:
        """The store at ``root``, checked: a folder (created with ``create``), or with
        ``create=False`` an existing store (it has ``audio/``). Errors name ``root`` and
        ``field`` (the flag or experiment key that gave it)."""
        store = cls(root)
        if store.root.exists() and not store.root.is_dir():
            raise InputError.at(store.root, "is not a folder", field=field, accepted="a folder for the audio store")
        if not create and not (store.root / "audio").is_dir():
            raise InputError.at(store.root, "is not an audio store (no audio/ folder)", field=field,
                                accepted="the --store folder given to `simulplay synth`")
        if create:
            for sub in ("audio", "records", "locks"):
                (store.root / sub).mkdir(parents=True, exist_ok=True)
        return store

    # ---- audio ----------------------------------------------------------------

    @staticmethod
    def audio_key(samples: np.ndarray, sample_rate: int) -> str:
        h = hashlib.sha256(f"{int(sample_rate)}:".encode())
        h.update(np.ascontiguousarray(samples, dtype="<i2").tobytes())
        return h.hexdigest()

    def audio_path(self, key: str) -> Path:
        return self.root / "audio" / key[:2] / f"{key}.flac"

    def put_audio(self, samples: np.ndarray, sample_rate: int) -> str:
        """Store int16 mono samples losslessly; returns the audio key ('' for no samples)."""
        samples = np.asarray(samples, dtype=np.int16)
        if samples.size == 0:
            return ""
        key = self.audio_key(samples, sample_rate)
        path = self.audio_path(key)
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            with atomic_path(path) as tmp:
                sf.write(tmp, samples, int(sample_rate), format="FLAC", subtype="PCM_16", compression_level=FLAC_LEVEL)
        return key

    def load_audio(self, key: str) -> tuple[np.ndarray, int]:
        """int16 samples and sample rate of a stored key ('' → no samples)."""
        if key == "":
            return np.zeros(0, dtype=np.int16), 0
        path = self.audio_path(key)
        if not path.exists():
            raise InputError.at(self.root, f"audio {key} is missing from the store", field="audio_key",
                                accepted="the store the manifest was synthesized into")
        data, rate = sf.read(path, dtype="int16", always_2d=False)
        return data, rate

    # ---- records --------------------------------------------------------------

    def record_path(self, key: str, failed: bool = False) -> Path:
        return self.root / "records" / f"{key}{'.failed' if failed else ''}.json"

    def get_record(self, key: str) -> dict[str, Any] | None:
        path = self.record_path(key)
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None

    def get_failure(self, key: str) -> dict[str, Any] | None:
        try:
            return json.loads(self.record_path(key, failed=True).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None

    def put_record(self, key: str, record: dict[str, Any]) -> None:
        self.record_path(key).parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(self.record_path(key)) as tmp:
            tmp.write_text(json.dumps(record), encoding="utf-8")
        self.record_path(key, failed=True).unlink(missing_ok=True)

    def put_failure(self, key: str, record: dict[str, Any]) -> None:
        self.record_path(key).parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(self.record_path(key, failed=True)) as tmp:
            tmp.write_text(json.dumps(record), encoding="utf-8")

    def completed_keys(self) -> set[str]:
        return {p.stem for p in (self.root / "records").glob("*.json") if not p.stem.endswith(".failed")}

    # ---- coordination -----------------------------------------------------------

    def try_lock(self, key: str, *, wait: bool = False) -> int | None:
        """Lock a request key for this process (flock; released by the kernel if the
        process dies). Returns the descriptor to pass to :meth:`unlock`, or None if
        another process holds it and ``wait`` is false."""
        (self.root / "locks").mkdir(parents=True, exist_ok=True)
        fd = os.open(self.root / "locks" / f"{key}.lock", os.O_CREAT | os.O_RDWR, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            os.close(fd)
            return None
        return fd

    @staticmethod
    def unlock(fd: int) -> None:
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    @contextmanager
    def claim(self, key: str, *, wait: bool) -> Iterator[bool]:
        """Hold the request's lock while synthesizing it; yields False if another process
        holds it and ``wait`` is false."""
        fd = self.try_lock(key, wait=wait)
        try:
            yield fd is not None
        finally:
            if fd is not None:
                self.unlock(fd)

    def log_event(self, event: dict[str, Any]) -> None:
        """Append one line to events.jsonl (a single O_APPEND write)."""
        line = (json.dumps(event) + "\n").encode()
        self.root.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.root / "events.jsonl", os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o644)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)

    def events(self) -> list[dict[str, Any]]:
        path = self.root / "events.jsonl"
        if not path.exists():
            return []
        out = []
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a line cut by a kill mid-write
        return out
