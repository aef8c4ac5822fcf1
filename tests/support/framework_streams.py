"""Real-shaped update streams for the framework agreement tests.

Each stream is built the way a SentencePiece translator's log becomes a trace: sentences
are cut into pieces (``▁`` starts a word, some pieces are a lone ``▁``, punctuation is a
piece of its own), the pieces are sent in packets about a second apart, and the importer's
own detokenizer (``segments``, ``assemble``) turns the packets into glued updates.
"""

from __future__ import annotations

import numpy as np

from simulplay.traces.importers.detokenize import SPM_SPACE, assemble, segments
from simulplay.traces.model import Stream

SENTENCES = {
    "en": [
        "Dr. Smith measured 3.5 metres of rain last year.", "(Applause)", "Thank you.",
        "The price rose to 2.75 dollars, e.g. for bread.", "Really?",
        "Mr. and Mrs. Brown arrived at 10 a.m. on Monday.",
        'She said: "It works." Then she left.', "We build houses, bridges and roads!", "Why not…",
        "The U.S. economy grew by 1.5 percent.", "(Laughter)", "That is all; thanks.", "10 people came.",
    ],
    "de": [
        "„Das ist z. B. ein Beispiel.“", "(Applaus)", "Dr. Müller sagte, die Temperatur stieg um 1,5 Grad.",
        "Wir bauen Gebäude, Brücken, Straßen.", "Er sagte: „Nein.“ Dann ging er.", "Das kostet 3.50 Euro.",
        "Vielen Dank!", "(Gelächter)", "Ist das wahr?", "Die Stadt, d. h. die Leute, wollen das.",
        "Herr Prof. Weber kommt um 9 Uhr.", "Na ja…", "2020 war es wärmer.",
    ],
    "fr": [
        "« Oui. »", "Le Dr. Martin a mesuré 2,5 mètres.", "C'est-à-dire, par ex. demain.", "Merci beaucoup !",
        "Il a dit : « Non. » Puis il est parti.", "(Applaudissements)", "Pourquoi pas ?", "M. Dupont arrive à 8 h 30.",
        "La ville coûte 3.2 milliards d'euros.", "Voilà.", "15 personnes sont venues.",
    ],
    "zh": ["我们今天讨论城市。", "这很好！", "为什么？", "（掌声）", "气温上升了1.5度。", "谢谢大家。", "对。"],
    "ja": ["日本語の文です。", "はい。", "本当ですか？", "（拍手）", "気温は3.5度上がりました。", "ありがとう。"],
}
SPACED = ("en", "de", "fr")


def pieces(sentence: str, spaced: bool, rng: np.random.Generator) -> list[str]:
    """SentencePiece-like pieces of one sentence."""
    out: list[str] = []
    words = sentence.split(" ") if spaced else [sentence]
    for word in words:
        k, first = 0, True
        while k < len(word):
            size = 1 if not word[k].isalnum() else int(rng.integers(1, 5))
            piece = word[k:k + size]
            if first and (spaced or rng.random() < 0.3):
                if rng.random() < 0.1:
                    out.append(SPM_SPACE)  # a lone ▁
                else:
                    piece = SPM_SPACE + piece
            out.append(piece)
            k += len(word[k:k + size])
            first = False
    return out


def real_shaped_stream(seed: int, language: str, n_sentences: int = 8) -> Stream:
    """A stream of ``n_sentences`` sentences of ``language``, in one-second packets."""
    rng = np.random.default_rng(seed)
    bank = SENTENCES[language]
    chosen = [bank[int(i)] for i in rng.integers(0, len(bank), n_sentences)]
    all_pieces = [p for s in chosen for p in pieces(s, language in SPACED, rng)]
    packets, k = [], 0
    while k < len(all_pieces):
        size = int(rng.integers(0, 8))  # an empty packet makes no update
        packets.append(all_pieces[k:k + size])
        k += size
    times = [i + 1 + float(rng.uniform(0.15, 0.3)) for i in range(len(packets))]
    t, texts, glue = assemble(times, segments(packets, "spm"))
    return Stream(f"{language}-{seed}", "A", float(len(packets) + 2), np.array(t), tuple(texts), np.array(glue, bool))


def real_shaped_streams(per_language: int = 12) -> list[Stream]:
    """``per_language`` streams of every language (English, German, French, Chinese, Japanese)."""
    return [real_shaped_stream(seed, lang, 4 + seed % 9) for lang in SENTENCES for seed in range(per_language)]
