"""Speech recognition of synthesized outputs: recognizers behind one protocol, the
window rule, and the transcripts table that content scoring and word timing read."""

from simulplay.analysis.asr.base import (
    RECOGNIZERS,
    Decoded,
    Recognizer,
    RecognizerConfig,
    RecognizerError,
    RecognizerUnavailable,
    Word,
    parse_recognizer,
    register_recognizer,
)


def _load_builtin() -> None:
    """Import the built-in recognizer modules so that they register themselves."""
    from simulplay.analysis.asr import qwen, whisper  # noqa: F401


_load_builtin()

__all__ = ["RECOGNIZERS", "Decoded", "Recognizer", "RecognizerConfig", "RecognizerError", "RecognizerUnavailable",
           "Word", "parse_recognizer", "register_recognizer"]
