"""The closed-loop framework rules against the frameworks themselves (docs/frameworks.md).

``livekit-pacer``: LiveKit Agents' own tokenizer stream wrapped by its own
``SentenceStreamPacer`` runs on a virtual clock (an asyncio loop whose time is simulated,
tests/support/virtual_clock.py; the pacer's ``time.time`` reads the same clock from a far-off
epoch, as a wall clock would), pushed each update's text at its availability, with an audio emitter and a
serial synthesizer that take each emitted text for the given service time and then push the
given audio, as ``tts.StreamAdapter`` does. ``realtimetts`` with ``buffer_threshold`` > 0:
RealtimeTTS's own ``_synthesis_chunk_generator`` (read from its installed source; RealtimeTTS
itself needs PyAudio to import) over stream2sentence's ``generate_sentences``, pulling the
text one character at a time, with a player whose buffered seconds are the audio made
ready and not yet played. The rule, run by simulplay's engine with the same service times
and durations (request by request), must emit the same texts at the same times.
"""

import ast
import asyncio
import importlib.metadata
import importlib.util
import logging
import types
from pathlib import Path

import numpy as np
import pytest

from simulplay.grouping import fixed_provider, parse_rule, run_policy
from simulplay.grouping.requests import span_text
from simulplay.traces.importers.detokenize import squeeze
from tests.grouping.test_frameworks_agreement import STREAMS, play_async_settings, pushes
from tests.support.virtual_clock import VirtualClockLoop

EPOCH = 1.7e9 / 1024  # the pacer's wall clock at the loop's time 0 (any value far from 0)
# The pacer's timers fire 10 ns after their deadline (a timer never fires before it): the pacer
# sets its wake-up at the very crossing of ``min_remaining_audio``, where the rule's exact clock
# sees the crossing, and a float rounding of the crossing would decide otherwise.
LATENCY = 1e-8


def clocks(n: int, seed: int, audio=(0.8, 4.0), service=(0.05, 0.9)) -> tuple[list[float], list[float]]:
    """Service times and audio durations of ``n`` requests, in order (seconds)."""
    rng = np.random.default_rng(seed)
    return [float(x) for x in rng.uniform(*service, n)], [float(x) for x in rng.uniform(*audio, n)]


def rule_emissions(s, rule, services, audios):
    got = run_policy(s, parse_rule(rule), fixed_provider(services, audios)).groups
    return [(squeeze(span_text(s.joined, *g.span)[0]), g.dispatch_s) for g in got]


def pacer_emissions(s, services, audios, min_remaining_audio=5.0, max_text_length=300, min_sentence_len=20):
    from livekit.agents.tokenize import blingfire
    from livekit.agents.tts import stream_pacer

    loop = VirtualClockLoop()
    emitter = types.SimpleNamespace(pushed=0.0, _dst_ch=types.SimpleNamespace(closed=False))
    emitter.pushed_duration = lambda idx=-1: emitter.pushed
    got = []

    async def run():
        sent = blingfire.SentenceTokenizer(min_sentence_len=min_sentence_len, stream_context_len=10,
                                           retain_format=True).stream()
        pacer = stream_pacer.SentenceStreamPacer(min_remaining_audio=min_remaining_audio,
                                                 max_text_length=max_text_length).wrap(sent, emitter)
        send = pacer._event_ch.send_nowait

        def emitted(ev):  # what the pacer releases, when it releases it
            got.append((ev.token, loop.time()))
            send(ev)

        pacer._event_ch.send_nowait = emitted

        async def synthesize():  # the adapter's serial synthesis: one text at a time
            j = 0
            async for ev in pacer:
                if ev.token.strip():
                    await asyncio.sleep(services[j])
                    emitter.pushed += audios[j]
                    j += 1

        synth = asyncio.create_task(synthesize())
        for t, text in zip(s.times, pushes(s)):
            await asyncio.sleep(float(t) - loop.time())
            pacer.push_text(text)
            for _ in range(20):  # let the tokenizer and the pacer take the push
                await asyncio.sleep(0)
        pacer.end_input()
        await synth
        await pacer.aclose()

    late = types.SimpleNamespace(call_later=lambda delay, cb, *a: loop.call_later(delay + LATENCY, cb, *a))
    real_time, real_asyncio = stream_pacer.time, stream_pacer.asyncio
    stream_pacer.time = types.SimpleNamespace(time=lambda: EPOCH + loop.time())
    stream_pacer.asyncio = types.SimpleNamespace(**{**vars(asyncio), "get_event_loop": lambda: late})
    try:
        loop.run_until_complete(run())
    finally:
        stream_pacer.time, stream_pacer.asyncio = real_time, real_asyncio
        loop.close()
    return [(squeeze(x), t) for x, t in got if x.strip()]


def same(ours, theirs):
    """The same texts, released within 0.1 ms (the reference's timers run late by 10 ns each).
    Both libraries join the sentences of a request with a space, also where the stream has
    none (between CJK sentences, before a closing quote stream2sentence left to the next
    sentence); the rule's request keeps the stream's text: compared without whitespace."""
    def bare(got):
        return ["".join(x.split()) for x, _ in got]

    return bare(ours) == bare(theirs) and all(abs(a - b) < 1e-4 for (_, a), (_, b)
                                                                  in zip(ours, theirs))


