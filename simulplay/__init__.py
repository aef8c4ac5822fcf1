"""simulplay: replay simultaneous-translation text streams through TTS and serial playback.

The package's attributes are its Python API (:mod:`simulplay.api`), loaded on first use so
that ``import simulplay.traces`` and the command line do not pay for them.
"""

from simulplay.version import __version__

__all__ = ["__version__"]
