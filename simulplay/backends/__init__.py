"""Backends: TTS adapters behind one protocol (request, session and served backends).

Importing the package registers the built-in backends (piper, espeak, xtts, cosyvoice, http);
their heavy imports (onnxruntime, torch, TTS, the CosyVoice checkout) happen only when a
backend loads.
"""

from typing import Any

from simulplay.backends import (
    cosyvoice,  # noqa: F401  (imports the checkout only when used)
    espeak,  # noqa: F401  (loads libespeak-ng only when used)
    http_client,  # noqa: F401  (the http: backend)
    piper,  # noqa: F401
    xtts,  # noqa: F401  (imports torch/TTS only when used)
)
from simulplay.backends.base import BACKENDS, REUSE_POLICIES, Backend, BackendConfig, BackendError, register_backend
from simulplay.core.errors import InputError


def parse_backend(text: str, *, source: str = "--backend", check: bool = True) -> BackendConfig:
    """``piper``, ``piper:voice=PATH,intra_op_threads=2``, ``xtts:model_dir=PATH`` … With
    ``check`` (the default) the files and folders the spec names are checked now, so a bad
    path stops a command before any work; errors name ``source`` and the spec."""
    return BACKENDS.parse(text, source=source, check=check)


def parse_backend_with_reuse(text: str, reuse: str | None, *, source: str = "--backend",
                             reuse_source: str = "--reuse") -> BackendConfig:
    """The config of the spec ``text`` with ``reuse`` (never | same-realization | always;
    ``None``: the backend's default) as its ``reuse`` setting. ``reuse`` is checked first,
    so that a bad value names ``reuse_source`` rather than the backend spec."""
    if reuse is None:
        return parse_backend(text, source=source)
    if reuse not in REUSE_POLICIES:
        raise InputError.at(f"{reuse_source} '{reuse}'", "unknown reuse policy", accepted=" | ".join(REUSE_POLICIES))
    return parse_backend(f"{text}{',' if ':' in text else ':'}reuse={reuse}", source=source)


def backend_from_dict(data: dict[str, Any], *, source: str = "backend config") -> BackendConfig:
    """Rebuild a config from its ``to_dict()`` (files are checked only when it loads)."""
    return BACKENDS.from_dict(data, key="backend", source=source)


__all__ = ["BACKENDS", "Backend", "BackendConfig", "BackendError", "backend_from_dict", "parse_backend",
           "parse_backend_with_reuse", "register_backend"]
