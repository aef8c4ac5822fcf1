"""Optional extras: the packages each one installs that simulplay imports, and the one-line
refusal when they are missing.

A command that needs an extra checks it before any work (:func:`require_extra`): when one
of the extra's modules cannot be found, it stops with :class:`MissingExtra`, printed as the
one line ``simulplay quality needs the quality extra: pip install 'simulplay[quality]'``
(exit code 2). The check finds the modules without importing them (``find_spec``: a few
milliseconds, where importing torch takes seconds). The command line names the running
command with :func:`set_command`; the library's own callers get ``simulplay``.
"""

from __future__ import annotations

import importlib.util
import sys

from simulplay.core.errors import EXIT_INPUT, SimulplayError

#: Extra → the top-level modules of its packages that simulplay imports (pyproject.toml's
#: optional dependencies; cosyvoice's are the ones a CosyVoice checkout's inference code imports).
EXTRAS: dict[str, tuple[str, ...]] = {
    "quality": ("speechmos", "librosa", "onnxruntime"),
    "asr": ("faster_whisper", "jiwer"),
    "vad": ("silero_vad", "torch"),
    "textlatency": ("omnisteval",),
    "ray": ("ray",),
    "xtts": ("TTS", "transformers", "torchaudio", "torch"),
    "qwen": ("qwen_asr", "torch"),
    "cosyvoice": ("hyperpyyaml", "hydra", "omegaconf", "conformer", "diffusers", "lightning", "modelscope",
                  "librosa", "onnxruntime", "whisper", "pyworld", "wetext", "x_transformers", "inflect",
                  "transformers", "torchaudio", "torch"),
}

_COMMAND = ["simulplay"]


def set_command(name: str) -> None:
    """The command being run (``simulplay quality``), named by :class:`MissingExtra`."""
    _COMMAND[0] = name


class MissingExtra(SimulplayError):
    """An optional extra a command needs is not installed; one line, exit code 2."""

    exit_code = EXIT_INPUT

    def __init__(self, extra: str, install: str = ""):
        self.extra = extra
        install = install or f"pip install 'simulplay[{extra}]'"
        super().__init__(f"{_COMMAND[0]} needs the {extra} extra: {install}")


def found(module: str) -> bool:
    """Whether ``module`` (top level) can be imported: already imported, or found on the path.
    A finder that refuses it (ImportError) or a broken spec counts as not found."""
    if module in sys.modules:
        return sys.modules[module] is not None
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def missing(extra: str) -> list[str]:
    """The modules of ``extra`` (:data:`EXTRAS`) that cannot be found."""
    return [m for m in EXTRAS[extra] if not found(m)]


def require_extra(extra: str) -> None:
    """Raise :class:`MissingExtra` unless every module of ``extra`` can be found."""
    if missing(extra):
        raise MissingExtra(extra)


def missing_from(error: ImportError, extra: str) -> bool:
    """Whether a failed import was of a module of ``extra`` (the missing module's top level),
    for imports that can only be tried late (a CosyVoice checkout's own imports)."""
    return (getattr(error, "name", None) or "").split(".")[0] in EXTRAS[extra]
