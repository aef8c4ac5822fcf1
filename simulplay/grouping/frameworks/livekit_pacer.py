"""LiveKit Agents' ``SentenceStreamPacer`` over its BlingFire sentence tokenizer (closed loop).

Reproduces ``livekit.agents.tts.stream_pacer.StreamPacerWrapper`` of livekit-agents 1.8.9
(Apache-2.0) as ``tts.StreamAdapter(text_pacing=SentenceStreamPacer(...))`` runs it: the
adapter's default tokenizer (``blingfire.SentenceTokenizer(retain_format=True)``, the rule
``livekit``) emits sentences at the pushes that complete them, and the pacer decides when
to pass them on to synthesis, reading the audio the adapter has pushed so far. Its send loop
runs when a sentence arrives, when the input ends (the last update) and at its own wake-up
(each run cancels the previous wake-up):

* ``audio_start`` is the first run that saw pushed audio; generation counts as *started*
  when the pushed audio grew since the previous check and as *stopped* at a later check
  where it did not (a check is a run at least 0.1 s after the previous check);
* the remaining audio is ``audio_start + pushed − now`` (0 before any audio);
* the first sentence goes at once, alone; later ones once generation has stopped and the
  remaining audio is at most ``min_audio_buffer``: held sentences joined until their
  lengths (each token as the tokenizer gives it, its whitespace included) reach
  ``max_text_length``; a send resets *started* and *stopped*;
* it wakes 0.2 s later while generation is in progress, else after
  ``max(0.5, remaining − min_audio_buffer)``; once the input has ended and no sentence is
  held, it stops.

A run is one decision per instant with every event of that instant applied (a sentence
that arrives at the instant of a wake-up is held at that run). The remaining audio counts
from the first audio as if it had played without a break: after the listener waited for
audio the true queue is longer than the estimate, and the pacer sends earlier than the
buffer needs. The tests drive the library itself on a virtual clock and compare.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from simulplay.core.timebase import scalar_ns
from simulplay.grouping.frameworks.livekit import sentence_tokens
from simulplay.grouping.frameworks.pushes import Pushes
from simulplay.grouping.policies import generation_check
from simulplay.grouping.policy import NOTHING, Decision, Observation, Policy
from simulplay.grouping.registry import register_rule

GENERATING_NS, IDLE_NS = 200_000_000, 500_000_000
STREAM_CONTEXT_LEN = 10  # the adapter's tokenizer's default


@register_rule("livekit-pacer")
@dataclass(frozen=True)
class LiveKitPacer(Policy):
    """LiveKit's ``SentenceStreamPacer`` (livekit-agents 1.8.9, there ``min_remaining_audio``)
    on its BlingFire sentences of at least ``min_sentence_len`` characters: the first
    sentence at once, later ones when generation has stopped and at most
    ``min_audio_buffer`` seconds of audio remain, joined up to ``max_text_length``
    characters."""

    cuts_updates: ClassVar[bool] = True

    min_audio_buffer: float = 5.0
    max_text_length: int = 300
    min_sentence_len: int = 20

    def __post_init__(self):
        if not (self.min_audio_buffer >= 0 and math.isfinite(self.min_audio_buffer)):
            raise ValueError(f"min_audio_buffer must be a finite number of seconds ≥ 0, got {self.min_audio_buffer}")
        if self.max_text_length < 1:
            raise ValueError(f"max_text_length must be ≥ 1, got {self.max_text_length}")
        if self.min_sentence_len < 0:
            raise ValueError(f"min_sentence_len must be ≥ 0, got {self.min_sentence_len}")

    def decide(self, obs: Observation) -> Decision:
        """The pacer's send loop: a run for the sentences that arrived or its wake-up, then,
        at the last update, a run for the end of the input (its flushed sentence held)."""
        m, now = obs.memo, obs.now_ns
        if not m:
            tokens = sentence_tokens(Pushes(obs.stream), self.min_sentence_len, STREAM_CONTEXT_LEN)
            m.update(tokens=tokens, arrived=0, sent=0, runs=(-1, 0), wake=None, audio_start=None, prev_check=None,
                     prev_audio=0, started=False, stopped=False, first=True, done=False, input_ended=False)
        tokens, before = m["tokens"], m["arrived"]
        while (m["arrived"] < len(tokens) and tokens[m["arrived"]][2] < obs.held_stop
               and tokens[m["arrived"]][3] != "eos"):
            m["arrived"] += 1
        at, phase = m["runs"] if m["runs"][0] == now else (now, 0)
        if phase == 0 and (m["arrived"] > before or (obs.woken and m["wake"] == now)):
            m["runs"] = (now, 1)
            upto = self._run(obs, m)
            if upto is not None:
                return Decision(trigger="pacer", wake_ns=m["wake"], upto=upto)
        if phase < 2 and obs.ended and obs.arrivals:  # the input ends: the tokenizer flushes its tail
            m["runs"] = (now, 2)
            m["arrived"], m["input_ended"] = len(tokens), True
            upto = self._run(obs, m)
            return Decision(trigger="pacer", wake_ns=m["wake"], upto=upto)
        return NOTHING if m["runs"] != (now, 1) else Decision(wake_ns=m["wake"])

    def _run(self, obs: Observation, m: dict) -> int | None:
        """One pass of the send loop at ``obs.now_ns``: where its batch ends (None: no send)."""
        now = obs.now_ns
        if m["done"]:
            return None
        if m["input_ended"] and m["sent"] == len(m["tokens"]):
            m["done"], m["wake"] = True, None
            return None
        audio = generation_check(m, obs.audio_pushed_ns(), now)
        remaining = m["audio_start"] + audio - now if m["audio_start"] is not None else 0
        buffer = scalar_ns(self.min_audio_buffer)
        upto = None
        if m["first"] or (m["stopped"] and remaining <= buffer):
            upto = self._batch(m)
            if upto is not None:
                m["started"] = m["stopped"] = m["first"] = False
        wait = GENERATING_NS if m["started"] and not m["stopped"] else max(IDLE_NS, remaining - buffer)
        m["wake"] = now + wait
        return upto

    def _batch(self, m: dict) -> int | None:
        """Where the batch of held sentences ends in the joined text (None: none held)."""
        tokens, length = m["tokens"], 0
        if m["sent"] >= m["arrived"]:
            return None
        while m["sent"] < m["arrived"]:
            start, end, _, _ = tokens[m["sent"]]
            m["sent"] += 1
            length += end - start
            if m["first"] or length >= self.max_text_length:
                break
        return tokens[m["sent"] - 1][1]
