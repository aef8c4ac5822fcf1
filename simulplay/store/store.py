"""The audio store: content-addressed FLAC plus one record per completed request.

Layout of a store folder::

    audio/ab/abcdef….flac        samples (int16 PCM in FLAC), named by sha256 of rate + samples
    records/<request key>.json   a completed request: audio key, sample count, service time, chunks
    records/<request key>.failed.json   the last failure of a request (retried on the next run)
    locks/<request key>.lock     held (flock) while a process synthesizes that request; removed
                                 by its holder when done (a killed run leaves it: `store gc`)
    events.jsonl                 append-only log of syntheses (one line each)

Every file is written to a temporary name (``.<name>.*.tmp``) and renamed into place, so a
process killed at any moment leaves either the old state or the new one (and perhaps a
temporary file, which ``simulplay store gc`` removes). A request is complete exactly when
its record exists and its audio is sound; running again skips it. Two processes share a
store safely: the first to lock a request synthesizes it, the other waits and then reads
the record. A process working on the store holds a shared lock on ``locks/`` for as long
(:meth:`AudioStore.session`); ``store gc`` takes it exclusively, so it never removes a
temporary file that a running process is about to rename.

Every read of audio (:meth:`AudioStore.load_audio`) checks that the FLAC decodes to mono
samples whose SHA-256 is the audio key, and, when the caller says, that the sample count and
rate are the record's; damaged or missing audio is an :class:`AudioDamage` naming the store,
the key, the request and the fix.

A record also keeps ``audio_check``: the SHA-256 of its audio key, sample count, rate and
the FLAC file's bytes as written (:meth:`AudioStore.audio_check`). A run that reuses the
store (:meth:`AudioStore.record_problem`) accepts a record whose file and fields still give
that digest without decoding the file (the bytes are the ones encoded from the key's
samples); any other record (older stores have no check, a file re-encoded by another
version, a changed byte) is decoded in full. ``simulplay store verify`` always decodes.
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf

from simulplay.core import safejson
from simulplay.core.atomic import write_atomic
from simulplay.core.errors import FileFault, InputError, clip, path_refused
from simulplay.core.paths import check_folder_writable
from simulplay.store.files import read_json, read_or_none

#: What to do about damaged or missing audio (the end of an :class:`AudioDamage` message).
FIX = "run the same `simulplay synth` command again to synthesize it anew"
REQUEST_FIELDS = (("talk_id", "talk"), ("system", "system"), ("condition", "condition"), ("backend", "backend"),
                  ("realization", "realization"), ("seq", "seq"))


def describe_request(row: Any) -> str:
    """``(talk t1, system A, condition timer:w=4, seq 3)`` from a mapping or a named tuple
    with the manifest's key columns (those present)."""
    get = row.get if isinstance(row, dict) else (lambda k, d=None: getattr(row, k, d))
    parts = [f"{label} {get(key)}" for key, label in REQUEST_FIELDS if get(key) is not None]
    return "(" + ", ".join(parts) + ")"


class AudioDamage(InputError):
    """Stored audio that is missing, does not decode, or is not what its record says."""

    def __init__(self, root: Path, key: str, problem: str, request: str | None = None):
        self.root, self.key, self.problem, self.request = root, key, problem, request
        of = f" of request {request}" if request else ""
        super().__init__(InputError.at(f"store {root}", f"audio {key}{of} {problem}; {FIX} "
                                       f"(`simulplay store verify {root}` checks the whole store)").problems)

    def with_request(self, request: str) -> AudioDamage:
        """The same damage, naming the request that needed the audio."""
        return AudioDamage(self.root, self.key, self.problem, request)


#: libFLAC compression level as soundfile takes it (0–1): the fastest, still lossless. It
#: encodes about 12 % faster than the default (0.5) for files about 6 % larger (bench/bench_synthesis.py).
FLAC_LEVEL = 0.0


