"""Silero VAD speech probabilities of stored waveforms, computed once and cached.

The model is the one bundled inside the ``silero-vad`` package (optional extra ``vad``);
nothing is downloaded. The file is found from the installed package's folder without
importing it, so a sweep whose probabilities are all cached imports neither torch nor
the model. Each waveform is converted from int16 (÷ 32768), resampled to 16 kHz with
soxr (quality HQ) and cut into consecutive 512-sample frames, the last one zero-padded
for the model; the model state is reset per waveform.

Variants (all bundled files): ``onnx`` (default: ``silero_vad.onnx`` through the
package's ``OnnxWrapper``, one call per frame, what ``load_silero_vad(onnx=True)``
loads), ``sequence`` (``silero_vad_16k_sequence.onnx``, the package's block-wise export
of the same network: equal probabilities, one call per 512 frames; in silero-vad 6.2.3)
and ``jit`` (``silero_vad.jit``, TorchScript, one call per frame, what
``load_silero_vad()`` loads; probabilities differ from ONNX by about 1e-5).

Cache: ``STORE/vad/<model id>/<audio key>.npy`` (float32, one probability per frame),
written atomically; ``identity.json`` in the same folder describes the model id (package,
version, file, its sha256, resampler). Another threshold or guard reuses the file.
"""

from __future__ import annotations

import importlib.util
import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from simulplay.analysis.edges import FRAME, VAD_RATE, frame_count, resampled_length
from simulplay.errors import InputError
from simulplay.provenance import package_version, sha256_of_file
from simulplay.signature import settings_hash
from simulplay.tables import atomic_path

VARIANTS = {"onnx": "silero_vad.onnx", "sequence": "silero_vad_16k_sequence.onnx", "jit": "silero_vad.jit"}
RESAMPLE_QUALITY = "HQ"
NEEDS_EXTRA = ("the optional extra 'vad': pip install torch==2.13.0 (the CPU build), then "
               "pip install 'simulplay[vad]'")


