"""Commit policies, worked by hand on small revising streams: the committed stream (text,
commit times, glue), the spoken-then-retracted counts and the commit lag per word."""

import numpy as np
import pytest

from simulplay.core.errors import InputError
from simulplay.grouping import COMMITS, parse_commit
from simulplay.traces.model import Stream

# (time_s, text, glue, retract) and the hypothesis after each update:
UPDATES = [
    (1.0, "Das ist", False, 0),  # Das ist
    (2.0, "gut.", False, 0),  # Das ist gut.
    (3.0, ", weil", True, 1),  # Das ist gut, weil          (the final "." retracted)
    (4.0, "es regnet", False, 0),  # Das ist gut, weil es regnet
    (5.0, "schneit", False, 7),  # Das ist gut, weil es schneit   (" regnet" retracted)
    (6.0, ".", True, 0),  # Das ist gut, weil es schneit.
]
FINAL = "Das ist gut, weil es schneit."


def revising(updates=UPDATES, talk_id="t1"):
    t, x, g, r = zip(*updates)
    return Stream(talk_id, "R", 10.0, np.array(t), tuple(x), np.array(g, bool), np.array(r, np.int64))


def spoken(policy, stream=None):
    c = parse_commit(policy).commit(stream or revising())
    rows = list(zip(c.stream.times.tolist(), c.stream.texts, c.stream.glue.tolist()))
    return c, rows


def test_eager_speaks_every_update_and_counts_what_it_took_back():
    c, rows = spoken("eager")
    assert rows == [(1.0, "Das ist", False), (2.0, "gut.", False), (3.0, ", weil", True),
                    (4.0, "es regnet", False), (5.0, "schneit", False), (6.0, ".", True)]
    assert c.stream.joined == "Das ist gut., weil es regnet schneit."
    # "gut." was cut into (1 word) and " regnet" (1 word, 7 characters) taken back
    assert (c.spoken_words, c.retracted_words, c.retracted_chars) == (7, 2, 8)
    assert c.final == FINAL and c.lags.tolist() == [0, 0, 0, 0, 0, 0]


def test_eager_after_everything_was_retracted_speaks_the_replacement_as_a_new_word():
    c, rows = spoken("eager", revising([(1.0, "Hallo", False, 0), (2.0, "Welt", False, 5)]))
    assert rows == [(1.0, "Hallo", False), (2.0, "Welt", False)]
    assert (c.stream.joined, c.retracted_words, c.retracted_chars) == ("Hallo Welt", 1, 5)


def test_eager_passes_an_append_only_stream_unchanged():
    s = Stream("t", "A", 5.0, np.array([0.5, 1.0]), ("Hallo", "Welt"), np.array([True, False]))
    c = parse_commit("eager").commit(s)
    assert c.stream is s and (c.spoken_words, c.retracted_words) == (2, 0)


def test_stable_two_commits_the_words_two_hypotheses_agree_on():
    c, rows = spoken("stable:k=2")
    # after update 1 the agreed prefix is "Das ist" (7): words followed by agreed whitespace: "Das";
    # update 2 agrees on "Das ist gut" (11) → "ist"; update 3 on 17 → "gut,"; update 4 on 21 ("… es s") → "weil es";
    # update 5 adds nothing before the last boundary; the end of the stream commits "schneit."
    assert rows == [(2.0, "Das", False), (3.0, "ist", False), (4.0, "gut,", False), (5.0, "weil es", False),
                    (6.0, "schneit.", False)]
    assert c.stream.joined == FINAL and (c.spoken_words, c.retracted_words) == (6, 0)
    # lag: commit time − when the word's last character was last written
    assert c.lags.tolist() == [1.0, 2.0, 1.0, 2.0, 1.0, 0.0]


def test_stable_by_character_commits_inside_words():
    c, rows = spoken("stable:k=2,unit=char")
    # the agreed prefix grows 7, 11, 17, 21 ("… es " + "s" of regnet/schneit, cut back to 21), 28; the end adds "."
    assert rows == [(2.0, "Das ist", False), (3.0, "gut", False), (4.0, ", weil", True), (5.0, "es ", False),
                    (6.0, "schneit", True), (6.0, ".", True)]
    assert c.stream.joined == FINAL


def test_mask_holds_back_the_last_k_words():
    c, rows = spoken("mask:k=1")
    assert rows == [(1.0, "Das", False), (2.0, "ist", False), (3.0, "gut,", False), (4.0, "weil es", False),
                    (6.0, "schneit.", False)]
    assert (c.retracted_words, c.lags.tolist()) == (0, [0.0, 1.0, 0.0, 1.0, 0.0, 0.0])


def test_mask_zero_speaks_everything_and_respeaks_a_word_cut_into():
    c, rows = spoken("mask:k=0")
    # the retraction of "." cuts into "gut.": the word is spoken again, whole, as new text
    assert rows == [(1.0, "Das ist", False), (2.0, "gut.", False), (3.0, "gut, weil", False),
                    (4.0, "es regnet", False), (5.0, "schneit", False), (6.0, ".", True)]
    assert (c.spoken_words, c.retracted_words, c.retracted_chars) == (8, 2, 8)


