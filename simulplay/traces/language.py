"""The language of a trace's text against the language a voice speaks.

A voice reads any text with its own language's rules: the default Piper voice is English,
so a German log comes out as English phonemes ("ich" as /ɪk/, "Straße" as /stɹˈeɪs/) and
nothing else says so. Each talk's language is identified from its joined text with
py3langid (a maintained fork of langid.py: a naive Bayes model over byte n-grams of 97
languages, bundled with the package, 4 MB, NumPy only, no download at run time). Single
updates are too short to identify alone ("Danke." reads as Danish), so each update is only
asked which of the two languages at stake, the talk's or the voice's, it is closer to.

A talk is a mismatch when its text is in another language than the voice's and more
than half of its updates are closer to that language; :func:`mismatch_line` says so in one
line with the counts and the voice to give instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from simulplay.traces.model import Stream

#: English names of common language codes (ISO 639-1, as py3langid and voice configs give them).
NAMES = {"ar": "Arabic", "cs": "Czech", "da": "Danish", "de": "German", "el": "Greek", "en": "English",
         "es": "Spanish", "fa": "Persian", "fi": "Finnish", "fr": "French", "he": "Hebrew", "hi": "Hindi",
         "hu": "Hungarian", "it": "Italian", "ja": "Japanese", "ko": "Korean", "nl": "Dutch", "no": "Norwegian",
         "pl": "Polish", "pt": "Portuguese", "ro": "Romanian", "ru": "Russian", "sv": "Swedish", "tr": "Turkish",
         "uk": "Ukrainian", "vi": "Vietnamese", "zh": "Chinese"}
#: Fewer letters than this in a talk's text: too little to identify.
MIN_LETTERS = 20


def language_name(code: str) -> str:
    """``German`` for ``de``; the code itself when it has no name here."""
    return NAMES.get(code, code)


def base_code(tag: str) -> str:
    """The language of a locale or voice tag: ``en`` for ``en_US``, ``en-us``, ``en``; ``zh``
    for ``zh-cn`` and ``cmn``."""
    code = tag.replace("_", "-").split("-")[0].split("+")[0].lower()
    return {"cmn": "zh", "yue": "zh", "nb": "no"}.get(code, code)


@dataclass(frozen=True)
class TalkLanguage:
    """One talk's identified language, its updates with letters, and how many of them are
    closer to that language than to the voice's."""

    talk_id: str
    language: str
    updates: int
    in_language: int


def _letters(text: str) -> int:
    return sum(ch.isalpha() for ch in text)


def talk_languages(streams: Iterable[Stream], voice: str) -> list[TalkLanguage]:
    """Per talk (its streams' text together, talks in order of appearance), the language of
    its text and, for a language other than ``voice``, the updates closer to it than to
    ``voice`` (updates closer to ``voice`` count as its otherwise)."""
    from py3langid.langid import classify, rank

    texts: dict[str, list[str]] = {}
    for s in streams:
        texts.setdefault(s.talk_id, []).extend(s.texts)
    out = []
    for talk, updates in texts.items():
        updates = [u for u in updates if _letters(u)]
        joined = " ".join(updates)
        if _letters(joined) < MIN_LETTERS:
            continue
        language = base_code(classify(joined)[0])
        if language == voice:
            out.append(TalkLanguage(talk, language, len(updates), len(updates)))
            continue
        closer = 0
        for u in updates:
            scores = dict(rank(u))
            closer += scores.get(language, float("-inf")) >= scores.get(voice, float("-inf"))
        out.append(TalkLanguage(talk, language, len(updates), closer))
    return out


def mismatches(talks: Sequence[TalkLanguage], voice: str) -> list[TalkLanguage]:
    """The talks whose text is not in the voice's language (more than half their updates)."""
    return [t for t in talks if t.language != voice and t.in_language * 2 > t.updates]


def mismatch_line(talks: Sequence[TalkLanguage], voice: str, voice_label: str) -> str:
    """One line for the mismatched talks (``""`` when none): the first talk's counts, the
    rest summed, the voice's language and the voices to give instead."""
    bad = mismatches(talks, voice)
    if not bad:
        return ""
    first, rest = bad[0], bad[1:]
    lang = language_name(first.language)
    more = (f" (and {len(rest)} more talk(s): {sum(t.in_language for t in rest):,} of "
            f"{sum(t.updates for t in rest):,} updates)") if rest else ""
    return (f"{first.in_language:,} of {first.updates:,} updates of talk {first.talk_id} are {lang}{more}; voice "
            f"{voice_label} speaks {language_name(voice)}: give --backend espeak:voice={first.language} or "
            f"piper:voice=PATH (a {lang} Piper voice, e.g. from rhasspy/piper-voices)")
