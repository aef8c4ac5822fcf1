"""Which stored samples each replayed part plays, and reading them from the store, checked.

A synthesized manifest names each request's audio: ``audio_key`` (the store's key; empty
for a request without audio), ``n_samples`` and ``sample_rate`` (Hz). Under request
release a part is a whole request and plays samples ``0:n_samples`` of its key. Under
chunk release a part is a chunk, and the chunk table's ``n_samples`` say which samples
are its own: chunk ``k`` of a request plays samples ``Σ_{i<k} n_i : Σ_{i≤k} n_i`` of the
request's audio (chunks in ``chunk`` order; ``replay`` has checked that they add up to the
request's count exactly).

:class:`PartAudio` reads a key once through a ``load_audio`` callback (the store's
:meth:`~simulplay.store.store.AudioStore.load_audio`) and checks what it got against
the manifest: mono, at the manifest's rate, exactly the request's sample count.
Everyone who needs a part's samples — ``render``, the report's audio, the player's
first audible window, the SimulEval export — goes through these two.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from simulplay.core.errors import InputError
from simulplay.core.fields import Checker
from simulplay.manifest.validate import has_samples, output_keys

#: ``audio_key`` → (int16 samples, sample rate in Hz), as ``AudioStore.load_audio``.
LoadAudio = Callable[[str], tuple[np.ndarray, int]]
#: What :func:`part_samples` adds to each part row: the key, the part's samples
#: ``sample_start:sample_stop`` of it, the rate (Hz) and the request's whole count.
PART_SAMPLE_COLUMNS = ("audio_key", "sample_start", "sample_stop", "sample_rate", "request_samples")
AUDIO_COLUMNS = ("audio_key", "n_samples", "sample_rate")


def require_audio(manifest: pd.DataFrame, source: str, what: str) -> None:
    """The manifest has the columns that locate stored audio (``what`` says who needs
    them), and every request with samples names a key."""
    Checker(source, manifest).require_columns(AUDIO_COLUMNS, f"synthesized manifest ({what})")
    check = Checker(source, manifest)
    keys = check.strings("audio_key", allow_empty=True, accepted="the store's audio key of the request")
    check.raise_if_any()
    ok = (manifest["error"] == "").to_numpy() if "error" in manifest else np.ones(len(manifest), bool)
    n = manifest["n_samples"].to_numpy()
    for i in np.flatnonzero(ok & (n > 0) & (np.array(keys, dtype=object) == "")):
        check.add_at(int(i), f"is empty for a request of {n[i]} samples", "audio_key",
                     "the store's audio key of every request with audio")
    check.raise_if_any()


def part_samples(parts: pd.DataFrame, manifest: pd.DataFrame, chunks: pd.DataFrame | None = None, *,
                 source: str = "manifest") -> pd.DataFrame:
    """``parts`` (a replay's part table: output keys, ``seq``, and ``chunk`` under chunk
    release) with :data:`PART_SAMPLE_COLUMNS` added, row for row (module docstring).
    ``chunks`` is the chunk table of a chunk-release replay (it needs ``n_samples``). A
    manifest with sample counts but no ``audio_key`` (hand-written) gets empty keys."""
    if not has_samples(manifest):
        raise InputError.at(source, "has no sample counts", field="n_samples",
                            accepted="a manifest from `simulplay synth` (audio_key, n_samples, sample_rate)")
    keys = output_keys(manifest)
    req = manifest[keys + ["seq", "n_samples", "sample_rate"]].rename(columns={"n_samples": "request_samples"})
    req["audio_key"] = manifest["audio_key"] if "audio_key" in manifest else ""
    if "chunk" not in parts:
        out = parts.merge(req, on=keys + ["seq"], how="left", validate="many_to_one")
        out["sample_start"] = np.zeros(len(out), np.int64)
        out["sample_stop"] = out["request_samples"].to_numpy(np.int64)
    else:
        if chunks is None or "n_samples" not in chunks:
            raise InputError.at(f"{source} (chunk table)", "has no n_samples column: chunk release needs each "
                                "chunk's sample count to cut its request's samples", field="n_samples",
                                accepted="the chunk table `simulplay synth` writes beside the manifest")
        ch = chunks[keys + ["seq", "chunk", "n_samples"]].sort_values(keys + ["seq", "chunk"], kind="stable")
        stop = ch.groupby(keys + ["seq"], sort=False)["n_samples"].cumsum().to_numpy(np.int64)
        ch = ch.assign(sample_stop=stop, sample_start=stop - ch["n_samples"].to_numpy(np.int64))
        out = parts.merge(ch.drop(columns="n_samples"), on=keys + ["seq", "chunk"], how="left",
                          validate="one_to_one")
        out = out.merge(req, on=keys + ["seq"], how="left", validate="many_to_one")
    out["audio_key"] = out["audio_key"].fillna("").astype(str)
    for col in ("sample_start", "sample_stop", "sample_rate", "request_samples"):
        out[col] = out[col].fillna(0).to_numpy(np.int64)
    return out


class PartAudio:
    """Parts' samples from stored audio, each key read once and checked (module docstring).
    ``source`` names the manifest in errors; :meth:`clear` forgets what was read (call it
    between outputs to keep memory to one output's audio)."""

    def __init__(self, load_audio: LoadAudio, source: str = "manifest"):
        self._load = load_audio
        self._source = source
        self._cache: dict[str, np.ndarray] = {}

    def clear(self) -> None:
        """Forget every key read so far."""
        self._cache.clear()

    def samples(self, key: str, request_samples: int, rate: int) -> np.ndarray:
        """All int16 samples of ``key``, which the manifest says holds ``request_samples``
        mono samples at ``rate`` Hz; an InputError names the key when the store disagrees."""
        if request_samples == 0:
            return np.zeros(0, np.int16)
        if key not in self._cache:
            data, got = self._load(key)
            data = np.asarray(data)
            if data.ndim != 1 or len(data) != request_samples:
                raise InputError.at(self._source, f"audio {key} holds {data.shape} samples, the manifest names "
                                    f"{request_samples} mono samples", field="n_samples",
                                    accepted="the store the manifest was synthesized into")
            if int(got) != int(rate):
                raise InputError.at(self._source, f"audio {key} is stored at {got} Hz, the manifest says {rate} Hz",
                                    field="sample_rate", accepted="the store the manifest was synthesized into")
            self._cache[key] = data.astype(np.int16, copy=False)
        return self._cache[key]

    def part(self, row) -> np.ndarray:
        """The samples of one row of :func:`part_samples` (a mapping or a named tuple)."""
        get = row.get if hasattr(row, "get") else lambda c: getattr(row, c)
        whole = self.samples(str(get("audio_key")), int(get("request_samples")), int(get("sample_rate")))
        return whole[int(get("sample_start")):int(get("sample_stop"))]
