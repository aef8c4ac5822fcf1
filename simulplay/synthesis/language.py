"""The text's language against the voice's, checked before synthesis
(:mod:`simulplay.traces.language`): a mismatch is one warning line with counts, and the
check's findings go into the manifest's signature (on a mismatch) and ``run.json``."""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Sequence
from dataclasses import asdict
from importlib.metadata import version
from typing import TYPE_CHECKING, Any

from simulplay.backends.base import BackendConfig
from simulplay.core.errors import SimulplayWarning
from simulplay.traces.language import MIN_LETTERS, TalkLanguage, mismatch_line, mismatches, talk_languages
from simulplay.traces.model import Stream

if TYPE_CHECKING:
    from simulplay.store.store import AudioStore


def voice_check(streams: Sequence[Stream], config: BackendConfig, store: AudioStore | None = None) -> dict[str, Any]:
    """Compare each talk's language with the voice's (warning once on a mismatch) and return
    the record: ``voice``, ``voice_language``, per talk its ``language``, ``updates`` and
    ``in_language``, and ``mismatched`` talks; ``{}`` when the voice's language is unknown.
    With ``store``, the findings are kept there (:func:`identified`)."""
    voice = config.voice_language()
    if voice is None or not streams:
        return {}
    code, label = voice
    talks = identified(streams, code, store)
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


def identified(streams: Sequence[Stream], voice: str, store: AudioStore | None) -> list[TalkLanguage]:
    """:func:`~simulplay.traces.language.talk_languages`, kept in the audio store under a hash of
    every stream's talk and texts, the voice's language and py3langid's version: loading the
    identifier's 4 MB model takes most of a second, which a rerun on the same texts skips."""
    if store is None:
        return talk_languages(streams, voice)
    what = [voice, version("py3langid"), MIN_LETTERS, [[s.talk_id, list(s.texts)] for s in streams]]
    key = hashlib.sha256(json.dumps(what, ensure_ascii=False).encode("utf-8")).hexdigest()
    kept = store.get_language(key)
    if kept is not None:
        try:
            return [TalkLanguage(**t) for t in kept]
        except TypeError:  # written by another version of this check: identify again
            pass
    talks = talk_languages(streams, voice)
    store.put_language(key, [asdict(t) for t in talks])
    return talks
