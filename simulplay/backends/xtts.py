"""XTTS-v2 through coqui-tts (the maintained fork; import name ``TTS``), optional extra ``xtts``.

The model is loaded from a local checkpoint folder (``config.json``, ``model.pth``,
``vocab.json``, ``speakers_xtts.pth``); simulplay never downloads weights. Each request
calls ``Xtts.inference`` directly — the high-level ``TTS.api`` appends 10,000 zero
samples after each sentence, which would inflate measured durations — with every
setting explicit (docs/backends.md#xtts-v2): speaker "Ana Florence" (any stock speaker, or a cloned voice
from ``speaker_wav``), temperature 0.75, length penalty 1.0, repetition penalty 10,
top-k 50, top-p 0.85, 1 beam, sampling on, speed 1.0, internal sentence splitting off.
XTTS has no seed argument, so ``torch``, ``random`` and ``numpy`` are seeded before
every request: the same seed reproduces the samples, and identical requests are reused
across conditions by default (``reuse=always``).

Device ``cuda`` when available, else ``cpu`` (recorded in the identity). On a GPU the
request's clock stops only after ``torch.cuda.synchronize``, so service times are real.
The external splitter keeps each request within the language's character limit (the
table in XTTS's tokenizer; 253 for German) and below the model's text-token limit
(``gpt_max_text_tokens``, 402), counted with XTTS's own tokenizer.

Audio is the model's float waveform at 24,000 Hz clipped to [-1, 1] and scaled by 32,767
to int16 (no loudness normalization); one chunk per request. The heavy imports (torch,
TTS) happen in :meth:`XttsBackend.load` and the methods that need them, never at import.
"""

from __future__ import annotations

import json
import logging
import random
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from simulplay.backends.base import Backend, BackendConfig, BackendError, register_backend
from simulplay.backends.process_state import ProcessState
from simulplay.core.errors import InputError
from simulplay.core.extras import require_extra
from simulplay.core.provenance import cpu_model, file_sha256, package_version
from simulplay.grouping import Splitter

MODEL_FILES = ("config.json", "model.pth", "vocab.json", "speakers_xtts.pth")
WEIGHTS_HINT = ("an XTTS-v2 checkpoint folder holds config.json, model.pth, vocab.json and speakers_xtts.pth; "
                "download them once from the coqui/XTTS-v2 model repository (simulplay never downloads weights)")
DEVICES = ("auto", "cpu", "cuda")