@dataclass(frozen=True)
class SileroVad:
    """One bundled Silero VAD model file; loaded on the first inference only."""

    variant: str = "onnx"

    def __post_init__(self):
        if self.variant not in VARIANTS:
            raise InputError.at(f"--vad-model '{self.variant}'", "unknown Silero VAD variant",
                                accepted=", ".join(VARIANTS))

    @cached_property
    def path(self) -> Path:
        """The bundled model file inside the installed ``silero_vad`` package."""
        spec = importlib.util.find_spec("silero_vad")
        if spec is None or not spec.submodule_search_locations:
            raise InputError.at("simulplay edges", "the silero-vad package is not installed", accepted=NEEDS_EXTRA)
        path = Path(list(spec.submodule_search_locations)[0]) / "data" / VARIANTS[self.variant]
        if not path.is_file():
            raise InputError.at(path, f"silero-vad {package_version('silero-vad')} has no bundled file for variant "
                                f"'{self.variant}'", field="--vad-model",
                                accepted="silero-vad 6.2.3 (which has it), or another variant: " + ", ".join(VARIANTS))
        return path

    @cached_property
    def identity(self) -> dict[str, Any]:
        """Everything that shapes the probabilities; its hash names the cache folder."""
        digest = sha256_of_file(self.path)
        return {"package": f"silero-vad@{package_version('silero-vad')}", "variant": self.variant,
                "file": self.path.name, "sha256": digest, "rate_hz": VAD_RATE, "frame": FRAME,
                "last_frame": "zero-padded", "state": "reset per waveform", "input": "int16/32768",
                "resampler": f"soxr@{package_version('soxr')}:{RESAMPLE_QUALITY}"}

    @property
    def model_id(self) -> str:
        return f"silero-{self.variant}-{settings_hash(self.identity)}"

    def label(self) -> str:
        """``silero-vad@V/file/sha256:<12 hex>`` for signatures (the full hash is in the metadata)."""
        ident = self.identity
        return f"{ident['package']}/{ident['file']}/sha256:{ident['sha256'][:12]}"

    @cached_property
    def _model(self):
        try:
            import torch
        except ImportError as e:
            raise InputError.at("simulplay edges", f"cannot import torch ({e})", accepted=NEEDS_EXTRA) from e
        threads = torch.get_num_threads()
        try:  # importing silero_vad sets torch's thread count to 1 for the whole process: undo it
            from silero_vad import load_silero_vad

            if self.variant == "sequence":
                return load_silero_vad(sequence=True)
            return load_silero_vad(onnx=self.variant == "onnx")
        except ImportError as e:
            raise InputError.at("simulplay edges", f"cannot import silero_vad ({e})", accepted=NEEDS_EXTRA) from e
        finally:
            torch.set_num_threads(threads)

    def probabilities(self, samples16: np.ndarray) -> np.ndarray:
        """Speech probability of each 512-sample frame of a 16 kHz float32 waveform."""
        x = np.ascontiguousarray(samples16, dtype=np.float32)
        if len(x) == 0:
            return np.zeros(0, np.float32)
        model = self._model
        if self.variant == "sequence":
            return np.asarray(model.audio_forward(x, VAD_RATE), dtype=np.float32).reshape(-1)
        import torch

        model.reset_states()
        n_frames = -(-len(x) // FRAME)
        padded = np.zeros(n_frames * FRAME, np.float32)
        padded[: len(x)] = x
        frames = torch.from_numpy(padded).reshape(n_frames, FRAME)
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # one 512-sample frame per call: threads only add overhead (as silero sets it)
        try:
            with torch.no_grad():
                return np.array([model(frames[k], VAD_RATE).item() for k in range(n_frames)], dtype=np.float32)
        finally:
            torch.set_num_threads(threads)


def to_vad_input(samples: np.ndarray, rate: int) -> np.ndarray:
    """int16 samples at ``rate`` Hz → float32 at 16 kHz (soxr, quality HQ)."""
    x = np.asarray(samples, dtype=np.float32) / 32768.0
    if rate == VAD_RATE:
        return x
    import soxr

    y = soxr.resample(x, rate, VAD_RATE, quality=RESAMPLE_QUALITY)
    want = resampled_length(len(x), rate)
    if len(y) != want:  # the cache stores no lengths: they must follow from n_samples and rate
        raise RuntimeError(f"soxr made {len(y)} samples from {len(x)} at {rate} Hz; expected {want}")
    return y


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


def speech_probabilities(audio: Iterable[tuple[str, int, int]], store, model: SileroVad, *,
                         progress: bool = True) -> tuple[dict[str, np.ndarray], VadStats]:
    """Probabilities per audio key, from the cache or by inference (then cached).

    ``audio``: ``(audio_key, n_samples, sample_rate)`` triples (repeats and the empty key
    of a silent request are fine); ``store``: the :class:`~simulplay.backends.store.AudioStore`.
    """
    from simulplay.console import SynthProgress

    wanted = {k: (int(n), int(r)) for k, n, r in audio if k}
    cache = ProbabilityCache(store.root, model)
    stats = VadStats()
    out: dict[str, np.ndarray] = {}
    todo = []
    for key, (n, rate) in wanted.items():
        probs = cache.get(key, n, rate)
        if probs is None:
            todo.append(key)
        else:
            out[key] = probs
    stats.cached = len(out)
    with SynthProgress(len(todo), f"silero-vad {model.variant}", enabled=progress and bool(todo)) as bar:
        for key in todo:
            n, rate = wanted[key]
            samples, got_rate = store.load_audio(key)
            if len(samples) != n or got_rate != rate:
                raise InputError.at(store.audio_path(key), f"holds {len(samples)} samples at {got_rate} Hz; the "
                                    f"manifest says {n} at {rate} Hz", field="audio_key",
                                    accepted="the store the manifest was synthesized into")
            t0 = time.perf_counter()
            probs = model.probabilities(to_vad_input(samples, rate))
            spent = time.perf_counter() - t0
            cache.put(key, probs)
            out[key] = probs
            stats.inferred += 1
            stats.keys.append(key)
            stats.audio_s += n / rate
            stats.inference_s += spent
            bar.advance(n / rate, spent)
    return out, stats