class AudioStore:
    """The store folder ``root``. Building one touches nothing: writes create the folders
    they need; :meth:`open` checks (and creates) the folder first, for a path a user gave."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self._events: int | None = None  # events.jsonl kept open in append mode (:meth:`log_event`)
        self._file_sha: dict[str, str] = {}  # audio key → SHA-256 of its FLAC's bytes, as written or checked here

    @classmethod
    def open(cls, root: str | Path, *, create: bool = True, field: str = "--store") -> AudioStore:
        """The store at ``root``, checked: a folder (created with ``create``, and a test file
        written and removed in it and each of its folders, so that a store that cannot be
        created or written is refused before any work), or with ``create=False`` an existing
        store (it has ``audio/``), opened only to read: nothing is written. Errors name
        ``root`` and ``field`` (the flag or experiment key that gave it)."""
        store = cls(root)
        if store.root.exists() and not store.root.is_dir():
            raise InputError.at(store.root, "is not a folder", field=field, accepted="a folder for the audio store")
        if not create and not (store.root / "audio").is_dir():
            raise InputError.at(store.root, "is not an audio store (no audio/ folder)", field=field,
                                accepted="the --store folder given to `simulplay synth`")
        if create:
            for sub in ("", "audio", "records", "locks"):
                try:
                    (store.root / sub).mkdir(parents=True, exist_ok=True)
                except OSError as e:
                    raise path_refused(store.root, "cannot be created as an audio store", e, field=field) from None
                check_folder_writable(store.root / sub, shown=store.root, field=field)
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
        """Store int16 mono samples losslessly; returns the audio key ('' for no samples).
        A file already under the key is kept only if it is sound (else written again)."""
        samples = np.asarray(samples, dtype=np.int16)
        if samples.size == 0:
            return ""
        key = self.audio_key(samples, sample_rate)
        path = self.audio_path(key)
        raw = read_or_none(path)
        if raw is None or self._decode(key, raw)[2] is not None:
            buf = io.BytesIO()  # encoded in memory, written at once: libsndfile's many small writes cost more
            sf.write(buf, samples, int(sample_rate), format="FLAC", subtype="PCM_16", compression_level=FLAC_LEVEL)
            raw = buf.getbuffer()
            write_atomic(path, raw)
        self._file_sha[key] = hashlib.sha256(raw).hexdigest()
        return key

    def audio_check(self, key: str, n_samples: int, sample_rate: int) -> str:
        """The record field ``audio_check`` (module docstring): SHA-256 of ``key``, the sample
        count, the rate and the FLAC file's bytes (those :meth:`put_audio` wrote or checked)."""
        file_sha = self._file_sha.get(key)
        if file_sha is None:
            file_sha = hashlib.sha256(self.audio_path(key).read_bytes()).hexdigest()
        return _audio_check(key, n_samples, sample_rate, file_sha)

    def load_audio(self, key: str, *, n_samples: int | None = None, sample_rate: int | None = None,
                   request: str | None = None) -> tuple[np.ndarray, int]:
        """int16 samples and sample rate (Hz) of a stored key ('' → no samples), checked:
        the file decodes to mono samples whose hash is ``key`` and, when given, there are
        ``n_samples`` of them at ``sample_rate``. Otherwise :class:`AudioDamage` (naming
        ``request``, e.g. :func:`describe_request` of the manifest row)."""
        if key == "":
            return np.zeros(0, dtype=np.int16), 0
        samples, rate, problem = self._decode(key)
        if problem is None:
            problem = _mismatch(len(samples), rate, n_samples, sample_rate)
        if problem is not None:
            raise AudioDamage(self.root, key, problem, request)
        return samples, rate

    def audio_problem(self, key: str, n_samples: int | None = None, sample_rate: int | None = None) -> str | None:
        """What is wrong with the audio under ``key`` (None: sound), as :meth:`load_audio` checks."""
        samples, rate, problem = self._decode(key)
        return problem or _mismatch(len(samples), rate, n_samples, sample_rate)

    def _decode(self, key: str, raw: bytes | None = None) -> tuple[np.ndarray, int, str | None]:
        """Samples, rate and problem of the file under ``key`` (or of its bytes ``raw``)."""
        none = np.zeros(0, dtype=np.int16)
        if raw is None:
            try:
                raw = self.audio_path(key).read_bytes()
            except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
                return none, 0, "is missing"
            except OSError as e:
                return none, 0, f"cannot be read ({clip(' '.join(str(e).split()), 80)})"
        try:
            data, rate = sf.read(io.BytesIO(raw), dtype="int16", always_2d=True)
        except (sf.LibsndfileError, RuntimeError, OSError, ValueError, TypeError) as e:
            return none, 0, f"does not decode as FLAC ({clip(' '.join(str(e).split()), 80)})"
        if data.shape[1] != 1:
            return none, 0, f"has {data.shape[1]} channels, not one"
        data = np.ascontiguousarray(data[:, 0])
        if self.audio_key(data, rate) != key:
            return none, 0, (f"decodes to {len(data)} samples at {rate} Hz that are not the ones its key names "
                             "(truncated or altered)")
        return data, int(rate), None

    # ---- records --------------------------------------------------------------

    def record_path(self, key: str, failed: bool = False) -> Path:
        return self.root / "records" / f"{key}{'.failed' if failed else ''}.json"

    def get_record(self, key: str) -> dict[str, Any] | None:
        """The request's record, or None when it has none (or only an unreadable one, which
        :meth:`record_problem` names)."""
        return read_json(self.record_path(key))

    def get_failure(self, key: str) -> dict[str, Any] | None:
        return read_json(self.record_path(key, failed=True))

    def record_problem(self, key: str, *, full: bool = False) -> str | None:
        """What makes a completed request unusable (None: record and audio are sound):
        an unreadable record, or audio missing, undecodable or not the record's samples.
        A record whose ``audio_check`` its file and fields still give is sound without
        decoding, unless ``full`` (module docstring)."""
        try:
            rec = safejson.loads(self.record_path(key).read_bytes())
        except FileNotFoundError:
            return "has no record"
        except (safejson.JsonError, OSError) as e:
            return f"has an unreadable record ({e})"
        fields = ("audio_key", "n_samples", "sample_rate", "service_s", "chunks")
        if not isinstance(rec, dict) or any(k not in rec for k in fields):
            return "has a record without " + ", ".join(fields)
        if rec["audio_key"] == "":
            return None if rec["n_samples"] == 0 else "has a record of samples without audio"
        audio = str(rec["audio_key"])
        if not full and isinstance(rec.get("audio_check"), str):
            raw = read_or_none(self.audio_path(audio))
            if raw is not None and rec["audio_check"] == _audio_check(audio, rec["n_samples"], rec["sample_rate"],
                                                                      hashlib.sha256(raw).hexdigest()):
                return None
        problem = self.audio_problem(audio, rec["n_samples"], rec["sample_rate"])
        return None if problem is None else f"has audio {audio} that {problem}"

    def discard(self, key: str, problem: str) -> None:
        """Forget a completed request whose audio or record is damaged (its record is
        removed and so is damaged audio, so that the next synthesis writes both anew);
        logged in events.jsonl as ``damaged``."""
        rec = self.get_record(key) or {}
        audio = str(rec.get("audio_key", ""))
        if audio and self.audio_path(audio).exists() and self.audio_problem(audio) is not None:
            self.audio_path(audio).unlink(missing_ok=True)
        self.record_path(key).unlink(missing_ok=True)
        self.log_event({"event": "damaged", "key": key, "audio_key": audio, "problem": problem, "pid": os.getpid()})

    def put_record(self, key: str, record: dict[str, Any]) -> None:
        write_atomic(self.record_path(key), json.dumps(record).encode("utf-8"))
        self.record_path(key, failed=True).unlink(missing_ok=True)

    def put_probes(self, run_id: str, probes: list[dict[str, Any]]) -> None:
        """Keep the clock probes of the synthesis run ``run_id`` (``clock/<run_id>.json``),
        so that a later run reporting the records it synthesized judges them by its probes."""
        self._put_json("clock", run_id, probes)

    def get_probes(self, run_id: str) -> list[dict[str, Any]]:
        """The probes :meth:`put_probes` kept for ``run_id`` ([] when none are, or unreadable)."""
        probes = self._get_json("clock", run_id)
        return [p for p in probes if isinstance(p, dict)] if isinstance(probes, list) else []

    def put_language(self, key: str, talks: list[dict[str, Any]]) -> None:
        """Keep a language check's findings per talk (``language/<key>.json``, ``key`` a hash of
        what was checked), so that a rerun on the same texts need not identify them again."""
        self._put_json("language", key, talks)

    def get_language(self, key: str) -> list[dict[str, Any]] | None:
        """The findings :meth:`put_language` kept for ``key`` (None when none are, or unreadable)."""
        talks = self._get_json("language", key)
        return talks if isinstance(talks, list) and all(isinstance(t, dict) for t in talks) else None

    def _put_json(self, folder: str, name: str, data: Any) -> None:
        write_atomic(self.root / folder / f"{name}.json", json.dumps(data).encode("utf-8"))

    def _get_json(self, folder: str, name: str) -> Any:
        """What :meth:`_put_json` kept as ``folder/<name>.json``; None when absent or unreadable."""
        try:
            return safejson.loads((self.root / folder / f"{name}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def put_failure(self, key: str, record: dict[str, Any]) -> None:
        write_atomic(self.record_path(key, failed=True), json.dumps(record).encode("utf-8"))

    def completed_keys(self) -> set[str]:
        return {p.stem for p in (self.root / "records").glob("*.json") if not p.stem.endswith(".failed")}

    # ---- coordination -----------------------------------------------------------

    @contextmanager
    def session(self) -> Iterator[None]:
        """Hold the store's shared session lock (on ``locks/``) while working on it, so that
        ``store gc`` (which takes it exclusively) leaves this process's files alone."""
        (self.root / "locks").mkdir(parents=True, exist_ok=True)
        fd = os.open(self.root / "locks", os.O_RDONLY)
        events = self._events
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            if events is None:
                self._events = os.open(self.root / "events.jsonl", os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o644)
            yield
        finally:
            if events is None and self._events is not None:
                os.close(self._events)
            self._events = events
            os.close(fd)  # releases the lock

    def try_lock(self, key: str, *, wait: bool = False) -> int | None:
        """Lock a request key for this process (flock; released by the kernel if the
        process dies). Returns the descriptor to pass to :meth:`unlock`, or None if
        another process holds it and ``wait`` is false. The holder removes the lock file
        when it unlocks; a process that locked a file removed meanwhile tries again."""
        path = self.lock_path(key)
        while True:
            try:
                fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
            except FileNotFoundError:  # no locks/ folder yet
                path.parent.mkdir(parents=True, exist_ok=True)
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            except BlockingIOError:
                os.close(fd)
                return None
            try:
                same = os.stat(path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                return fd
            os.close(fd)  # its holder removed it between our open and our lock

    def lock_path(self, key: str) -> Path:
        return self.root / "locks" / f"{key}.lock"

    def unlock(self, fd: int, key: str | None = None) -> None:
        """Release a lock from :meth:`try_lock`, removing its file first when ``key`` is given."""
        try:
            if key is not None:
                self.lock_path(key).unlink(missing_ok=True)
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
                self.unlock(fd, key)

    def log_event(self, event: dict[str, Any]) -> None:
        """Append one line to events.jsonl (a single O_APPEND write, so lines of processes
        sharing the store never interleave). Within :meth:`session` the file stays open."""
        line = (json.dumps(event) + "\n").encode()
        try:
            if self._events is None:
                self.root.mkdir(parents=True, exist_ok=True)
            fd = self._events if self._events is not None else \
                os.open(self.root / "events.jsonl", os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o644)
            try:
                os.write(fd, line)
            finally:
                if fd != self._events:
                    os.close(fd)
        except OSError as e:
            raise FileFault(self.root / "events.jsonl", "cannot write", e) from e

    def events(self) -> list[dict[str, Any]]:
        path = self.root / "events.jsonl"
        if not path.exists():
            return []
        out = []
        for line in path.read_bytes().splitlines():
            try:
                event = safejson.loads(line)
            except safejson.JsonError:
                continue  # a line cut by a kill mid-write
            if isinstance(event, dict):
                out.append(event)
        return out


def _audio_check(key: str, n_samples: Any, sample_rate: Any, file_sha: str) -> str:
    return hashlib.sha256(f"{key}:{n_samples}:{sample_rate}:{file_sha}".encode()).hexdigest()


def _mismatch(n: int, rate: int, n_samples: int | None, sample_rate: int | None) -> str | None:
    if n_samples is not None and n != int(n_samples):
        return f"holds {n} samples where {int(n_samples)} are expected"
    if sample_rate is not None and rate != int(sample_rate):
        return f"is at {rate} Hz where {int(sample_rate)} Hz is expected"
    return None
