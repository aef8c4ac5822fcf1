"""pipecat's ``SimpleTextAggregator``, the text aggregator of its TTS services.

Reproduces ``pipecat.utils.text.simple_text_aggregator.SimpleTextAggregator`` and
``pipecat.utils.string.match_endofsentence`` of pipecat-ai 1.14.0 (BSD 2-Clause), with
the sentence segmenter they delegate to (``sentencex.segment``, the sentencex package).

In sentence mode the aggregator reads the pushed text character by character. A
sentence-ending mark (``. ! ? ; …`` and those of other scripts) starts a candidate; the
candidate is checked with sentencex at the first following character that is neither
whitespace nor such a mark (``Hello. N`` emits ``Hello.`` and keeps ``N``) and, if that
check finds no boundary, once more when the following word ends (``Dr. Smith`` stays
whole, as does ``3.5``). At the end of the stream what is buffered is sent. In token
mode every push is sent as it comes.

The tests drive the library itself with the same pushes and compare.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from typing import ClassVar

from simulplay.grouping.frameworks.pushes import Pushes, framework_module, kept
from simulplay.grouping.registry import Group, Rule, register_rule
from simulplay.traces.model import Stream

_QUOTED_WORD_END = re.compile(r"(?<!\w)([\"'“‘«‹„‟「『]+)[\w.]+\.$")

SENTENCE_ENDING_PUNCTUATION = frozenset(
    ".!?;…"  # Latin
    "。？！；．｡"  # East Asian
    "।॥"  # Indic
    "؟؛۔؏"  # Arabic script
    "၊။"  # Myanmar
    "។៕"  # Khmer
    "໌"  # Lao
    "།༎"  # Tibetan
    "։՜՞"  # Armenian
    "።፧፨"  # Ethiopic
)
UNAMBIGUOUS = SENTENCE_ENDING_PUNCTUATION - frozenset(".!?;…")

IDLE, AWAITING_CHARACTER, AWAITING_WORD, IN_WORD = range(4)


def language_code(language: str) -> str:
    """The base language code the aggregator hands to sentencex (``en`` when empty or ``auto``)."""
    normalized = language.strip().lower().replace("_", "-").split("-")[0]
    return "en" if normalized in ("", "auto") else normalized


@cache
def sentence_splitter(code: str):
    """sentencex's segments of a text, each sentence ending before its trailing whitespace."""
    segment = framework_module("sentencex", "sentencex", "pipecat").segment

    def tokenize(text: str) -> list[str]:
        sentences, pending = [], ""
        for span in segment(code, text):
            pending += span
            if span.strip():
                sentence = pending.rstrip()
                sentences.append(sentence)
                pending = pending[len(sentence):]
        return sentences

    return tokenize


def end_of_sentence(text: str, code: str) -> int:
    """Where the first sentence of ``text`` ends (0: no sentence end yet)."""
    text = text.rstrip()
    if not text:
        return 0
    split = sentence_splitter(code)
    sentences = split(text)
    if not sentences:
        return 0
    first, checked = sentences[0], text
    if len(sentences) > 1 and (quote := _QUOTED_WORD_END.search(first)):
        # an opening quote before a word ending in a period: ask again without the quote
        start, end = quote.span(1)
        checked = text[:start] + " " * (end - start) + text[end:]
        sentences = split(checked)
        first = sentences[0]
    if len(sentences) == 1 and first == checked:
        if text[-1] in SENTENCE_ENDING_PUNCTUATION:
            return len(text)
        for i, ch in enumerate(text):
            if ch in UNAMBIGUOUS:
                return i + 1
        return 0
    return len(first) if len(sentences) > 1 else 0


class Aggregator:
    """The sentence-mode state machine; ``base`` is where its buffer starts in the joined text."""

    def __init__(self, code: str):
        self.code, self.text, self.state, self.base = code, "", IDLE, 0

    def push(self, text: str) -> list[int]:
        """Read one push; the ends (in the joined text) of the sentences it emits."""
        ends = []
        for ch in text:
            self.text += ch
            punct = ch in SENTENCE_ENDING_PUNCTUATION
            if self._advance(ch, punct):
                marker = end_of_sentence(self.text[:-1] if punct else self.text, self.code)
                if marker:
                    ends.append(self.base + marker)
                    self.text, self.base, self.state = self.text[marker:], self.base + marker, IDLE
            if punct:
                self.state = AWAITING_CHARACTER
        return ends

    def _advance(self, ch: str, punct: bool) -> bool:
        """Move the lookahead on by one character; whether to check for a sentence end now."""
        if self.state == AWAITING_CHARACTER:
            if ch.isspace() or punct:
                return False
            self.state = IN_WORD if ch.isalnum() else AWAITING_WORD
            return True
        if self.state == AWAITING_WORD:
            if ch.isalnum():
                self.state = IN_WORD
            return False
        if self.state == IN_WORD and (ch.isspace() or punct):
            self.state = IDLE
            return True
        return False


@register_rule("pipecat")
@dataclass(frozen=True)
class Pipecat(Rule):
    """pipecat's ``SimpleTextAggregator`` (pipecat-ai 1.14.0): ``mode=sentence`` sends a
    sentence once the text after it confirms the end (sentencex, in ``language``);
    ``mode=token`` sends every push as it comes."""

    cuts_updates: ClassVar[bool] = True

    mode: str = field(default="sentence", metadata={"choices": ("sentence", "token"), "omit_default": True})
    language: str = field(default="en", metadata={"omit_default": True})

    def __post_init__(self):
        if self.mode not in ("sentence", "token"):
            raise ValueError(f"mode must be sentence or token, got {self.mode!r}")

    def group(self, stream: Stream) -> list[Group]:
        """The aggregations pipecat sends, dispatched at the push that produced them."""
        pushes = Pushes(stream)
        if self.mode == "token":
            return kept([pushes.group(s, s + len(t), k, "immediate")
                         for k, (s, t) in enumerate(zip(pushes.starts, pushes.texts)) if t])
        agg = Aggregator(language_code(self.language))
        out: list[Group | None] = []
        start = 0
        for k, text in enumerate(pushes.texts):
            for end in agg.push(text):
                out.append(pushes.group(start, end, k, "sentence"))
                start = end
        if agg.text:
            out.append(pushes.group(start, len(pushes.joined), len(pushes.texts) - 1, "eos"))
        return kept(out)
