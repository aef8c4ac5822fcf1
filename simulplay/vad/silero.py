"""Silero VAD: speech probabilities of a waveform from a model file bundled in a package.

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

Errors name the ``source`` the caller gives (``--vad-model`` for ``simulplay edges``, the
experiment file's key for ``simulplay run``). Probabilities are cached in the audio store
(:mod:`simulplay.vad.cache`).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from simulplay.core.errors import InputError
from simulplay.core.extras import require_extra
from simulplay.core.provenance import package_version, sha256_of_file
from simulplay.core.signature import settings_hash
from simulplay.vad.frames import FRAME, VAD_RATE, resampled_length

VARIANTS = {"onnx": "silero_vad.onnx", "sequence": "silero_vad_16k_sequence.onnx", "jit": "silero_vad.jit"}
RESAMPLE_QUALITY = "HQ"
NEEDS_EXTRA = ("the optional extra 'vad': pip install torch==2.13.0 (the CPU build), then "
               "pip install 'simulplay[vad]'")


@dataclass(frozen=True)
class SileroVad:
    """One bundled Silero VAD model file; loaded on the first inference only."""

    variant: str = "onnx"
    #: where the caller named the model (a flag, an experiment key): errors start with it
    source: str = field(default="--vad-model", compare=False, repr=False)

    def __post_init__(self):
        if self.variant not in VARIANTS:
            raise InputError.at(f"{self.source} '{self.variant}'", "unknown Silero VAD variant",
                                accepted=", ".join(VARIANTS))
        require_extra("vad")  # before any work: a command that makes one runs the VAD

    @cached_property
    def path(self) -> Path:
        """The bundled model file inside the installed ``silero_vad`` package."""
        spec = importlib.util.find_spec("silero_vad")
        if spec is None or not spec.submodule_search_locations:
            raise InputError.at(self.source, "the silero-vad package is not installed", accepted=NEEDS_EXTRA)
        path = Path(list(spec.submodule_search_locations)[0]) / "data" / VARIANTS[self.variant]
        if not path.is_file():
            raise InputError.at(self.source, f"silero-vad {package_version('silero-vad')} has no bundled file "
                                f"{path} for variant '{self.variant}'",
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
            raise InputError.at(self.source, f"cannot import torch ({e})", accepted=NEEDS_EXTRA) from e
        threads = torch.get_num_threads()
        try:  # importing silero_vad sets torch's thread count to 1 for the whole process: undo it
            from silero_vad import load_silero_vad

            if self.variant == "sequence":
                return load_silero_vad(sequence=True)
            return load_silero_vad(onnx=self.variant == "onnx")
        except ImportError as e:
            raise InputError.at(self.source, f"cannot import silero_vad ({e})", accepted=NEEDS_EXTRA) from e
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
