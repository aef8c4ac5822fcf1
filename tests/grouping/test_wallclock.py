"""The policy on a real clock, driven here by a fake one: the times the caller reads and the
readiness it reports are chosen by hand, and the decisions are checked against a timeline
worked by hand; the same policy on the engine with the same service times and audio makes
the same requests."""

from simulplay.grouping import Served, parse_rule, run_policy
from simulplay.grouping.wallclock import WallClockLoop
from tests.support.factories import stream

NS = 1_000_000_000

S = stream([0.0, 0.5, 1.0, 3.0], ["a b c", "d e", "f", "g h."], source_s=5.0)

# backlog:below=1,min_words=1 on S; each request is sent when decided (nothing else in flight):
#   0.0  "a b c" arrives: q 0, nothing in flight → sent (backlog, q 0, 0 in flight)
#   0.5  "d e" arrives: a request is in flight → nothing
#   0.8  request 0 ready (service 0.8), 2.0 s of audio: plays 0.8–2.8; q 2.0 > 1 → wake at 1.8
#   1.0  "f" arrives: q 1.8 > 1 → nothing (wake at 1.8 again)
#   1.8  wake-up: q 1.0 ≤ 1 → "d e f" sent (backlog, q 1.0, 0 in flight)
#   2.3  request 1 ready (service 0.5), 0.5 s of audio: plays 2.8–3.3
#   2.8  request 0 finishes playing: nothing held
#   3.0  "g h." arrives (the last): q 0.3 ≤ 1 → sent (backlog, q 0.3)
#   3.4  request 2 ready, 1.0 s of audio: plays 3.4–4.4; done
STEPS = [  # (clock reading, readiness reported before it: (seq, sent, ready, audio), requests sent)
    (0.0, None, [("a b c", 0.0, "backlog", 0.0, 0)]),
    (0.5, None, []),
    (0.8, (0, 0.0, 0.8, 2.0), []),
    (1.0, None, []),
    (1.8, None, [("d e f", 1.8, "backlog", 1.0, 0)]),
    (2.3, (1, 1.8, 2.3, 0.5), []),
    (2.8, None, []),
    (3.0, None, [("g h.", 3.0, "backlog", 0.3, 0)]),
    (3.4, (2, 3.0, 3.4, 1.0), []),
]
# the next instant after each step: an arrival, a wake-up or the end of a part (3.3: request 1's; 4.4: the last's)
NEXT = [0.5, 1.0, 1.0, 1.8, 2.8, 2.8, 3.0, 3.3, 4.4]


def ns(s: float) -> int:
    return round(s * NS)


def test_backlog_on_a_fake_clock_follows_the_hand_worked_timeline():
    loop = WallClockLoop(S, parse_rule("backlog:below=1,min_words=1"))
    assert loop.next_instant() == 0
    for (now, ready, want), nxt in zip(STEPS, NEXT):
        if ready:
            seq, sent, r, audio = ready
            loop.ready(seq, ns(sent), ns(r), Served(0.0, audio_s=audio))
        got = loop.advance(ns(now))
        assert [(q.text, q.dispatch_s, q.trigger, round(q.queued_ns / NS, 9), q.in_flight) for q in got] == want, now
        assert loop.next_instant() == ns(nxt), now
    assert loop.done
    assert [(q.ready_ns, q.end_ns) for q in loop.requests] == [(ns(0.8), ns(2.8)), (ns(2.3), ns(3.3)),
                                                              (ns(3.4), ns(4.4))]
    # the engine, given the same service times and audio, makes the same requests
    served = {0: Served(0.8, 2.0), 1: Served(0.5, 0.5), 2: Served(0.4, 1.0)}
    engine = run_policy(S, parse_rule("backlog:below=1,min_words=1"), lambda q: served[q.seq])
    assert [(q.text, q.dispatch_ns, q.trigger, q.queued_ns) for q in engine.requests] == \
        [(q.text, q.dispatch_ns, q.trigger, q.queued_ns) for q in loop.requests]


def test_a_late_clock_processes_every_instant_in_order_and_the_rest_goes_at_the_end():
    # the caller reads the clock late, once: every instant up to it is processed in order, as
    # the engine would; the rest goes as soon as nothing is in flight once all has arrived (eos)
    loop = WallClockLoop(S, parse_rule("backlog:below=0,min_words=4"))
    assert loop.advance(ns(0.0)) == []  # 3 words held, fewer than 4: wait
    got = loop.advance(ns(3.2))  # at 0.5 five words are held: sent; the rest is held behind it
    assert [(q.text, q.dispatch_s, q.trigger) for q in got] == [("a b c d e", 0.5, "backlog")]
    assert loop.next_instant() is None
    loop.ready(0, ns(3.2), ns(3.5), Served(0.0, audio_s=0.0))  # silent: q stays 0
    got = loop.advance(ns(3.6))
    assert [(q.text, q.dispatch_s, q.trigger) for q in got] == [("f g h.", 3.5, "eos")]
    loop.ready(1, ns(3.6), ns(3.7), Served(0.0, audio_s=0.2))
    assert loop.advance(ns(3.7)) == [] and loop.done