def test_hold_commits_a_word_after_it_stood_unwritten_for_t_seconds():
    c, rows = spoken("hold:t=1")
    # "Das " stands from 1 s: due at 2 s (the update at 2 s does not touch it); "ist " from 2 s
    # (its space came with "gut."): due at 3 s; "gut, " from 3 s: 4 s; "weil " from 4 s: 5 s;
    # "es " from 5 s ("schneit" rewrote the space): 6 s; the end commits "schneit.".
    assert rows == [(2.0, "Das", False), (3.0, "ist", False), (4.0, "gut,", False), (5.0, "weil", False),
                    (6.0, "es", False), (6.0, "schneit.", False)]
    assert c.lags.tolist() == [1.0, 2.0, 1.0, 2.0, 2.0, 0.0]


def test_hold_fires_its_timer_between_updates_and_can_be_taken_back():
    s = revising([(0.0, "a b c", False, 0), (3.0, "x", False, 4)])  # "a b c" → "a x"
    c, rows = spoken("hold:t=1", s)
    assert rows == [(1.0, "a b", False), (3.0, "x", False)]  # the timer at 1 s, then the end of the stream
    assert (c.stream.joined, c.retracted_words, c.retracted_chars) == ("a b x", 1, 2)


def test_final_is_each_character_when_last_written_and_labelled_an_oracle():
    c, rows = spoken("final")
    assert rows == [(1.0, "Das ist", False), (2.0, "gut", False), (3.0, ", weil", True), (4.0, "es", False),
                    (5.0, "schneit", False), (6.0, ".", True)]
    assert c.stream.joined == FINAL and c.retracted_words == 0
    p = parse_commit("final")
    assert not p.causal and p.signature() == {"commit": "final", "oracle": "non-causal"}
    assert p.label() == "final (oracle)"


@pytest.mark.parametrize("text,canonical", [("eager", "eager"), ("stable", "stable:k=2"),
                                            ("stable:unit=char", "stable:k=2,unit=char"), ("hold", "hold:t=1"),
                                            ("hold:t=0.25", "hold:t=0.25"), ("mask", "mask:k=3"), ("final", "final")])
def test_policy_strings_are_canonical_and_configs_rebuild_them(text, canonical):
    p = parse_commit(text)
    assert p.canonical() == canonical
    assert COMMITS.from_dict(p.to_dict(), key="commit") == p
    assert p.signature()["commit"] == canonical


@pytest.mark.parametrize("text,fragment", [("soon", "unknown commit policy 'soon'"), ("stable:k=0", "k=0"),
                                           ("hold:t=-1", "≥ 0"), ("mask:n=2", "unknown parameter")])
def test_bad_policy_strings_name_what_is_accepted(text, fragment):
    with pytest.raises(InputError) as e:
        parse_commit(text)
    assert fragment in str(e.value)


POLICIES = ["eager", "stable:k=1", "stable:k=2", "stable:k=3,unit=char", "hold:t=0", "hold:t=1.5", "mask:k=0",
            "mask:k=3", "final"]


@pytest.fixture(scope="module")
def revising_streams(tmp_path_factory):
    from simulplay.traces.importers import import_simulstream
    from simulplay.traces.model import streams_from_frame
    from tests.support.retranslation_logs import revising_log

    path = tmp_path_factory.mktemp("log") / "r.jsonl"
    revising_log(path, [45.3, 30.9], rate=0.3)
    return path, streams_from_frame(import_simulstream(path, system="R").frame, revising=True)


@pytest.mark.parametrize("policy", POLICIES)
def test_every_policy_speaks_an_append_only_stream_as_it_is(policy):
    s = Stream("t", "A", 9.0, np.array([0.0, 1.0, 1.0, 4.0]), ("Ein", "Satz,", "der", "endet."),
               np.array([False, False, False, False]))
    c = parse_commit(policy).commit(s)
    assert c.stream.joined == s.joined and c.retracted_words == 0
    assert np.all(np.diff(c.stream.times) >= 0) and c.stream.times[-1] == 4.0


@pytest.mark.parametrize("policy", POLICIES)
def test_what_is_spoken_is_the_final_hypothesis_unless_something_was_taken_back(policy, revising_streams):
    _, streams = revising_streams
    for s in streams:
        c = parse_commit(policy).commit(s)
        assert np.all(np.diff(c.stream.times) >= 0)
        assert len(c.lags) == len(c.final.split()) and np.all(c.lags >= 0)
        if c.retracted_words == 0:
            assert c.stream.joined == c.final == s.joined
        else:
            assert c.spoken_words > len(c.final.split()) - c.retracted_words


def test_final_is_what_the_importer_keeps_as_its_offline_upper_bound(revising_streams):
    from simulplay.traces.importers import import_simulstream
    from simulplay.traces.model import streams_from_frame

    path, streams = revising_streams
    oracle = streams_from_frame(import_simulstream(path, system="R", retractions="final").frame)
    for s, o in zip(streams, oracle):
        c = parse_commit("final").commit(s).stream
        assert c.texts == o.texts and c.times.tolist() == o.times.tolist()
        assert c.glue[1:].tolist() == o.glue[1:].tolist()


@pytest.mark.parametrize("policy", ["eager", "stable:k=1", "mask:k=0"])
def test_a_retraction_that_leaves_a_space_sends_no_leading_space(policy):
    # "alpha gamma" less 5 characters is "alpha "; appending "beta." gives "alpha  beta.":
    # the listener hears "beta." as a new word, never a request that starts with a space
    c, rows = spoken(policy, revising([(1.0, "alpha", False, 0), (2.0, "gamma", False, 0), (3.0, "beta.", False, 5)]))
    assert all(not text[:1].isspace() for _, text, _ in rows)
    assert rows[-1] == (3.0, "beta.", False)
