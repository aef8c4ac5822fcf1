"""The built-in closed-loop policies (docs/listening-grouping.md): ``backlog`` and ``pacer``.

``backlog:below=1,max_chars=300,min_words=3`` sends what is held once the listener's queued
audio ``q(t)`` is at most ``below`` seconds, nothing is in flight and at least
``min_words`` whitespace words are held: the longest run of whole held updates of at most
``max_chars`` characters (at least one update). While ``q(t)`` is above ``below`` it wakes
itself at the crossing ``C_k − below``. Once the stream's last update has arrived, held
text goes as soon as nothing is in flight, whatever ``q(t)`` and ``min_words`` (trigger
``eos`` when only the end released it).

``pacer:min_audio_buffer=5,max_text_length=300`` follows LiveKit's ``SentenceStreamPacer``
over sentences of whole updates (a sentence ends with the update that holds its end: a
terminator, closing marks, then whitespace or the end of the update, so the words after it in
that update ride along; at the end of the stream the rest is one): it acts when a sentence
arrives and at its own wake-up. It sends
the first sentences at once; later ones when generation has stopped and its estimate of the
remaining audio, ``audio_start + pushed_audio − t``, is at most ``min_audio_buffer``
seconds, joining held sentences until their text (each counted with one space before it)
reaches ``max_text_length`` characters (the sentence that reaches it included). Generation
counts as started when the pushed audio grew since its previous check, and as stopped at a
later check (at least 0.1 s on) where it did not grow; ``audio_start`` is the first action
that saw audio. It wakes 0.1 s later while generating, else after
``max(0.5, rest − min_audio_buffer)``. The estimate ignores idle gaps: after the listener
waited for audio, the true queue is longer than the estimate, and the pacer sends earlier
than the buffer needs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from simulplay.core.timebase import scalar_ns
from simulplay.grouping.policy import NOTHING, Decision, Observation, Policy
from simulplay.grouping.registry import register_rule
from simulplay.traces.model import TERMINATORS, is_closing_mark, join_texts, unit_count

TENTH_NS, HALF_NS = 100_000_000, 500_000_000


def generation_check(m: dict, audio: int, now: int) -> int:
    """LiveKit's pacer's view of the synthesizer at ``now`` (ns), kept in its memory ``m``:
    when the first audio came (``audio_start``) and, at most every 0.1 s, whether the audio
    pushed so far (``audio``, ns) grew (generation ``started``) or stood still after it had
    (``stopped``). Returns ``audio``."""
    if audio > 0 and m["audio_start"] is None:
        m["audio_start"] = now
    if m["prev_check"] is None or now - m["prev_check"] >= TENTH_NS:
        if m["prev_audio"] < audio:
            m["started"] = True
        elif m["started"]:
            m["stopped"] = True
        m["prev_audio"], m["prev_check"] = audio, now
    return audio


def _seconds(name: str, value: float) -> None:
    if not (value >= 0 and math.isfinite(value)):
        raise ValueError(f"{name} must be a finite number of seconds ≥ 0, got {value}")


def longest_run(obs: Observation, max_chars: int) -> int:
    """The most whole held updates whose joined text has at most ``max_chars``
    characters (at least one)."""
    texts, glue = obs.stream.texts, obs.stream.glue
    length, k = 0, 0
    for i in range(obs.held_first, obs.held_stop):
        length += len(texts[i]) + (1 if k and not glue[i] else 0)
        if k and length > max_chars:
            break
        k += 1
    return k


@register_rule("backlog")
@dataclass(frozen=True)
class Backlog(Policy):
    """Send the held text once the queued audio is at most ``below`` seconds, nothing is in
    flight and ``min_words`` words are held (at most ``max_chars`` characters of whole
    updates at a time); after the last update, as soon as nothing is in flight."""

    below: float = 1.0
    max_chars: int = 300
    min_words: int = 3

    def __post_init__(self):
        _seconds("below", self.below)
        if self.max_chars < 1:
            raise ValueError(f"max_chars must be ≥ 1, got {self.max_chars}")
        if self.min_words < 0:
            raise ValueError(f"min_words must be ≥ 0, got {self.min_words}")

    def decide(self, obs: Observation) -> Decision:
        """Send when the queue is low and nothing is in flight, else wake at the crossing."""
        if not obs.n_held or obs.in_flight:
            return NOTHING  # the request's readiness wakes the policy
        below = scalar_ns(self.below)
        if obs.queued_ns <= below and unit_count(obs.held_text(), "word") >= self.min_words:
            return Decision(longest_run(obs, self.max_chars), "backlog")
        if obs.ended:
            return Decision(longest_run(obs, self.max_chars), "eos")
        if obs.queued_ns > below:
            return Decision(wake_ns=obs.now_ns + obs.queued_ns - below)
        return NOTHING


@register_rule("pacer")
@dataclass(frozen=True)
class Pacer(Policy):
    """LiveKit's sentence pacer: the first sentences at once, later ones when generation
    has stopped and its remaining-audio estimate is at most ``min_audio_buffer`` seconds,
    joined up to ``max_text_length`` characters."""

    min_audio_buffer: float = 5.0
    max_text_length: int = 300

    def __post_init__(self):
        _seconds("min_audio_buffer", self.min_audio_buffer)
        if self.max_text_length < 1:
            raise ValueError(f"max_text_length must be ≥ 1, got {self.max_text_length}")

    def decide(self, obs: Observation) -> Decision:
        """LiveKit's send loop, run when a sentence arrives or its wake-up falls."""
        m, now = obs.memo, obs.now_ns
        if not m:
            m.update(sentences=[], open=0, acted=-1, wake=None, audio_start=None, prev_check=None,
                     prev_audio=0, started=False, stopped=False, last_sent=None)
        new = _new_sentences(obs, m) if obs.arrivals else False
        if m["acted"] == now or not (new or (obs.woken and m["wake"] == now)):
            return NOTHING
        m["acted"] = now
        if obs.ended and not obs.n_held:
            return NOTHING
        audio = generation_check(m, obs.audio_pushed_ns(), now)
        rest = (m["audio_start"] or 0) + audio - now
        buffer = scalar_ns(self.min_audio_buffer)
        k = 0
        if m["last_sent"] is None or (m["stopped"] and rest <= buffer):
            k = self._collect(obs, m)
            if k:
                m["started"] = m["stopped"] = False
                m["last_sent"] = now
        wait = TENTH_NS if m["started"] and not m["stopped"] else max(HALF_NS, rest - buffer)
        m["wake"] = now + wait
        return Decision(k, "pacer", wake_ns=now + wait)

    def _collect(self, obs: Observation, m: dict) -> int:
        """Updates of the held sentences joined until ``max_text_length`` is reached."""
        length, stop = 0, obs.held_first
        sentences = m["sentences"]
        while sentences and length < self.max_text_length:
            end = sentences.pop(0)
            length += 1 + len(join_texts(obs.stream.texts[stop:end], obs.stream.glue[stop:end]))
            stop = end
        return stop - obs.held_first


def closes_sentence(text: str) -> bool:
    """Whether an update's text holds a sentence end: a terminator, any closing marks, then
    whitespace or the end of the text (``running. There`` does, ``3.5`` does not)."""
    for k, ch in enumerate(text):
        if ch in TERMINATORS:
            j = k + 1
            while j < len(text) and is_closing_mark(text[j]):
                j += 1
            if j == len(text) or text[j].isspace():
                return True
    return False


def _new_sentences(obs: Observation, m: dict) -> bool:
    """Record the sentences completed by this instant's arrivals (an update that holds a
    sentence end closes one; the end of the stream completes the rest); whether there was one."""
    s, before = obs.stream, len(m["sentences"])
    for i in range(max(m["open"], obs.held_first), obs.held_stop):
        if closes_sentence(s.texts[i]):
            m["sentences"].append(i + 1)
            m["open"] = i + 1
    if obs.ended and m["open"] < obs.held_stop:
        m["sentences"].append(obs.held_stop)
        m["open"] = obs.held_stop
    return len(m["sentences"]) > before
