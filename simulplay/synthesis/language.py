"""The text's language against the voice's, checked before synthesis
(:mod:`simulplay.traces.language`): a mismatch is one warning line with counts, and the
check's findings go into the manifest's signature (on a mismatch) and ``run.json``."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from simulplay.backends.base import BackendConfig
from simulplay.core.errors import SimulplayWarning
from simulplay.traces.language import mismatch_line, mismatches, talk_languages
from simulplay.traces.model import Stream


def voice_check(streams: Sequence[Stream], config: BackendConfig) -> dict[str, Any]:
    """Compare each talk's language with the voice's (warning once on a mismatch) and return
    the record: ``voice``, ``voice_language``, per talk its ``language``, ``updates`` and
    ``in_language``, and ``mismatched`` talks; ``{}`` when the voice's language is unknown."""
    voice = config.voice_language()
    if voice is None or not streams:
        return {}
    code, label = voice
    talks = talk_languages(streams, code)
    if line := mismatch_line(talks, code, label):
        warnings.warn(line, SimulplayWarning, stacklevel=3)
    return {"voice": label, "voice_language": code,
            "talks": {t.talk_id: {"language": t.language, "updates": t.updates, "in_language": t.in_language}
                      for t in talks},
            "mismatched": [t.talk_id for t in mismatches(talks, code)]}


def signature_fields(record: dict[str, Any]) -> dict[str, Any]:
    """What the signature records of a check: on a mismatch, the text's language(s) and the
    voice's (``text_language:de``, ``voice_language:en``); nothing otherwise."""
    if not record.get("mismatched"):
        return {}
    langs = sorted({record["talks"][t]["language"] for t in record["mismatched"]})
    return {"text_language": ",".join(langs), "voice_language": record["voice_language"]}
