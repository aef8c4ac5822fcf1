"""Backends: TTS adapters behind one protocol (request, session and served backends).

Importing the package registers the built-in backends (piper, xtts, cosyvoice, http);
their heavy imports (onnxruntime, torch, TTS, the CosyVoice checkout) happen only when a
backend loads.
"""

from typing import Any

from simulplay.backends import (
    cosyvoice,  # noqa: F401  (imports the checkout only when used)
    piper,  # noqa: F401
    served,  # noqa: F401  (the http client)
    xtts,  # noqa: F401  (imports torch/TTS only when used)
)
from simulplay.backends.base import BACKENDS, Backend, BackendConfig, BackendError, register_backend


def parse_backend(text: str, *, source: str = "--backend", check: bool = True) -> BackendConfig:
    """``piper``, ``piper:voice=PATH,intra_op_threads=2``, ``xtts:model_dir=PATH`` … With
    ``check`` (the default) the files and folders the spec names are checked now, so a bad
    path stops a command before any work; errors name ``source`` and the spec."""
    return BACKENDS.parse(text, source=source, check=check)


def backend_from_dict(data: dict[str, Any], *, source: str = "backend config") -> BackendConfig:
    """Rebuild a config from its ``to_dict()`` (files are checked only when it loads)."""
    return BACKENDS.from_dict(data, key="backend", source=source)


__all__ = ["BACKENDS", "Backend", "BackendConfig", "BackendError", "backend_from_dict", "parse_backend",
           "register_backend"]
