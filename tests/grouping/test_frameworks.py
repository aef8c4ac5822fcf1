"""The framework rules' strings, spans and limits (docs/frameworks.md); their agreement
with the frameworks themselves is tests/grouping/test_frameworks_agreement.py."""

import builtins

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulplay.core.errors import InputError
from simulplay.grouping import parse_rule
from simulplay.grouping.requests import group_requests, span_text
from simulplay.grouping.vectorized import group_many, update_table
from simulplay.traces.model import join_texts
from tests.support.factories import stream
from tests.support.framework_streams import real_shaped_streams


def test_canonical_strings_name_the_library_defaults():
    assert parse_rule("livekit").canonical() == "livekit:min_sentence_len=20,stream_context_len=10"
    assert parse_rule("pipecat").canonical() == "pipecat"
    assert parse_rule("pipecat:mode=token").canonical() == "pipecat:mode=token"
    assert parse_rule("pipecat:language=de").to_dict() == {"rule": "pipecat", "mode": "sentence", "language": "de"}
    with pytest.raises(InputError, match="mode"):
        parse_rule("pipecat:mode=word")
    assert parse_rule("realtimetts").canonical() == (
        "realtimetts:minimum_sentence_length=10,minimum_first_fragment_length=10,fast_sentence_fragment=true,"
        "fast_sentence_fragment_allsentences=true,context_size=12")


def test_span_text_strips_edges_and_marks_a_cut_inside_a_word():
    joined = "Hello. Next one"
    assert span_text(joined, 0, 6) == ("Hello.", False)
    assert span_text(joined, 6, 15) == ("Next one", False)  # a space before: not glued
    assert span_text(joined, 10, 15) == ("t one", True)  # "Nex|t": a cut inside a word


def test_the_paper_rules_keep_whole_update_groups():
    s = stream([0.0, 1.0, 2.0], ["Hello. N", "ext one.", "Bye."])
    for rule in ("immediate", "timer:w=1.5", "punct:min_words=1", "words:n=2"):
        assert all(g.span is None for g in parse_rule(rule).group(s)), rule


def test_a_group_cut_inside_an_update_names_the_updates_it_touches():
    # "Hello. N" + "ext one." glued: pipecat confirms "Hello." at the "N" of update 0, keeps
    # "Next one." (updates 0 and 1) and flushes it at the end, at update 1's time
    s = stream([0.0, 1.0], ["Hello. N", "ext one."], glue=[False, True])
    got = [(g.first, g.last, g.dispatch_s, g.trigger, g.span) for g in parse_rule("pipecat").group(s)]
    assert got == [(0, 0, 0.0, "sentence", (0, 6)), (0, 1, 1.0, "eos", (7, 16))]
    rows = group_requests(s, parse_rule("pipecat"))
    assert [(r["text"], r["glue"], r["n_updates"]) for r in rows] == [("Hello.", False, 1), ("Next one.", False, 2)]


def test_the_duration_model_counts_a_span_groups_terms_on_its_text():
    # "Hello. N" + "ext one." glued: pipecat's groups "Hello." (update 0) and "Next one."
    # (updates 0-1). By hand: 6 and 9 characters, 1 and 2 words, one punctuation mark each,
    # both end a sentence; update 0's last character (the "N") is in the second group, so the
    # first is anchored on no update and the second on updates 0 and 1
    from simulplay.durationmodel.features import anchor_spans, request_features, update_counts

    table = update_table([stream([0.0, 1.0], ["Hello. N", "ext one."], glue=[False, True])])
    groups = group_many(table, [parse_rule("pipecat")])
    assert groups.spanned.tolist() == [True, True]
    feats = request_features(table, update_counts(table), groups)
    assert {k: feats[k].tolist() for k in ("chars", "words", "punct", "final")} == {
        "chars": [6.0, 9.0], "words": [1.0, 2.0], "punct": [1.0, 1.0], "final": [1.0, 1.0]}
    first, last = anchor_spans(table, groups)
    assert (first.tolist(), last.tolist()) == ([0, 0], [-1, 1])


def test_the_policy_engine_sends_a_framework_rules_own_spans():
    # "Hello. N" + "ext one." glued, as above: through the engine, "Hello." goes at 0 s with
    # update 0 still held (its "N" is not sent), then "Next one." at 1 s; every request's text
    # and glue as the open-loop requests have them
    from simulplay.grouping import fixed_provider, run_policy

    s = stream([0.0, 1.0], ["Hello. N", "ext one."], glue=[False, True])
    got = run_policy(s, parse_rule("pipecat"), fixed_provider(0.5, 1.0))
    assert got.groups == parse_rule("pipecat").group(s)
    assert [(r.text, r.glue, r.first, r.last, r.dispatch_s) for r in got.requests] == [
        ("Hello.", False, 0, 0, 0.0), ("Next one.", False, 0, 1, 1.0)]
    for rule in ("livekit", "pipecat", "realtimetts", "pipecat:mode=token"):
        for t in real_shaped_streams(per_language=2):
            assert run_policy(t, parse_rule(rule), fixed_provider(0.3, 2.0)).groups == parse_rule(rule).group(t), rule


def test_a_missing_splitter_says_which_extra_installs_it(monkeypatch):
    from simulplay.grouping.frameworks import pipecat

    real_import = builtins.__import__

    def no_sentencex(name, *args, **kwargs):
        if name == "sentencex":
            raise ImportError("No module named 'sentencex'")
        return real_import(name, *args, **kwargs)

    pipecat.sentence_splitter.cache_clear()
    monkeypatch.setattr(builtins, "__import__", no_sentencex)
    monkeypatch.delitem(__import__("sys").modules, "sentencex", raising=False)
    try:
        with pytest.raises(InputError, match=r"simulplay\[frameworks\]"):
            parse_rule("pipecat").group(stream([0.0, 1.0], ["Hello.", "Next."]))
    finally:
        pipecat.sentence_splitter.cache_clear()


WORDS = ["Dr.", "z. B.", "3.5", "Hallo.", "ja", "„Nein.“", "Ende!", "(Applaus)", "was?", "谢谢。", "a,", "und", "Ok."]


@st.composite
def framework_streams(draw):
    n = draw(st.integers(1, 12))
    texts = [" ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4))) for _ in range(n)]
    gaps = draw(st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=n, max_size=n))
    glue = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    return stream(np.cumsum(gaps), texts, glue=glue)


@settings(max_examples=60, deadline=None)
@given(framework_streams(), st.sampled_from(["livekit", "livekit:min_sentence_len=5,stream_context_len=0", "pipecat",
                                              "pipecat:mode=token", "realtimetts"]))
def test_framework_groups_cover_the_text_in_order_and_never_before_it_is_available(s, rule):
    groups = parse_rule(rule).group(s)
    rows = group_requests(s, parse_rule(rule))
    assert join_texts([r["text"] for r in rows], [r["glue"] for r in rows]) == s.joined
    ends = [g.span[1] for g in groups]
    assert ends == sorted(ends) and all(g.span[0] < g.span[1] for g in groups)
    assert all(g.first <= g.last for g in groups)
    for g in groups:
        # released at an availability, never before the group's last character was available
        assert g.dispatch_s in set(s.times.tolist()) and g.dispatch_s >= s.times[g.last]
    assert [g.dispatch_s for g in groups] == sorted(g.dispatch_s for g in groups)
    # the policy engine sends the same spans at the same times
    from simulplay.grouping import fixed_provider, run_policy

    assert run_policy(s, parse_rule(rule), fixed_provider(0.0, 1.0)).groups == groups
