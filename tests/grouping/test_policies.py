"""The built-in closed-loop policies on hand-worked timelines (fixed service and durations)."""

from simulplay.grouping import fixed_provider, parse_rule, run_policy
from tests.support.factories import stream

S = 1_000_000_000
TEXTS = ["a b.", "c", "d e f.", "g", "h i.", "j", "k."]
TIMES = [0, 0, 0.5, 1, 3.2, 3.2, 7]


def groups(res):
    return [(g.first, g.last, g.dispatch_s, g.trigger) for g in res.groups]


def test_backlog_waits_for_the_queue_to_fall_below_its_threshold():
    # Every request: service 0.3 s, audio 2 s; below = 1 s, 3 words.
    # 0: "a b. c" (3 words), q = 0, nothing in flight → send; ready 0.3, plays 0.3..2.3.
    # 0.5: "d e f." arrives, q = 1.8 > 1 → wake at 2.3 − 1 = 1.3. 1: "g" arrives (q = 1.3).
    # 1.3: q = 1 ≤ 1 → send "d e f. g"; ready 1.6, plays 2.3..4.3.
    # 3.2: "h i." and "j", q = 1.1 → wake 3.3; 3.3: send them, ready 3.6, plays 4.3..6.3.
    # 7: "k." (1 word < 3), but the stream has ended and nothing is in flight → eos.
    res = run_policy(stream(TIMES, TEXTS), parse_rule("backlog"), fixed_provider(0.3, 2.0))
    assert groups(res) == [(0, 1, 0.0, "backlog"), (2, 3, 1.3, "backlog"), (4, 5, 3.3, "backlog"), (6, 6, 7.0, "eos")]
    assert [(r.queued_ns, r.in_flight) for r in res.requests] == [(0, 0), (S, 0), (S, 0), (0, 0)]
    assert [r.end_ns for r in res.requests] == [2_300_000_000, 4_300_000_000, 6_300_000_000, 9_300_000_000]


def test_backlog_sends_at_once_below_a_lower_threshold_crossing():
    # below = 0.5: the crossings move to 2.3 − 0.5 = 1.8 and 4.3 − 0.5 = 3.8; with min_words=1
    # the last update goes by the backlog rule itself (q = 0 at 7)
    res = run_policy(stream(TIMES, TEXTS), parse_rule("backlog:below=0.5,min_words=1"), fixed_provider(0.3, 2.0))
    assert groups(res) == [(0, 1, 0.0, "backlog"), (2, 3, 1.8, "backlog"), (4, 5, 3.8, "backlog"),
                           (6, 6, 7.0, "backlog")]


def test_backlog_holds_whole_updates_within_max_chars_and_waits_for_min_words():
    # "aaaa bb" is 7 characters; " cccccc" would make 14 → first group 0..1 at 0; once it is
    # ready (0.3) the stream has ended → the rest goes at once (eos), whatever q.
    res = run_policy(stream([0, 0, 0], ["aaaa", "bb", "cccccc"]), parse_rule("backlog:max_chars=7,min_words=1"),
                     fixed_provider(0.3, 2.0))
    assert groups(res) == [(0, 1, 0.0, "backlog"), (2, 2, 0.3, "eos")]
    # a single update longer than max_chars still goes, alone
    res = run_policy(stream([0, 0], ["aaaaaaaaaa", "b"]), parse_rule("backlog:max_chars=7,min_words=1"),
                     fixed_provider(0.3, 2.0))
    assert groups(res) == [(0, 0, 0.0, "backlog"), (1, 1, 0.3, "eos")]
    # one word at 0, two at 1: nothing; four at 2 → all three updates
    res = run_policy(stream([0, 1, 2], ["a", "b", "c d."]), parse_rule("backlog"), fixed_provider(0.3, 2.0))
    assert groups(res) == [(0, 2, 2.0, "backlog")]


def test_pacer_follows_livekits_timeline():
    # service 0.3 s, audio 2 s, min_audio_buffer 5 s. Sentences: "a b." | "c d e f." | "g h i." | "j k.".
    # 0: "a b." completes a sentence: first send at once (0..0); ready 0.3. Not generating → wake 0.5.
    # 0.5: "d e f." completes "c d e f."; pushed audio 2 s, first seen now (audio_start = 0.5),
    #      grown since the check at 0 → generation started; wake 0.1 s later.
    # 0.6: no growth → stopped; rest = 0.5 + 2 − 0.6 = 1.9 ≤ 5 → send "c d e f." (1..2); wake 1.1.
    # 1.1: audio 4 grew → started; 1.2: stopped, rest 3.3, but no whole sentence held ("g");
    #      wakes every 0.5 s: 1.7, 2.2, 2.7, 3.2.
    # 3.2: "h i." completes "g h i." (and the wake-up): stopped, rest = 0.5 + 4 − 3.2 = 1.3 → send 3..4.
    # 3.7: audio 6 → started; 3.8: stopped; rest shrinks, wakes 4.3 … 6.8, 7.3.
    # 7: "k." ends the stream: "j k."; checked 0.2 s after 6.8 (no growth), rest −0.5 → send 5..6.
    res = run_policy(stream(TIMES, TEXTS), parse_rule("pacer"), fixed_provider(0.3, 2.0))
    assert groups(res) == [(0, 0, 0.0, "pacer"), (1, 2, 0.6, "pacer"), (3, 4, 3.2, "pacer"), (5, 6, 7.0, "pacer")]


def test_pacer_joins_held_sentences_until_max_text_length_is_reached():
    # three sentences at 0; each counts with a space before it: " aa." 4, " bb." 8 ≥ 5 → the
    # first send takes two; "cc." goes at 0.6 (as above: audio seen at 0.5, stopped at 0.6)
    res = run_policy(stream([0, 0, 0], ["aa.", "bb.", "cc."]), parse_rule("pacer:max_text_length=5"),
                     fixed_provider(0.3, 2.0))
    assert groups(res) == [(0, 1, 0.0, "pacer"), (2, 2, 0.6, "pacer")]
    res = run_policy(stream([0, 0, 0], ["aa.", "bb.", "cc."]), parse_rule("pacer:max_text_length=4"),
                     fixed_provider(0.3, 2.0))
    assert groups(res)[0] == (0, 0, 0.0, "pacer")


def test_pacer_waits_for_a_whole_sentence_before_its_first_send():
    # "so" is no sentence: nothing at 0; "far." at 1 completes it → the first send at 1
    res = run_policy(stream([0, 1, 2], ["so", "far.", "end"]), parse_rule("pacer"), fixed_provider(0.3, 2.0))
    assert groups(res)[0] == (0, 1, 1.0, "pacer")


def test_a_sentence_ends_with_the_update_that_holds_its_end():
    from simulplay.grouping.policies import closes_sentence

    texts = ["running. There", "3.5", "„Nein.“ Dann", "so.»", "end", "好。", "z.B. so"]
    assert [closes_sentence(t) for t in texts] == [True, False, True, True, False, True, True]
    # "without running. There" holds the first sentence's end: the first send is at 2 with "There" riding along
    res = run_policy(stream([0, 1, 2, 3], ["When I", "crossed", "without running. There", "was"]),
                     parse_rule("pacer"), fixed_provider(0.3, 2.0))
    assert groups(res)[0] == (0, 2, 2.0, "pacer")
