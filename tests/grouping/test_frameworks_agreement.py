"""The framework rules against the frameworks themselves (docs/frameworks.md).

The reference is the library, driven here as its TTS pipeline drives it: each update's
text (with the space that joins it to the previous one) is pushed at its availability,
what the library emits during a push is released at that push's time, and the end of the
stream is flushed as the pipeline flushes it. LiveKit Agents' ``tts.StreamAdapter`` feeds
``blingfire.SentenceTokenizer(retain_format=True).stream()`` (push_text, then end_input);
pipecat's ``TTSService`` feeds ``SimpleTextAggregator.aggregate`` and calls ``flush`` at the
end of the LLM response. Neither speaks a whitespace-only token. The rule's groups must
equal the library's emissions: the same texts (whitespace runs compared as one space) at
the same times, covering the whole text.
"""

import asyncio
import importlib.metadata

import pytest

from simulplay.grouping import parse_rule
from simulplay.grouping.requests import group_requests
from simulplay.traces.importers.detokenize import squeeze
from simulplay.traces.model import join_texts
from tests.support.factories import stream
from tests.support.framework_streams import SENTENCES, real_shaped_streams

STREAMS = real_shaped_streams()


def pushes(s):
    return [("" if i == 0 or s.glue[i] else " ") + t for i, t in enumerate(s.texts)]


def rule_emissions(s, rule):
    return [(squeeze(r["text"]), r["dispatch_s"]) for r in group_requests(s, parse_rule(rule))]


def livekit_emissions(s, min_sentence_len=20, stream_context_len=10):
    from livekit.agents.tokenize import blingfire

    async def run():
        sent = blingfire.SentenceTokenizer(min_sentence_len=min_sentence_len, stream_context_len=stream_context_len,
                                           retain_format=True).stream()
        got, now = [], [0.0]

        async def read():
            async for ev in sent:
                got.append((ev.token, now[0]))

        reader = asyncio.create_task(read())
        for t, text in zip(s.times, pushes(s)):
            now[0] = float(t)
            sent.push_text(text)
            for _ in range(3):  # let the reader take what the push emitted
                await asyncio.sleep(0)
        sent.end_input()
        await reader
        return got

    return [(squeeze(x), t) for x, t in asyncio.run(run()) if x.strip()]


def pipecat_emissions(s, mode="sentence", language=None):
    from pipecat.utils.text.base_text_aggregator import TextType
    from pipecat.utils.text.simple_text_aggregator import SimpleTextAggregator

    async def run():
        agg = SimpleTextAggregator(aggregation_type=TextType(mode), language=language)
        got = []
        for t, text in zip(s.times, pushes(s)):
            async for a in agg.aggregate(text):
                got.append((a.text, float(t)))
        rest = await agg.flush()
        if rest:
            got.append((rest.text, float(s.times[-1])))
        return got

    return [(squeeze(x), t) for x, t in asyncio.run(run()) if x.strip()]


def test_the_streams_are_real_shaped():
    assert len(STREAMS) >= 50
    joined = " ".join(s.joined for s in STREAMS)
    for shape in ("(Applaus)", "„", "“", "« ", " »", "Dr.", "z. B.", "3.5", "1,5", "。", "？"):
        assert shape in joined, shape
    assert sum(bool(g) for s in STREAMS for g in s.glue) > 200  # words continue across updates
    assert {s.talk_id.split("-")[0] for s in STREAMS} == set(SENTENCES)


def test_the_reference_versions_are_pinned():
    # the rules reproduce these releases; another release may group differently
    assert importlib.metadata.version("livekit-agents") == "1.8.9"
    assert importlib.metadata.version("livekit-blingfire") == "1.2.0"
    assert importlib.metadata.version("pipecat-ai") == "1.14.0"
    assert importlib.metadata.version("sentencex") == "1.0.32"


def _agree(reference, rule, streams):
    cut_inside = 0
    for s in streams:
        ours, theirs = rule_emissions(s, rule), reference(s)
        assert ours == theirs, s.talk_id
        rows = group_requests(s, parse_rule(rule))
        assert join_texts([r["text"] for r in rows], [r["glue"] for r in rows]) == s.joined  # all of the text, once
        starts = {len(join_texts(s.texts[:i], s.glue[:i])) for i in range(1, len(s))}
        ends = [len(join_texts([r["text"] for r in rows[:k + 1]], [r["glue"] for r in rows[:k + 1]]))
                for k in range(len(rows) - 1)]
        cut_inside += any(e not in starts for e in ends)
    return cut_inside


def test_livekit_agrees_with_livekit_agents():
    assert _agree(livekit_emissions, "livekit", STREAMS) > 20  # many groups end inside an update


@pytest.mark.parametrize("params", [dict(min_sentence_len=5, stream_context_len=10),
                                    dict(min_sentence_len=40, stream_context_len=30)])
def test_livekit_agrees_across_its_parameters(params):
    rule = "livekit:" + ",".join(f"{k}={v}" for k, v in params.items())
    _agree(lambda s: livekit_emissions(s, **params), rule, STREAMS[::3])


