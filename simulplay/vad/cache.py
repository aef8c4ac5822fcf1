"""What a VAD sweep keeps: speech probabilities cached in the audio store, and its counts.

Cache: ``STORE/vad/<model id>/<audio key>.npy`` (float32, one probability per frame),
written atomically; ``identity.json`` in the same folder describes the model id (package,
version, file, its sha256, resampler). Another threshold or guard reuses the file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from simulplay.core.atomic import atomic_path
from simulplay.core.errors import InputError
from simulplay.vad.frames import frame_count
from simulplay.vad.silero import SileroVad


@dataclass
class VadStats:
    """What a sweep did: waveforms inferred (and their seconds) and read from the cache."""

    inferred: int = 0
    cached: int = 0
    audio_s: float = 0.0
    inference_s: float = 0.0
    keys: list[str] = field(default_factory=list)


class ProbabilityCache:
    """``STORE/vad/<model id>/<audio key>.npy``: float32 probabilities, written atomically."""

    def __init__(self, store_root: str | Path, model: SileroVad):
        self.model = model
        self.folder = Path(store_root) / "vad" / model.model_id

    def path(self, key: str) -> Path:
        return self.folder / f"{key}.npy"

    def get(self, key: str, n_samples: int, rate: int) -> np.ndarray | None:
        path = self.path(key)
        if not path.exists():
            return None
        try:
            probs = np.load(path, allow_pickle=False)
        except (ValueError, OSError) as e:
            raise InputError.at(path, f"unreadable cached probabilities ({e})",
                                accepted="a file written by `simulplay edges` (delete it to recompute)") from e
        want = frame_count(n_samples, rate)
        if probs.ndim != 1 or len(probs) != want:
            raise InputError.at(path, f"holds {probs.size} probabilities, {n_samples} samples at {rate} Hz "
                                f"need {want}", accepted="the cache of this audio key (delete it to recompute)")
        return probs

    def put(self, key: str, probs: np.ndarray) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        ident = self.folder / "identity.json"
        if not ident.exists():
            with atomic_path(ident) as tmp:
                tmp.write_text(json.dumps(self.model.identity, indent=1), encoding="utf-8")
        with atomic_path(self.path(key)) as tmp, open(tmp, "wb") as fh:
            np.save(fh, np.asarray(probs, dtype=np.float32), allow_pickle=False)
