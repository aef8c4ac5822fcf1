"""Grouping rules (docs/formats.md#grouping-rules): hand-computed cases and properties."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulplay.core.errors import InputError
from simulplay.grouping import Splitter, parse_rule, stream_requests
from simulplay.grouping.registry import Rule, register_rule
from simulplay.traces.model import join_texts
from tests.support.factories import groups, stream


def test_immediate_sends_every_update_alone_ties_included():
    s = stream([0.0, 1.0, 1.0, 2.0])
    assert groups("immediate", s) == [(0, 0, 0.0, "immediate"), (1, 1, 1.0, "immediate"),
                                      (2, 2, 1.0, "immediate"), (3, 3, 2.0, "immediate")]


def test_timer_joins_updates_available_by_the_deadline_inclusive():
    s = stream([0.0, 1.0, 2.0, 2.5, 3.0])
    # deadline 0+2=2: updates at 0, 1 and exactly 2 join; next group starts at 2.5 → deadline 4.5
    assert groups("timer:w=2", s) == [(0, 2, 2.0, "timer"), (3, 4, 3.0, "eos")]


def test_timer_does_not_reset_on_late_arrival():
    s = stream([0.0, 1.9, 2.1, 10.0])
    # 1.9 arrives just before the deadline and must not extend it to 3.9
    assert groups("timer:w=2", s)[:2] == [(0, 1, 2.0, "timer"), (2, 2, 4.1, "timer")]


def test_timer_fires_at_its_own_instant_without_an_update():
    s = stream([0.0, 5.0, 6.0])
    assert groups("timer:w=4", s) == [(0, 0, 4.0, "timer"), (1, 2, 6.0, "eos")]


def test_ties_at_a_deadline_all_join():
    s = stream([1.0, 3.0, 3.0, 3.0, 3.5])
    assert groups("timer:w=2", s) == [(0, 3, 3.0, "timer"), (4, 4, 3.5, "eos")]


def test_end_of_translation_inside_a_timer_window_releases_at_once():
    s = stream([0.0, 0.5, 1.0])
    assert groups("timer:w=4", s) == [(0, 2, 1.0, "eos")]


def test_deadline_and_end_of_translation_coincide_label_timer():
    assert groups("timer:w=2", stream([0.0, 2.0])) == [(0, 1, 2.0, "timer")]


def test_float_deadline_is_inclusive_in_whole_nanoseconds():
    # 0.7 + 0.1 = 0.7999999999999999 in floating point; the update at 0.8 must still join
    s = stream([0.7, 0.8, 5.0])
    assert groups("timer:w=0.1", s)[0][:2] == (0, 1)


def test_timer_zero_groups_only_same_instant_updates():
    s = stream([0.0, 1.0, 1.0, 2.0])
    assert [g[:2] for g in groups("timer:w=0", s)] == [(0, 0), (1, 2), (3, 3)]


def test_punct_releases_on_terminal_punctuation_with_enough_words():
    s = stream([0, 1, 2, 3, 3.5], ["Hello there", "my friend.", "Yes.", "it is", "done"])
    # "Yes." has too few words; the stream ends at 3.5, before the cap at 4.0
    assert groups("punct", s) == [(0, 1, 1.0, "punct"), (2, 4, 3.5, "eos")]


@pytest.mark.parametrize("ending", ['said."', "so.)", "this!’", "what?]", "end. "])
def test_punct_accepts_a_closing_quote_or_bracket(ending):
    s = stream([0, 0.5, 9], ["one two", ending, "later"])
    assert groups("punct", s)[0] == (0, 1, 0.5, "punct")


def test_punct_needs_min_words_else_waits_for_the_cap():
    s = stream([0, 0.5, 9], ["Yes.", "No.", "later text"])
    # "Yes. No." has two words < 3: the cap fires at 2.0
    assert groups("punct", s)[0] == (0, 1, 2.0, "timer")


def test_punct_on_a_word_glued_across_updates():
    s = stream([0, 1], ["It works", "."], glue=[False, True])
    assert groups("punct:cap=5,min_words=2", s) == [(0, 1, 1.0, "punct")]


def test_words_rule_counts_whitespace_words():
    s = stream([0, 0.5, 1, 1.5, 9], ["a b c", "d e", "f g h", "i", "j"])
    assert groups("words", s)[0] == (0, 2, 1.0, "words")
    assert groups("words:n=20,cap=1", s)[0] == (0, 2, 1.0, "timer")


def test_rule_strings_are_canonical():
    assert parse_rule("punct").canonical() == "punct:cap=2,min_words=3"
    assert parse_rule("words").canonical() == "words:n=8,cap=2"
    assert parse_rule("timer:w=4.0").canonical() == "timer:w=4"
    assert parse_rule("timer:w=2.5").canonical() == "timer:w=2.5"
    assert parse_rule(parse_rule("words:cap=3,n=5").canonical()) == parse_rule("words:n=5,cap=3")


@pytest.mark.parametrize("bad,fragment", [
    ("nope", "unknown grouping rule 'nope'"),
    ("timer:x=3", "unknown parameter 'x=3'"),
    ("timer:w=abc", "'w=abc' is not a float"),
    ("timer:w=-1", "w must be a finite number of seconds ≥ 0"),
    ("timer:w=inf", "w must be a finite number of seconds ≥ 0"),
    ("words:n=0", "n must be ≥ 1"),
    ("words:n=2,n=3", "parameter 'n' is given twice"),
])
def test_bad_rule_strings_name_what_is_accepted(bad, fragment):
    with pytest.raises(InputError) as e:
        parse_rule(bad)
    assert fragment in str(e.value) and "\n" not in str(e.value)


@pytest.fixture
def scratch_rule_name():
    """A rule name the test registers, removed from the registry afterwards (other tests see
    the built-in rules only)."""
    from simulplay.grouping.registry import RULES

    yield "pairs_test"
    RULES._items.pop("pairs_test", None)


def test_a_user_rule_registers_without_editing_the_core(scratch_rule_name):
    from dataclasses import dataclass

    from simulplay.core.specs import RegistryError
    from simulplay.grouping.registry import Group

    @register_rule(scratch_rule_name)
    @dataclass(frozen=True)
    class Pairs(Rule):
        def group(self, s):
            return [Group(i, min(i + 1, len(s) - 1), float(s.times[min(i + 1, len(s) - 1)]), "words")
                    for i in range(0, len(s), 2)]

    assert parse_rule("pairs_test").canonical() == "pairs_test"
    assert len(parse_rule("pairs_test").group(stream([0, 1, 2]))) == 2
    with pytest.raises(RegistryError, match="rule 'pairs_test' is already registered"):
        register_rule(scratch_rule_name)(Pairs)


# ---- properties ---------------------------------------------------------------

words = st.text(alphabet="abc .!?\"", min_size=1, max_size=12).filter(lambda t: t.strip())


@st.composite
def streams(draw):
    n = draw(st.integers(1, 25))
    gaps = draw(st.lists(st.sampled_from([0.0, 0.1, 0.5, 1.0, 1.7, 2.0, 3.3]), min_size=n, max_size=n))
    times = np.cumsum(gaps)
    texts = draw(st.lists(words, min_size=n, max_size=n))
    glue = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    return stream(times, texts, glue)


rules = st.sampled_from(["immediate", "timer:w=0", "timer:w=1", "timer:w=2", "timer:w=4",
                         "punct", "punct:cap=1,min_words=1", "words", "words:n=2,cap=3",
                         "punct:unit=char", "words:n=3,unit=char"])


@settings(max_examples=300, deadline=None)
@given(streams(), rules)
@pytest.mark.slow
def test_every_update_in_exactly_one_group_in_order(s, rule):
    gs = parse_rule(rule).group(s)
    covered = [i for g in gs for i in range(g.first, g.last + 1)]
    assert covered == list(range(len(s)))


@settings(max_examples=300, deadline=None)
@given(streams(), rules)
@pytest.mark.slow
def test_dispatch_not_before_any_member_and_timer_not_after_deadline(s, rule):
    r = parse_rule(rule)
    for g in r.group(s):
        assert g.dispatch_s >= s.times[g.last]
        wait = getattr(r, "w", getattr(r, "cap", None))
        if wait is not None:
            assert g.dispatch_s <= s.times[g.first] + wait + 1e-9
    dispatch = [g.dispatch_s for g in r.group(s)]
    assert dispatch == sorted(dispatch)


@settings(max_examples=300, deadline=None)
@given(streams(), rules, st.one_of(st.none(), st.integers(1, 15)))
def test_joined_text_preserved_through_grouping_and_splitting(s, rule, limit):
    reqs = stream_requests(s, parse_rule(rule), Splitter(limit))
    joined = join_texts([r["text"] for r in reqs], [r["glue"] for r in reqs])
    assert joined == s.joined
    if limit is not None:
        assert all(len(r["text"].strip()) <= limit for r in reqs)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="ab  cdé\u00a0", min_size=1, max_size=80), st.integers(1, 20))
def test_splitter_never_changes_the_joined_string_and_respects_its_limit(text, limit):
    pieces = Splitter(limit).split(text)
    assert join_texts([p for p, _ in pieces], [g for _, g in pieces]) == text
    # within the limit, except for whitespace merged from a blank remainder; never a blank request
    assert all(len(p) <= limit or len(p.strip()) <= limit for p, _ in pieces)
    assert len(pieces) == 1 or all(p.strip() for p, _ in pieces)


def test_splitter_cuts_between_words_unless_a_word_alone_is_too_long():
    assert Splitter(10).split("aaa bbb ccc ddd") == [("aaa bbb", False), ("ccc ddd", False)]
    assert Splitter(4).split("abcdefghij xy") == [("abcd", False), ("efgh", True), ("ij", True),
                                                  ("xy", False)]


def test_splitter_never_emits_a_request_of_spaces_alone():
    assert Splitter(3).split("abc ") == [("abc ", False)]
    assert Splitter(1).split("a    b") == [("a    ", False), ("b", True)]
    assert Splitter(2).split("  ab") == [("  ab", False)]


def test_splitter_with_a_token_length_function():
    tokens = Splitter(3, length=lambda t: len(t.split()), unit="tokens")
    assert [p for p, _ in tokens.split("a b c d e f g")] == ["a b c", "d e f", "g"]
    assert tokens.describe() == "max-tokens=3"
