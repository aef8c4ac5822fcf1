"""The vectorised grouping equals each rule's own ``group``, group for group."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulplay.grouping import parse_rule
from simulplay.grouping.registry import TRIGGERS
from simulplay.grouping.vectorized import group_many, update_table
from simulplay.traces.model import Stream
from tests.support.factories import stream

RULES = ["immediate", "timer:w=0", "timer:w=1", "timer:w=2.5", "punct", "punct:cap=1,min_words=0",
         "punct:cap=3,min_words=2,unit=char", "words:n=1", "words:n=3,cap=2", "words:n=4,cap=5,unit=char"]
TEXTS = ["a", "b c", "end.", "so.»", "\"", "»", " ", "x y z.", "3.5", "好。", "¿Qué?", "Hi! ", " lo", "ab cd"]


def expected(streams, rules):
    rows = []
    for r, rule in enumerate(rules):
        offset = 0
        for s, st_ in enumerate(streams):
            for g in rule.group(st_):
                rows.append((r, s, g.first + offset, g.last + offset, g.dispatch_s, g.trigger))
            offset += len(st_)
    return rows


def actual(streams, rules):
    g = group_many(update_table(streams), rules)
    return [(int(a), int(b), int(c), int(d), float(e), TRIGGERS[int(f)])
            for a, b, c, d, e, f in zip(g.rule, g.stream, g.first, g.last, g.dispatch_s, g.trigger)]


@st.composite
def streams(draw):
    out = []
    for k in range(draw(st.integers(1, 3))):
        n = draw(st.integers(0, 12))
        steps = draw(st.lists(st.sampled_from([0.0, 0.0, 0.5, 1.0, 1.0, 2.0, 2.5, 3.0]), min_size=n, max_size=n))
        texts = draw(st.lists(st.sampled_from(TEXTS), min_size=n, max_size=n))
        glue = draw(st.lists(st.booleans(), min_size=n, max_size=n))
        out.append(Stream(f"t{k}", "A", 100.0, np.cumsum(steps), tuple(texts), np.array(glue, bool)))
    return out


@settings(max_examples=300, deadline=None)
@given(streams())
@pytest.mark.slow
def test_vectorised_groups_equal_the_rules_own(ss):
    rules = [parse_rule(r) for r in RULES]
    assert actual(ss, rules) == expected(ss, rules)


def test_stream_with_an_empty_update_is_grouped_by_the_rule_itself():
    s = stream([0, 0.5, 1, 3], ["ab", "", "cd", "ef"], glue=[False, True, True, False])
    rules = [parse_rule("words:n=2,cap=5"), parse_rule("timer:w=1")]
    assert actual([s], rules) == expected([s], rules)


def test_glued_words_merge_in_the_word_count():
    # "for" + "tune" glued make one word: three words are reached only at "now"
    s = stream([0, 1, 2, 3], ["good for", "tune", "now", "later"], glue=[False, True, False, False])
    got = actual([s], [parse_rule("words:n=3,cap=10")])
    assert [(r[2], r[3], r[5]) for r in got] == [(0, 2, "words"), (3, 3, "eos")]


@pytest.mark.parametrize("w", [0.5, 1.0, 4.0])
def test_sample_traces_under_timers(w):
    from importlib.resources import files

    from simulplay.traces import read_traces, streams_from_frame

    ss = streams_from_frame(read_traces([files("simulplay.sample_traces").joinpath("sample_traces.jsonl")]))
    rules = [parse_rule(f"timer:w={w}"), parse_rule(f"punct:cap={w}"), parse_rule(f"words:n=5,cap={w}")]
    assert actual(ss, rules) == expected(ss, rules)
