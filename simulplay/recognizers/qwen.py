"""Qwen3-ASR and Qwen3-ForcedAligner through the ``qwen-asr`` package (local weights only).

``qwen3-asr:model=PATH`` transcribes with the language forced (the prompt then asks for
text only) and an empty context, greedy decoding on the Transformers backend. It has no
word timestamps of its own: its words carry NaN times unless a forced aligner is given.
A decode whose generated length reaches ``max_new_tokens`` ran into the decoding
capacity. ``--aligner PATH`` (Qwen3-ForcedAligner-0.6B weights) aligns each window's
transcript to the same window's audio and replaces the recognizer's word times; it is
not a second recognizer. Weights come from a local folder; a missing folder is a
one-line error and nothing is downloaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from simulplay.core.extras import MissingExtra, require_extra
from simulplay.core.provenance import cpu_model, folder_sha256, package_version
from simulplay.recognizers.base import (
    SAMPLE_RATE,
    Decoded,
    Recognizer,
    RecognizerConfig,
    RecognizerUnavailable,
    Word,
    language_name,
    register_recognizer,
)

DTYPES = ("float32", "bfloat16", "float16")


def _check_folder(path: str, what: str) -> None:
    if not path:
        raise ValueError(f"{what} needs model=PATH to a local folder of its weights (nothing is downloaded)")
    folder = Path(path)
    if not folder.is_dir():
        raise ValueError(f"{what} model folder {path} does not exist (local weights; nothing is downloaded)")
    if not (folder / "config.json").is_file():
        raise ValueError(f"{what} model folder {path} has no config.json (a Hugging Face model folder)")


def _torch_dtype(name: str):
    import torch

    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[name]


def _load_asr(config: QwenSettings) -> Any:
    """The Qwen3ASRModel, with a counter of generated tokens per decode (``_simulplay_tokens``)."""
    try:
        config.check()
    except ValueError as e:
        raise RecognizerUnavailable(str(e)) from e
    try:
        from qwen_asr import Qwen3ASRModel
    except ImportError as e:
        raise MissingExtra("qwen") from e
    model = Qwen3ASRModel.from_pretrained(config.model, dtype=_torch_dtype(config.dtype), device_map=config.device,
                                          max_inference_batch_size=1, max_new_tokens=config.max_new_tokens,
                                          local_files_only=True)
    model._simulplay_tokens = []
    inner = model.model
    generate = inner.generate

    def counting_generate(*args, **kwargs):
        out = generate(*args, **kwargs)
        n_in = kwargs["input_ids"].shape[1] if "input_ids" in kwargs else args[0].shape[1]
        model._simulplay_tokens.append(int(out.sequences.shape[1] - n_in))
        return out

    inner.generate = counting_generate
    return model


@register_recognizer("qwen3-asr")
@dataclass(frozen=True)
class QwenSettings(RecognizerConfig):
    """Qwen3-ASR settings; ``model`` is a local folder of Qwen3-ASR weights (required)."""

    model: str = ""
    device: str = "cpu"
    dtype: str = "float32"
    max_new_tokens: int = 512

    def __post_init__(self):
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got '{self.dtype}'")
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be ≥ 1, got {self.max_new_tokens}")

    def check(self) -> None:
        """The model folder exists and holds a Hugging Face model; the qwen extra is installed."""
        _check_folder(self.model, "qwen3-asr")
        require_extra("qwen")

    def create(self) -> QwenRecognizer:
        return QwenRecognizer(self)


class QwenRecognizer(Recognizer):
    config: QwenSettings

    def __init__(self, config: QwenSettings):
        super().__init__(config)
        self._model: Any = None

    def load(self) -> None:
        self._model = _load_asr(self.config)
        self.loaded = True

    def check_language(self, language: str) -> None:
        language_name(language)  # the codes of Qwen3-ASR's languages (ValueError otherwise)

    def decode(self, audio: np.ndarray, language: str) -> Decoded:
        if not self.loaded:
            self.load()
        self._model._simulplay_tokens.clear()
        result = self._model.transcribe(audio=(np.asarray(audio, np.float32), SAMPLE_RATE), context="",
                                        language=language_name(language))[0]
        text = result.text.strip()
        tokens = max(self._model._simulplay_tokens, default=-1)
        words = [Word(w) for w in text.split()]
        return Decoded(text=text, words=words, tokens=tokens, exceeded=tokens >= self.config.max_new_tokens)

    def identity(self) -> dict[str, Any]:
        cfg = self.config
        return {"recognizer": "qwen3-asr", "package": f"qwen-asr@{package_version('qwen-asr')}",
                "transformers": package_version("transformers"), "torch": package_version("torch"),
                "model": Path(cfg.model).name, "model_sha256": folder_sha256(cfg.model), "dtype": cfg.dtype,
                "device": cpu_model() if cfg.device == "cpu" else cfg.device, "decoding": "greedy",
                "context": "none", "max_new_tokens": cfg.max_new_tokens}

    def close(self) -> None:
        self._model = None
        self.loaded = False


@dataclass(frozen=True)
class ForcedAligner:
    """Qwen3-ForcedAligner on a local folder: word times for a given transcript."""

    model: str
    device: str = "cpu"
    dtype: str = "float32"

    def __post_init__(self):
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got '{self.dtype}'")

    def check(self) -> None:
        """The model folder exists and holds a Hugging Face model; the qwen extra is installed."""
        _check_folder(self.model, "Qwen3-ForcedAligner")
        require_extra("qwen")

    def load(self) -> Any:
        try:
            self.check()
        except ValueError as e:
            raise RecognizerUnavailable(str(e)) from e
        try:
            from qwen_asr import Qwen3ForcedAligner
        except ImportError as e:
            raise MissingExtra("qwen") from e
        return Qwen3ForcedAligner.from_pretrained(self.model, dtype=_torch_dtype(self.dtype), device_map=self.device,
                                                  local_files_only=True)

    def identity(self) -> dict[str, Any]:
        return {"aligner": "qwen3-forced-aligner", "package": f"qwen-asr@{package_version('qwen-asr')}",
                "model": Path(self.model).name, "model_sha256": folder_sha256(self.model), "dtype": self.dtype,
                "device": self.device}


def align_words(aligner: Any, audio: np.ndarray, text: str, language: str) -> list[Word]:
    """Word times (seconds from the piece's start) of ``text`` in ``audio`` from a loaded aligner."""
    if not text.strip():
        return []
    result = aligner.align(audio=(np.asarray(audio, np.float32), SAMPLE_RATE), text=text,
                           language=language_name(language))[0]
    return [Word(item.text, float(item.start_time), float(item.end_time)) for item in result.items]
