"""Backends: TTS adapters behind one protocol, and the content-addressed audio store."""

from simulplay.backends.base import BACKENDS, Backend, BackendConfig, BackendError, parse_backend, register_backend


def _load_builtin() -> None:
    """Import the built-in backend modules so that they register themselves."""
    from simulplay.backends import (
        cosyvoice,  # noqa: F401  (imports the checkout only when used)
        piper,  # noqa: F401
        served,  # noqa: F401  (the http client)
        xtts,  # noqa: F401  (imports torch/TTS only when used)
    )


_load_builtin()

__all__ = ["BACKENDS", "Backend", "BackendConfig", "BackendError", "parse_backend", "register_backend"]
