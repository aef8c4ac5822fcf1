"""Backends: TTS adapters behind one protocol, and the content-addressed audio store."""

from simulplay.backends.base import BACKENDS, Backend, BackendConfig, BackendError, parse_backend, register_backend


def _load_builtin() -> None:
    """Import the built-in backend modules so that they register themselves."""
    from simulplay.backends import piper  # noqa: F401


_load_builtin()

__all__ = ["BACKENDS", "Backend", "BackendConfig", "BackendError", "parse_backend", "register_backend"]
