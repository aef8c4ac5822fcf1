"""Speech recognizers behind one protocol (the model adapters of content diagnostics),
and the window rule that cuts an output's audio for them.

Importing the package registers the built-in recognizers (whisper, qwen3-asr); their
packages and weights load only in ``load()``. Transcribing a manifest's outputs is a
workflow (:mod:`simulplay.workflows.transcripts`).
"""

from simulplay.recognizers import qwen, whisper  # noqa: F401  (register themselves)
from simulplay.recognizers.base import (
    RECOGNIZERS,
    Decoded,
    Recognizer,
    RecognizerConfig,
    RecognizerUnavailable,
    Word,
    register_recognizer,
)


def parse_recognizer(text: str, *, source: str = "--recognizer", check: bool = True) -> RecognizerConfig:
    """``whisper``, ``whisper:model=PATH,beam_size=5``, ``qwen3-asr:model=PATH`` … With
    ``check`` the model folder the spec names is checked now."""
    return RECOGNIZERS.parse(text, source=source, check=check)


__all__ = ["RECOGNIZERS", "Decoded", "Recognizer", "RecognizerConfig", "RecognizerUnavailable",
           "Word", "parse_recognizer", "register_recognizer"]
