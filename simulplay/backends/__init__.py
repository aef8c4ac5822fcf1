"""Backends: TTS adapters behind one protocol, and the content-addressed audio store."""

from simulplay.backends.base import BACKENDS, Backend, BackendConfig, BackendError, parse_backend, register_backend


def _load_builtin() -> None:
    """Import the built-in backend modules so that they register themselves."""
    from simulplay.backends import piper  # noqa: F401
    from simulplay.backends import served  # noqa: F401  (the http client)
    from simulplay.backends import xtts  # noqa: F401  (imports torch/TTS only when used)


_load_builtin()

__all__ = ["BACKENDS", "Backend", "BackendConfig", "BackendError", "parse_backend", "register_backend"]