def test_pipecat_agrees_with_pipecat():
    assert _agree(pipecat_emissions, "pipecat", STREAMS) > 20


def test_pipecat_agrees_in_each_language():
    for s in STREAMS:
        lang = s.talk_id.split("-")[0]
        assert rule_emissions(s, f"pipecat:language={lang}") == pipecat_emissions(s, language=lang), s.talk_id


def test_pipecat_token_mode_agrees_with_pipecat():
    _agree(lambda s: pipecat_emissions(s, mode="token"), "pipecat:mode=token", STREAMS)


def test_pipecat_emits_inside_a_push_and_keeps_the_rest():
    # pipecat's own example: "Hello. N" sends "Hello." and keeps "N". By hand: the "N" of push
    # 2 confirms "Hello." (t=2); its "D" confirms "Next one." (t=2); "Dr. S" and "Dr. Smith"
    # are an abbreviation, so "Dr. Smith came." waits for the end of the stream (t=3).
    s = stream([1.0, 2.0, 3.0], ["Hello.", "Next one. Dr.", "Smith came."])
    groups = parse_rule("pipecat").group(s)
    assert [(g.span, g.first, g.last, g.dispatch_s, g.trigger) for g in groups] == [
        ((0, 6), 0, 0, 2.0, "sentence"), ((7, 16), 1, 1, 2.0, "sentence"), ((17, 32), 1, 2, 3.0, "eos")]
    assert [r["text"] for r in group_requests(s, parse_rule("pipecat"))] == ["Hello.", "Next one.", "Dr. Smith came."]


# ---- RealtimeTTS ------------------------------------------------------------------------
# RealtimeTTS itself needs PyAudio (a C build against PortAudio) to import, so the test reads
# what ``play_async`` passes to stream2sentence from RealtimeTTS's installed source, and drives
# stream2sentence's public ``generate_sentences`` the way RealtimeTTS's play thread does: it
# pulls the fed text one character at a time from a generator, and a sentence it yields is
# what the characters pulled so far made (released at the push that held the last of them).


def play_async_settings():
    """stream2sentence's keyword arguments as ``TextToAudioStream.play`` passes them, under
    ``play_async``'s defaults (read from RealtimeTTS's source)."""
    import ast
    import importlib.util
    from pathlib import Path

    source = Path(importlib.util.find_spec("RealtimeTTS").submodule_search_locations[0]) / "text_to_stream.py"
    tree = ast.parse(source.read_text(encoding="utf-8"))
    funcs = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    args = funcs["play_async"].args
    defaults = {a.arg: ast.literal_eval(d) for a, d in zip(args.args[-len(args.defaults):], args.defaults)}
    call = next(n for n in ast.walk(funcs["play"]) if isinstance(n, ast.Call)
                and getattr(n.func, "attr", "") == "generate_sentences")
    kwargs = {}
    for kw in call.keywords:
        if isinstance(kw.value, ast.Constant):
            kwargs[kw.arg] = kw.value.value
        elif isinstance(kw.value, ast.Name):
            kwargs[kw.arg] = defaults[kw.value.id]
        else:  # self.log_characters: the stream's own setting (False)
            kwargs[kw.arg] = False
    return kwargs


def realtimetts_emissions(s, **changed):
    import stream2sentence

    kwargs = {**play_async_settings(), "tokenizer": "rule-based", "language": "en", **changed}
    at = [0]

    def chars():
        for k, text in enumerate(pushes(s)):
            for ch in text:
                at[0] = k
                yield ch

    got = []
    for sentence in stream2sentence.generate_sentences(chars(), **kwargs):
        got.append((squeeze(sentence), float(s.times[at[0]])))
    return [(x, t) for x, t in got if x]


def test_realtimetts_defaults_are_play_asyncs():
    kwargs = play_async_settings()
    rule = parse_rule("realtimetts")
    assert kwargs["minimum_sentence_length"] == rule.minimum_sentence_length == 10
    assert kwargs["minimum_first_fragment_length"] == rule.minimum_first_fragment_length == 10
    assert kwargs["quick_yield_single_sentence_fragment"] is rule.fast_sentence_fragment is True
    assert kwargs["quick_yield_for_all_sentences"] is rule.fast_sentence_fragment_allsentences is True
    assert kwargs["context_size"] == rule.context_size == 12
    from simulplay.grouping.frameworks.realtimetts import PLAY_ASYNC

    assert {k: kwargs[k] for k in PLAY_ASYNC} == PLAY_ASYNC
    assert importlib.metadata.version("realtimetts") == "0.8.10"
    assert importlib.metadata.version("stream2sentence") == "1.1.0"


def test_realtimetts_agrees_with_stream2sentence_driven_as_realtimetts_drives_it():
    assert _agree(realtimetts_emissions, "realtimetts", STREAMS) > 20


def test_realtimetts_agrees_across_its_parameters():
    _agree(lambda s: realtimetts_emissions(s, minimum_sentence_length=30, minimum_first_fragment_length=25,
                                           quick_yield_for_all_sentences=False),
           "realtimetts:minimum_sentence_length=30,minimum_first_fragment_length=25,"
           "fast_sentence_fragment_allsentences=false", STREAMS[::2])