def test_livekit_pacer_agrees_with_livekit_agents_on_a_virtual_clock():
    assert importlib.metadata.version("livekit-agents") == "1.8.9"
    batched = held = 0
    for k, s in enumerate(STREAMS):
        services, audios = clocks(len(s), k, audio=(2.0, 9.0))
        ours, theirs = rule_emissions(s, "livekit-pacer", services, audios), pacer_emissions(s, services, audios)
        assert same(ours, theirs), (s.talk_id, ours, theirs)
        open_loop = parse_rule("livekit").group(s)
        batched += len(ours) < len(open_loop)
        held += any(t > g.dispatch_s + 1e-6 for (_, t), g in zip(ours, open_loop))
    assert batched >= 8 and held > 20  # the pacer joins sentences and holds them past their emission


@pytest.mark.parametrize("params", [dict(min_remaining_audio=1.0, max_text_length=60, min_sentence_len=5),
                                    dict(min_remaining_audio=8.0, max_text_length=300, min_sentence_len=40)])
def test_livekit_pacer_agrees_across_its_parameters(params):
    rule = (f"livekit-pacer:min_audio_buffer={params['min_remaining_audio']},"
            f"max_text_length={params['max_text_length']},min_sentence_len={params['min_sentence_len']}")
    for k, s in enumerate(STREAMS[::4]):
        services, audios = clocks(len(s), 100 + k, audio=(0.3, 2.5))
        theirs = pacer_emissions(s, services, audios, **params)
        assert same(rule_emissions(s, rule, services, audios), theirs), s.talk_id


# ---- RealtimeTTS, closed loop ----------------------------------------------------------------


def chunk_generator():
    """``TextToAudioStream._synthesis_chunk_generator``, compiled from RealtimeTTS's source."""
    source = Path(importlib.util.find_spec("RealtimeTTS").submodule_search_locations[0]) / "text_to_stream.py"
    tree = ast.parse(source.read_text(encoding="utf-8"))
    func = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "_synthesis_chunk_generator")
    func.returns = None
    for a in func.args.args:
        a.annotation = None
    namespace = {"logging": logging}
    exec(compile(ast.Module([func], []), str(source), "exec"), namespace)
    return namespace["_synthesis_chunk_generator"]


class Player:
    """A serial synthesizer and the player's buffer: each chunk synthesized in order for its
    service time, its audio queued for playback once ready; the buffered seconds at ``now``
    are the queued audio not yet played."""

    def __init__(self, services, audios):
        self.services, self.audios = services, audios
        self.free = self.end = 0.0
        self.ready: list[tuple[float, float]] = []
        self.now = 0.0

    def send(self, now: float) -> None:
        j = len(self.ready)
        start = max(now, self.free)
        self.free = start + self.services[j]
        self.ready.append((self.free, self.audios[j]))

    def get_buffered_seconds(self) -> float:
        end = 0.0
        for r, d in self.ready:
            if r <= self.now + 1e-12:
                end = max(end, r) + d
        return max(0.0, end - self.now)


def realtimetts_loop_emissions(s, services, audios, threshold):
    import stream2sentence

    kwargs = {**play_async_settings(), "tokenizer": "rule-based", "language": "en"}
    player = Player(services, audios)
    at = [0]

    def chars():
        for k, text in enumerate(pushes(s)):
            for ch in text:
                at[0] = k
                player.now = float(s.times[k])
                yield ch

    me = types.SimpleNamespace(player=player)
    got = []
    for chunk in chunk_generator()(me, stream2sentence.generate_sentences(chars(), **kwargs), threshold):
        if chunk.strip():
            got.append((squeeze(chunk), float(s.times[at[0]])))
            player.send(float(s.times[at[0]]))
    return got


@pytest.mark.parametrize("threshold", [1.0, 3.0])
def test_realtimetts_closed_loop_agrees_with_realtimetts(threshold):
    assert importlib.metadata.version("realtimetts") == "0.8.10"
    merged = 0
    for k, s in enumerate(STREAMS[::2] if threshold == 3.0 else STREAMS[1::2]):
        services, audios = clocks(len(s) * 2, k, audio=(2.0, 8.0), service=(0.05, 0.6))
        ours = rule_emissions(s, f"realtimetts:buffer_threshold={threshold}", services, audios)
        assert same(ours, realtimetts_loop_emissions(s, services, audios, threshold)), s.talk_id
        merged += len(ours) < len(parse_rule("realtimetts").group(s))
    assert merged > 10  # sentences were merged while the buffer was full


def test_realtimetts_without_a_threshold_is_the_open_loop_rule():
    s = STREAMS[3]
    services, audios = clocks(len(s) * 2, 3)
    assert parse_rule("realtimetts:buffer_threshold=0").canonical() == parse_rule("realtimetts").canonical()
    ours = run_policy(s, parse_rule("realtimetts"), fixed_provider(services, audios)).groups
    assert ours == parse_rule("realtimetts").group(s)
