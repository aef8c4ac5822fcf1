"""Helpers for the eSpeak NG tests: German streams, the library's own phonemes of a text,
and a run of one repeated request."""

from __future__ import annotations

import ctypes

from tests.support.factories import stream

# two German translators of one talk: umlauts, ß and „German quotes“ in both
GERMAN_A = ["Guten Morgen,", "liebe Grüße aus Köln.", "Er sagt „Hallo“", "und geht früh nach Hause."]
GERMAN_F = ["Guten Morgen, liebe Grüße", "aus Köln. Er sagt „Hallo“ und geht früh nach Hause."]


def german_streams(talk_id: str = "t1"):
    """Systems A and F of one talk, 6 s of source, German text."""
    return [stream([0.0, 1.0, 2.0, 3.5], GERMAN_A, talk_id=talk_id, system="A", source_s=6.0),
            stream([0.5, 2.5], GERMAN_F, talk_id=talk_id, system="F", source_s=6.0)]


def phonemes(text: str, voice: str) -> str:
    """The IPA eSpeak NG makes of ``text`` under ``voice`` (``espeak_TextToPhonemes``, clause
    by clause): what the library read, independent of any audio. The settings in force
    before are put back."""
    from simulplay.backends.espeak import EspeakSettings, engine

    eng = engine()
    before = eng.current
    eng.apply(EspeakSettings(voice=voice))
    lib = eng.lib
    lib.espeak_TextToPhonemes.restype = ctypes.c_char_p
    lib.espeak_TextToPhonemes.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, ctypes.c_int]
    data = ctypes.create_string_buffer(text.encode("utf-8") + b"\0")
    ptr = ctypes.c_void_p(ctypes.addressof(data))
    out = []
    while ptr.value:
        out.append((lib.espeak_TextToPhonemes(ctypes.byref(ptr), 1, 0x02) or b"").decode("utf-8"))  # UTF-8 in, IPA out
    if before is not None:
        eng.apply(before)
    return " ".join(out)


def mojibake(text: str) -> str:
    """``text``'s UTF-8 bytes read as Latin-1: what a library fed the wrong encoding would see."""
    return text.encode("utf-8").decode("latin-1")


def repeated_request_streams(text: str, n: int, talk_id: str = "t1"):
    """One stream whose ``n`` updates, one second apart, all say ``text`` (under
    ``immediate`` and ``reuse=never``: ``n`` requests of the same text)."""
    return [stream([float(i) for i in range(n)], [text] * n, talk_id=talk_id, system="A", source_s=n + 1.0)]