@register_backend("xtts")
@dataclass(frozen=True)
class XttsSettings(BackendConfig):
    """XTTS-v2 settings (defaults: docs/backends.md#xtts-v2). ``model_dir``: the local checkpoint folder;
    ``speaker``: a stock speaker of ``speakers_xtts.pth``; ``speaker_wav``: a reference
    recording to clone instead (then ``speaker`` is ignored); ``device``: auto, cpu, cuda
    or cuda:N; ``threads``: torch intra-op threads (0: torch's default)."""

    path_settings = ("model_dir", "speaker_wav")

    model_dir: str = ""
    speaker: str = "Ana Florence"
    speaker_wav: str = ""
    language: str = "de"
    temperature: float = 0.75
    length_penalty: float = 1.0
    repetition_penalty: float = 10.0
    top_k: int = 50
    top_p: float = 0.85
    num_beams: int = 1
    do_sample: bool = True
    speed: float = 1.0
    seed: int = 5242
    device: str = "auto"
    threads: int = 0
    reuse: str = ""
    seed_reproducible = True
    typical_sample_rate = 24_000  # XTTS-v2 speaks at 24 kHz

    def __post_init__(self):
        if not self.model_dir:
            raise ValueError(f"model_dir is required ({WEIGHTS_HINT})")
        if not self.speaker_wav and not self.speaker:
            raise ValueError("give a stock speaker or a speaker_wav to clone")
        if self.device.split(":")[0] not in DEVICES:
            raise ValueError(f"device must be auto, cpu, cuda or cuda:N, got '{self.device}'")
        if self.threads < 0 or self.num_beams < 1 or self.top_k < 0 or not 0 < self.top_p <= 1 or self.speed <= 0:
            raise ValueError("threads ≥ 0, num_beams ≥ 1, top_k ≥ 0, 0 < top_p ≤ 1 and speed > 0 are required")
        self.reuse_policy()

    def check(self) -> None:
        """The checkpoint folder holds the model files and knows the language; the cloned
        voice's recording exists (and the xtts extra is installed)."""
        require_extra("xtts")
        folder = Path(self.model_dir)
        if not folder.is_dir():
            raise ValueError(f"model_dir {self.model_dir} is not a folder ({WEIGHTS_HINT})")
        for name in MODEL_FILES:
            if not (folder / name).is_file():
                raise ValueError(f"model_dir {self.model_dir} has no {name} ({WEIGHTS_HINT})")
        if self.speaker_wav and not Path(self.speaker_wav).is_file():
            raise ValueError(f"speaker_wav {self.speaker_wav} does not exist (a reference recording to clone)")
        languages = self.model_config().get("languages") or []
        if self.language not in languages:
            raise ValueError(f"language '{self.language}' is not one of the model's languages "
                             f"({', '.join(languages)})")

    def model_config(self) -> dict[str, Any]:
        """The checkpoint's ``config.json`` as a dict."""
        path = Path(self.model_dir) / "config.json"
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise ValueError(f"{path} is not a readable XTTS config.json ({e})") from e

    def voice_language(self) -> tuple[str, str] | None:
        """The ``language`` setting (``de``; ``zh`` for ``zh-cn``) and ``xtts``."""
        from simulplay.traces.language import base_code

        return (base_code(self.language), f"xtts:language={self.language}") if self.language else None

    def create(self) -> XttsBackend:
        return XttsBackend(self)


