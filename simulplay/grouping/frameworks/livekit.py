"""LiveKit Agents' streaming sentence tokenizer, as ``tts.StreamAdapter`` feeds it.

Reproduces ``livekit.agents.tokenize.blingfire.SentenceTokenizer(retain_format=True)``
and its ``BufferedSentenceStream`` of livekit-agents 1.8.9 (Apache-2.0), the tokenizer
``StreamAdapter`` builds by default, with the sentence splitter it delegates to
(``livekit.blingfire.text_to_sentences_with_offsets``, the livekit-blingfire package):

* An empty push is ignored; text is buffered until the buffer holds
  ``stream_context_len`` characters, then split into sentences after every push.
* Sentences shorter than ``min_sentence_len`` characters (after whitespace with a
  line break becomes one space, edges stripped) are merged into the next one. A
  sentence is emitted only once another one follows it in the buffer: the buffer's
  first sentence while there are at least two.
* At the end of the stream the whole buffer is emitted as one token.

The tests drive the library itself with the same pushes and compare.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from simulplay.grouping.frameworks.pushes import Pushes, framework_module, kept
from simulplay.grouping.registry import Group, Rule, register_rule
from simulplay.traces.model import Stream

# a danda, plus any closing quotes/brackets it ends, followed by whitespace (BlingFire
# does not end a sentence at a danda)
_DANDA_BOUNDARY_RE = re.compile(r"[।॥][\"'”’»)]*(?=\s)")


def split_sentences(text: str, min_sentence_len: int) -> list[tuple[int, int]]:
    """The sentences of ``text`` as (start, end) offsets, with formatting retained: the
    ``_split_sentences(…, retain_format=True)`` of the library."""
    if not text or not text.strip():
        return []
    blingfire = framework_module("livekit.blingfire", "livekit-blingfire", "livekit")
    _, offsets = blingfire.text_to_sentences_with_offsets(text)
    ends = sorted({end for _, end in offsets} | {m.end() for m in _DANDA_BOUNDARY_RE.finditer(text)})
    sentences: list[tuple[int, int]] = []
    start = 0
    for end in ends:
        sentence = re.sub(r"\s*\n+\s*", " ", text[start:end]).strip()
        if not sentence or len(sentence) < min_sentence_len:
            continue
        sentences.append((start, end))
        start = end
    if start < len(text):
        sentences.append((start, len(text)))
    return sentences


@register_rule("livekit")
@dataclass(frozen=True)
class LiveKit(Rule):
    """LiveKit Agents' BlingFire sentence tokenizer in streaming mode (livekit-agents 1.8.9):
    a sentence of at least ``min_sentence_len`` characters is sent once the next one has
    started; nothing is split before ``stream_context_len`` characters are buffered."""

    cuts_updates: ClassVar[bool] = True

    min_sentence_len: int = 20
    stream_context_len: int = 10

    def __post_init__(self):
        for name in ("min_sentence_len", "stream_context_len"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be ≥ 0, got {getattr(self, name)}")

    def group(self, stream: Stream) -> list[Group]:
        """The sentences the tokenizer emits, dispatched at the push that emitted them."""
        pushes = Pushes(stream)
        return kept([pushes.group(a, b, k, trigger)
                     for a, b, k, trigger in sentence_tokens(pushes, self.min_sentence_len, self.stream_context_len)])


def sentence_tokens(pushes: Pushes, min_sentence_len: int, stream_context_len: int) -> list[tuple[int, int, int, str]]:
    """The tokens the streaming tokenizer emits, as ``(start, end, push, trigger)``: characters
    ``start:end`` of the joined text (the token as the library gives it, its whitespace
    retained), emitted during push ``push`` (the last push for the end of the stream)."""
    out = []
    buf, base = "", 0  # the tokenizer's input buffer, and where it starts in the joined text
    for k, text in enumerate(pushes.texts):
        if not text:
            continue
        buf += text
        if len(buf) < stream_context_len:
            continue
        while len(sentences := split_sentences(buf, min_sentence_len)) > 1:
            end = sentences[0][1]
            out.append((base, base + end, k, "sentence"))
            buf, base = buf[end:], base + end
    if buf and split_sentences(buf, min_sentence_len):
        out.append((base, base + len(buf), len(pushes.texts) - 1, "eos"))
    return out
