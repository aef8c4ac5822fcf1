"""RealtimeTTS's text side: the sentences ``TextToAudioStream.play_async`` synthesizes.

RealtimeTTS 0.8.10 (MIT) reads the fed text character by character and hands it to
``stream2sentence`` (1.1.0, MIT), which yields a fast first fragment and then sentences; with
``buffer_threshold_seconds = 0`` (its default) each is synthesized as it comes. This rule
runs stream2sentence's own ``SentenceSplitter`` (the ``frameworks`` extra) with the settings
``play_async`` passes by default, one character at a time, and finds each sentence it yields
in the stream's joined text (stream2sentence strips edge whitespace and, as RealtimeTTS asks,
removes links and emoji, so a sentence is located by its other characters in order).

RealtimeTTS's own default tokenizer, ``nltk+rule-based``, needs NLTK's ``punkt_tab`` data,
which no package on the registry ships and which it would download at run time; this rule
uses stream2sentence's ``rule-based`` tokenizer, which RealtimeTTS offers as
``tokenizer="rule-based"``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

from simulplay.core.timebase import scalar_ns
from simulplay.grouping.frameworks.pushes import Pushes, framework_module, kept
from simulplay.grouping.policy import NOTHING, Decision, Observation, OpenReplayed, Policy
from simulplay.grouping.registry import Group, Rule, register_rule
from simulplay.traces.model import Stream

#: ``play_async``'s settings that this rule does not expose (RealtimeTTS 0.8.10's defaults).
PLAY_ASYNC = {"context_size_look_overhead": 12, "quick_yield_every_fragment": False, "cleanup_text_links": True,
              "cleanup_text_emojis": True, "sentence_fragment_delimiters": ".?!;:,\n…。—",
              "force_first_fragment_after_words": 30, "fragment_lookahead_words": 0}


def located(joined: str, start: int, sentence: str) -> int:
    """Where ``sentence`` (found from ``start``) ends in ``joined``: its characters other than
    whitespace matched in order, skipping characters stream2sentence removed."""
    at = start
    for ch in sentence:
        if ch.isspace():
            continue
        while at < len(joined) and joined[at] != ch:
            at += 1
        at += 1
    return min(at, len(joined))


@register_rule("realtimetts")
@dataclass(frozen=True)
class RealtimeTTS(Rule):
    """RealtimeTTS's ``play_async`` text side (RealtimeTTS 0.8.10, stream2sentence 1.1.0, the
    rule-based tokenizer): a first fragment of ``minimum_first_fragment_length`` characters
    sent fast, then sentences of at least ``minimum_sentence_length``; with
    ``buffer_threshold`` > 0 (``buffer_threshold_seconds``) a closed loop: a sentence goes,
    with those held before it, only while the player holds less audio than that."""

    cuts_updates: ClassVar[bool] = True

    minimum_sentence_length: int = 10
    minimum_first_fragment_length: int = 10
    fast_sentence_fragment: bool = True
    fast_sentence_fragment_allsentences: bool = True
    context_size: int = 12
    language: str = field(default="en", metadata={"omit_default": True})
    buffer_threshold: float = field(default=0.0, metadata={"omit_default": True})

    def __post_init__(self):
        for name in ("minimum_sentence_length", "minimum_first_fragment_length", "context_size"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be ≥ 0, got {getattr(self, name)}")
        if not (self.buffer_threshold >= 0 and math.isfinite(self.buffer_threshold)):
            raise ValueError(f"buffer_threshold must be a finite number of seconds ≥ 0, got {self.buffer_threshold}")

    @property
    def closed_loop(self) -> bool:
        """Whether the rule reads the player's buffer (``buffer_threshold`` > 0)."""
        return self.buffer_threshold > 0

    def as_policy(self) -> Policy:
        """The rule in the engine: its own groups (open loop), or the buffer check."""
        return BufferedSentences(rule=self) if self.closed_loop else OpenReplayed(rule=self)

    def group(self, stream: Stream) -> list[Group]:
        """The sentences stream2sentence yields, dispatched at the push whose character made them."""
        if self.closed_loop:
            return Policy.group(self, stream)
        pushes = Pushes(stream)
        return kept([pushes.group(a, b, k, trigger) for a, b, k, trigger in self.sentences(pushes)])

    def sentences(self, pushes: Pushes) -> list[tuple[int, int, int, str]]:
        """What stream2sentence yields, as ``(start, end, push, trigger)``: characters
        ``start:end`` of the joined text, yielded while reading push ``push``."""
        s2s = framework_module("stream2sentence", "stream2sentence", "realtimetts")
        splitter = s2s.SentenceSplitter(
            context_size=self.context_size, minimum_sentence_length=self.minimum_sentence_length,
            minimum_first_fragment_length=self.minimum_first_fragment_length,
            quick_yield_single_sentence_fragment=self.fast_sentence_fragment,
            quick_yield_for_all_sentences=self.fast_sentence_fragment_allsentences,
            tokenizer="rule-based", language=self.language, **PLAY_ASYNC)
        out = []
        start = 0
        for k, text in enumerate(pushes.texts):
            for ch in text:
                splitter.add(ch)
                for sentence in splitter.stream():
                    end = located(pushes.joined, start, sentence)
                    out.append((start, end, k, "sentence"))
                    start = end
        rest = list(splitter.flush())
        last = len(pushes.texts) - 1
        for i, sentence in enumerate(rest):
            end = len(pushes.joined) if i == len(rest) - 1 else located(pushes.joined, start, sentence)
            out.append((start, end, last, "eos"))
            start = end
        if start < len(pushes.joined):  # characters stream2sentence dropped at the end (an emoji)
            out.append((start, len(pushes.joined), last, "eos"))
        return out


@dataclass(frozen=True)
class BufferedSentences(Policy):
    """RealtimeTTS's ``_synthesis_chunk_generator`` (not registered; the rule's policy when
    ``buffer_threshold`` > 0): each sentence stream2sentence yields is held; if the player
    then buffers less than ``buffer_threshold`` seconds (the queued audio ``q(t)``), the held
    sentences go as one request; at the end of the stream what is held goes."""

    rule: RealtimeTTS | None = None

    def canonical(self) -> str:
        """The rule's own canonical string."""
        return self.rule.canonical()

    def to_dict(self) -> dict:
        """The rule's own configuration."""
        return self.rule.to_dict()

    def decide(self, obs: Observation) -> Decision:
        """Check the buffer at each sentence that has come, in order; send once it is low."""
        m = obs.memo
        if not m:
            m.update(sentences=self.rule.sentences(Pushes(obs.stream)), seen=0)
        sentences, threshold = m["sentences"], scalar_ns(self.rule.buffer_threshold)
        while m["seen"] < len(sentences) and sentences[m["seen"]][2] < obs.held_stop:
            end = sentences[m["seen"]][1]
            m["seen"] += 1
            if obs.queued_ns < threshold:
                return Decision(trigger="sentence", upto=end)
        if obs.ended and m["seen"] == len(sentences) and obs.sent_chars < len(obs.stream.joined):
            return Decision(trigger="eos", upto=len(obs.stream.joined))
        return NOTHING