@dataclass(frozen=True)
class TokenLimitedSplitter(Splitter):
    """A character splitter that also keeps each piece at or below ``max_tokens`` tokens."""

    max_tokens: int = 0
    count: Callable[[str], int] = field(default=len, compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {"splitter": f"max-chars={self.limit},max-xtts-tokens={self.max_tokens}"}


class XttsBackend(Backend):
    config: XttsSettings

    def __init__(self, config: XttsSettings):
        super().__init__(config)
        self.model = None
        self.latents = None
        self.load_count = 0
        self._state: ProcessState | None = None

    @cached_property
    def _model_args(self) -> dict[str, Any]:
        return self.config.model_config().get("model_args", {})

    @cached_property
    def sample_rate(self) -> int:  # type: ignore[override]  # Hz, from the checkpoint's config.json
        return int(self._model_args.get("output_sample_rate", 24_000))

    @cached_property
    def max_text_tokens(self) -> int:
        """The model refuses ``tokens >= gpt_max_text_tokens`` (402 for XTTS-v2)."""
        return int(self._model_args.get("gpt_max_text_tokens", 402))

    # ---- text ------------------------------------------------------------------

    @cached_property
    def tokenizer(self):
        """XTTS's own tokenizer (``VoiceBpeTokenizer``) on the checkpoint's vocab.json."""
        if self.model is not None:
            return self.model.tokenizer
        from TTS.tts.layers.xtts.tokenizer import VoiceBpeTokenizer

        return VoiceBpeTokenizer(vocab_file=str(Path(self.config.model_dir) / "vocab.json"))

    def char_limit(self) -> int:
        """The language's character limit from XTTS's tokenizer table (250 if not listed)."""
        return int(self.tokenizer.char_limits.get(self.config.language.split("-")[0], 250))

    def count_tokens(self, text: str) -> int:
        """Text tokens the model receives for ``text`` (``Xtts.inference`` strips and lowercases)."""
        with _quiet_tokenizer():
            return len(self.tokenizer.encode(text.strip().lower(), lang=self.config.language))

    def splitter(self) -> Splitter:
        limit, max_tokens = self.char_limit(), self.max_text_tokens - 1

        def length(piece: str) -> int:  # over the token limit counts as over the character limit
            return len(piece) if self.count_tokens(piece) <= max_tokens else limit + 1

        return TokenLimitedSplitter(limit, length=length, max_tokens=max_tokens, count=self.count_tokens)

    # ---- model -----------------------------------------------------------------

    @cached_property
    def device(self) -> str:
        import torch

        if self.config.device == "auto":
            return "cuda" if torch.cuda.is_available() else "cpu"
        if self.config.device.startswith("cuda") and not torch.cuda.is_available():
            raise InputError.at("backend xtts", f"device '{self.config.device}' is not available (no CUDA)",
                                field="device", accepted="auto or cpu on this machine")
        return self.config.device

    def load(self) -> None:
        if self.loaded:
            return
        self.check_files()
        import torch
        from TTS.tts.configs.xtts_config import XttsConfig
        from TTS.tts.models.xtts import Xtts

        c = self.config
        self._state = self._state or ProcessState.save(torch)  # restored by close()
        if c.threads:
            torch.set_num_threads(c.threads)
        cfg = XttsConfig()
        cfg.load_json(str(Path(c.model_dir) / "config.json"))
        model = Xtts(cfg)
        # coqui-tts rewrites a legacy checkpoint in place on first load; read it without writing
        model._load_checkpoint = types.MethodType(_read_checkpoint, model)
        model.load_checkpoint(cfg, checkpoint_dir=c.model_dir, eval=True, use_deepspeed=False)
        model.to(self.device)
        self.model = model
        self.latents = self._voice(model)
        self.load_count += 1
        self.loaded = True

    def _voice(self, model) -> tuple[Any, Any]:
        """GPT conditioning latents and speaker embedding of the stock or cloned voice."""
        c = self.config
        if c.speaker_wav:
            return clone_voice(model, Path(c.speaker_wav))
        speakers = model.speaker_manager.speakers if model.speaker_manager else {}
        if c.speaker not in speakers:
            raise InputError.at(Path(c.model_dir) / "speakers_xtts.pth", f"has no speaker '{c.speaker}'",
                                field="speaker", accepted=", ".join(sorted(speakers)) or "a speaker_wav to clone")
        voice = speakers[c.speaker]
        return voice["gpt_cond_latent"], voice["speaker_embedding"]

    def reset_seed(self) -> None:
        """XTTS has no seed argument: seed every generator it may draw from."""
        import torch

        torch.manual_seed(self.config.seed)  # seeds CUDA generators too
        random.seed(self.config.seed)
        np.random.seed(self.config.seed)

    def stream(self, text: str) -> Iterator[np.ndarray]:
        """One int16 chunk per request: token guard, seed reset, inference, transfer."""
        if not text.strip():
            return
        n = self.count_tokens(text)
        if n >= self.max_text_tokens:
            raise BackendError(f"request has {n} XTTS text tokens; the model accepts fewer than "
                               f"{self.max_text_tokens} (the xtts backend's splitter keeps requests below it)")
        import torch

        c = self.config
        self.reset_seed()
        out = self.model.inference(
            text, c.language, self.latents[0], self.latents[1], temperature=c.temperature,
            length_penalty=c.length_penalty, repetition_penalty=c.repetition_penalty, top_k=c.top_k,
            top_p=c.top_p, do_sample=c.do_sample, num_beams=c.num_beams, speed=c.speed,
            enable_text_splitting=False)
        if self.device.startswith("cuda"):
            torch.cuda.synchronize()
        yield float_to_int16(np.asarray(out["wav"]))

    def close(self) -> None:
        """Free the model; torch's thread count and the generators seeded per request are
        put back as they were before :meth:`load`."""
        if self.model is not None and self.device.startswith("cuda"):
            import torch

            self.model = None
            torch.cuda.empty_cache()
        self.model = None
        self.loaded = False
        if self._state is not None:
            self._state.restore()
            self._state = None

    # ---- identity --------------------------------------------------------------

    def voice_id(self) -> str:
        return f"clone:{Path(self.config.speaker_wav).stem}" if self.config.speaker_wav else self.config.speaker

    def label(self) -> str:
        return f"xtts:{self.voice_id()}"

    def device_name(self) -> str:
        import torch

        if self.device.startswith("cuda"):
            return f"{self.device}:{torch.cuda.get_device_name(torch.device(self.device))}"
        return f"cpu:{cpu_model()}"

    def identity(self) -> dict[str, Any]:
        import torch

        c = self.config
        folder = Path(c.model_dir)
        ident = {
            "package": f"coqui-tts@{package_version('coqui-tts')}",
            "runtime": f"torch@{torch.__version__},transformers@{package_version('transformers')}",
            "voice": self.voice_id(),
            "model_sha256": {name: file_sha256(folder / name) for name in MODEL_FILES},
            "settings": {k: v for k, v in c.settings().items() if k not in ("model_dir", "reuse", "seed")},
            "seed": c.seed,
            "device": self.device_name(),
            "threads": f"torch intra-op={c.threads or torch.get_num_threads()}",
            "sample_rate": self.sample_rate,
        }
        if c.speaker_wav:
            ident["voice_sha256"] = file_sha256(c.speaker_wav)
            ident["clone_settings"] = clone_settings(c.model_config())
        return ident


# ---- helpers -------------------------------------------------------------------


def float_to_int16(wav: np.ndarray) -> np.ndarray:
    """Float samples in [-1, 1] (clipped) to int16 by × 32,767 and rounding; no normalization."""
    return np.round(np.clip(wav.astype(np.float64).reshape(-1), -1.0, 1.0) * 32767).astype(np.int16)


def _read_checkpoint(self, model_path: Path) -> dict:
    """``Xtts._load_checkpoint`` without coqui's in-place rewrite of legacy checkpoints."""
    import pickle

    import torch
    from TTS.tts.models import xtts as xtts_module

    try:
        checkpoint = torch.load(model_path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError:  # a checkpoint that pickles XttsConfig (the published one)
        with xtts_module._legacy_safe_globals():
            checkpoint = torch.load(model_path, map_location="cpu", weights_only=True)
    return checkpoint["model"]


def clone_settings(model_config: dict[str, Any]) -> dict[str, Any]:
    """The checkpoint's voice-cloning settings (seconds), as ``Xtts.synthesize`` uses them."""
    return {"gpt_cond_len": model_config.get("gpt_cond_len", 30),
            "gpt_cond_chunk_len": model_config.get("gpt_cond_chunk_len", 6),
            "max_ref_len": model_config.get("max_ref_len", 30),
            "sound_norm_refs": model_config.get("sound_norm_refs", False)}


def clone_voice(model, wav: Path) -> tuple[Any, Any]:
    """Latents of a reference recording, as ``Xtts.get_conditioning_latents`` computes them,
    but read with soundfile (torchaudio.load needs torchcodec's FFmpeg libraries)."""
    import soundfile as sf
    import torch
    import torchaudio

    s = clone_settings(model.config.to_dict())
    data, rate = sf.read(wav, dtype="float32", always_2d=True)
    audio = torch.from_numpy(data.mean(axis=1))[None, :]
    load_sr = 22_050
    if rate != load_sr:
        audio = torchaudio.functional.resample(audio, rate, load_sr)
    audio = audio.clip(-1, 1)[:, : load_sr * s["max_ref_len"]].to(model.device)
    if s["sound_norm_refs"]:
        audio = (audio / torch.abs(audio).max()) * 0.75
    embedding = model.get_speaker_embedding(audio, load_sr)
    latents = model.get_gpt_cond_latents(audio, load_sr, length=s["gpt_cond_len"],
                                         chunk_length=s["gpt_cond_chunk_len"])
    return latents, embedding


@contextmanager
def _quiet_tokenizer():
    """XTTS's tokenizer warns about every text over the character limit; the splitter
    measures such texts on purpose while it searches for a cut."""
    log = logging.getLogger("TTS.tts.layers.xtts.tokenizer")
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(level)
