"""simulplay: replay simultaneous-translation text streams through TTS and serial playback."""

__version__ = "0.1.0"
