"""The policy engine: event order and ties, open-loop rules through it, providers.

Timelines are worked by hand in the comments; the engine's numbers are checked against them.
"""

from dataclasses import dataclass, field
from importlib.resources import files

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulplay.core.errors import InputError
from simulplay.grouping import Decision, Policy, Served, fixed_provider, parse_rule, run_policy
from simulplay.grouping.registry import Group, Rule
from simulplay.traces import read_traces, streams_from_frame
from simulplay.traces.importers.simulstream import import_simulstream
from simulplay.traces.model import Stream
from tests.support.factories import ASR_TALKS, stream
from tests.support.simulstream_logs import seamless_log

OPEN_RULES = ["immediate", "timer:w=0", "timer:w=1", "timer:w=2.5", "timer:w=4", "punct", "punct:cap=1,min_words=0",
              "punct:cap=3,min_words=2,unit=char", "words:n=1", "words:n=3,cap=2", "words:n=8,cap=2",
              "words:n=4,cap=5,unit=char"]
TEXTS = ["a", "b c", "end.", "so.»", "\"", "»", " ", "x y z.", "3.5", "好。", "¿Qué?", "Hi! ", " lo", "ab cd"]


def as_tuples(groups):
    return [(g.first, g.last, g.dispatch_s, g.trigger) for g in groups]


def through_engine(s, rule, provider):
    return as_tuples(run_policy(s, rule, provider).groups)


def check_open_loop(streams_):
    # feedback is ignored: two very different syntheses give the rule's own groups
    slow, fast = fixed_provider(3.7, 11.0), fixed_provider(0.0, 0.0)
    for text in OPEN_RULES:
        rule = parse_rule(text)
        for s in streams_:
            want = as_tuples(rule.group(s))
            assert through_engine(s, rule, slow) == want, (text, s.talk_id, s.system)
            assert through_engine(s, rule, fast) == want, (text, s.talk_id, s.system)


def test_open_loop_rules_give_their_groups_on_the_sample_traces():
    streams_ = streams_from_frame(read_traces([files("simulplay.sample_traces").joinpath("sample_traces.jsonl")]))
    assert len(streams_) >= 4
    check_open_loop(streams_)


def test_open_loop_rules_give_their_groups_on_simulstream_shaped_logs(tmp_path):
    log = seamless_log(tmp_path / "a.jsonl", [40.0, 25.5], hold=2)
    streams_ = []
    for clock in ("source", "computation-aware"):
        streams_ += streams_from_frame(import_simulstream(log.path, system="A", clock=clock).frame)
    check_open_loop(streams_)


def test_open_loop_rules_give_their_groups_on_the_spoken_test_talks():
    check_open_loop([Stream(t["talk_id"], t["system"], t["source_s"], np.array([u["time_s"] for u in t["updates"]]),
                            tuple(u["text"] for u in t["updates"]), np.zeros(len(t["updates"]), bool))
                     for t in ASR_TALKS])


@st.composite
def random_streams(draw):
    n = draw(st.integers(0, 12))
    steps = draw(st.lists(st.sampled_from([0.0, 0.0, 0.5, 1.0, 1.0, 2.0, 2.5, 3.0, 0.1 + 0.2]), min_size=n, max_size=n))
    texts = draw(st.lists(st.sampled_from(TEXTS), min_size=n, max_size=n))
    glue = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    return Stream("t", "A", 100.0, np.cumsum(steps), tuple(texts), np.array(glue, bool))


@settings(max_examples=120, deadline=None)
@given(random_streams())
def test_open_loop_rules_give_their_groups_on_random_streams(s):
    check_open_loop([s])


@dataclass(frozen=True)
class EveryOther(Rule):
    """A user's rule the engine knows nothing about: pairs of updates at the later arrival + 0.25 s."""

    def group(self, stream):
        n = len(stream)
        return [Group(i, min(i + 1, n - 1), float(stream.times[min(i + 1, n - 1)]) + 0.25, "timer")
                for i in range(0, n, 2)]


def test_any_other_rule_is_replayed_from_its_own_groups():
    s = stream([0, 0, 1, 3, 3.5], ["a", "b", "c", "d", "e"])
    assert through_engine(s, EveryOther(), fixed_provider(1.0, 2.0)) == as_tuples(EveryOther().group(s))


@dataclass(frozen=True)
class Recorder(Policy):
    """Records what it sees; sends per a script {instant_ns: k} and wakes per {instant_ns: wake_ns}."""

    script: tuple = ()
    wakes: tuple = ()
    log: list = field(default_factory=list, compare=False)

    def decide(self, obs):
        self.log.append((obs.now_ns, obs.arrivals, obs.woken, obs.n_held, len(obs.in_flight), obs.queued_ns,
                    [r.seq for r in obs.requests if r.is_ready]))
        sent = obs.memo.setdefault("sent", set())
        k = dict(self.script).get(obs.now_ns, 0)
        if k and obs.now_ns not in sent:
            sent.add(obs.now_ns)
            return Decision(k, "script", wake_ns=dict(self.wakes).get(obs.now_ns))
        return Decision(wake_ns=dict(self.wakes).get(obs.now_ns))


def recorded(s, policy, provider):
    return run_policy(s, policy, provider), policy.log


S = 1_000_000_000


def test_events_of_one_instant_are_applied_before_the_policy_is_asked_once():
    # updates at 0, 1, 1, 3. Send 1 at 0: service 1 s → ready at 1, audio 2 s → plays 1..3.
    # At 1: ready, two arrivals → one call sees them all (nothing in flight, q = 2 s).
    # Send 2 at 1: starts 1, ready 2, audio 2 s → plays 3..5. At 2: ready (q = 3 s).
    # At 3: first part ends, arrival (held 1, q = 2 s); send 1 → ready 4, plays 5..7.
    # At 4: ready (q = 3 s), the policy's last call: nothing is held or in flight and the
    # stream has ended, so the run ends there (5 and 7, the last parts' ends, are not asked).
    s = stream([0, 1, 1, 3])
    res, log = recorded(s, Recorder(script=((0, 1), (S, 2), (3 * S, 1))), fixed_provider(1.0, 2.0))
    assert log == [
        (0, 1, False, 1, 0, 0, []),
        (0, 1, False, 0, 1, 0, []),  # asked again after the send: nothing more
        (S, 2, False, 2, 0, 2 * S, [0]),
        (S, 2, False, 0, 1, 2 * S, [0]),
        (2 * S, 0, False, 0, 0, 3 * S, [0, 1]),
        (3 * S, 1, False, 1, 0, 2 * S, [0, 1]),
        (3 * S, 1, False, 0, 1, 2 * S, [0, 1]),
        (4 * S, 0, False, 0, 0, 3 * S, [0, 1, 2]),
    ]
    assert [(r.dispatch_ns, r.start_ns, r.ready_ns, r.end_ns, r.queued_ns, r.in_flight) for r in res.requests] == [
        (0, 0, S, 3 * S, 0, 0), (S, S, 2 * S, 5 * S, 2 * S, 0), (3 * S, 3 * S, 4 * S, 7 * S, 2 * S, 0)]


def test_zero_service_is_ready_at_the_same_instant_and_the_policy_is_asked_again():
    # send at 0 with no service: ready at 0 (q = 2 s) before the policy is asked again at 0
    s = stream([0, 0])
    res, log = recorded(s, Recorder(script=((0, 1),)), fixed_provider(0.0, 2.0))
    assert log[:2] == [(0, 2, False, 2, 0, 0, []), (0, 2, False, 1, 0, 2 * S, [0])]
    # the policy never sends the second update: the last event is the part's end at 2 s, after
    # which nothing more can happen, so the engine sends it then (trigger eos)
    assert as_tuples(res.groups) == [(0, 0, 0.0, "script"), (1, 1, 2.0, "eos")]


def test_a_wake_up_with_an_arrival_is_one_call_and_past_wake_ups_are_ignored():
    # at 0 ask to be woken at 2 s (the next arrival); at 2 s, send both and ask to be woken
    # at 1 s (ignored: not later than now). Ready at 2.5 s (audio 1 s: q = 1 s), not woken.
    s = stream([0, 2])
    res, log = recorded(s, Recorder(script=((2 * S, 2),), wakes=((0, 2 * S), (2 * S, S))), fixed_provider(0.5, 1.0))
    assert log == [(0, 1, False, 1, 0, 0, []), (2 * S, 1, True, 2, 0, 0, []), (2 * S, 1, True, 0, 1, 0, []),
                   (2 * S + S // 2, 0, False, 0, 0, S, [0])]
    assert as_tuples(res.groups) == [(0, 1, 2.0, "script")]


def test_a_part_ending_wakes_the_policy_and_silent_parts_are_skipped_or_held():
    # sends at 0 (ready 1, audio 0: silent) and at 1 via script; with skip q stays 0
    s = stream([0, 0.5])
    audio = [0.0, 1.0]
    res, log = recorded(s, Recorder(script=((0, 1), (S, 1))), fixed_provider(1.0, audio))
    assert [r.end_ns for r in res.requests] == [0, 3 * S]  # skip: C stays 0; second plays 2..3
    res_h = run_policy(s, Recorder(script=((0, 1), (S, 1))), fixed_provider(1.0, audio), silent="hold")
    assert [r.end_ns for r in res_h.requests] == [S, 3 * S]  # hold: C = r = 1


def test_sample_counts_make_durations_from_running_totals():
    # three parts of 1 sample at 3 Hz: 333 333 333, 333 333 334, 333 333 333 ns (totals 1/3, 2/3, 1 s rounded)
    s = stream([0, 0, 0])
    res = run_policy(s, parse_rule("immediate"), lambda req: Served(0.0, n_samples=1, sample_rate=3))
    assert [r.audio_ns for r in res.requests] == [333_333_333, 333_333_334, 333_333_333]


def test_a_splitter_cuts_a_group_into_serial_requests_dispatched_together():
    s = stream([0, 0], ["aaa bbb", "ccc"])
    res = run_policy(s, parse_rule("timer:w=0"), fixed_provider(1.0, 1.0),
                     splitter=lambda text: [(w, False) for w in text.split()])
    assert [(r.text, r.group, r.dispatch_ns, r.start_ns, r.ready_ns) for r in res.requests] == [
        ("aaa", 0, 0, 0, S), ("bbb", 0, 0, S, 2 * S), ("ccc", 0, 0, 2 * S, 3 * S)]


def test_closed_loop_policies_have_no_groups_without_feedback():
    with pytest.raises(InputError, match="closed-loop policy"):
        parse_rule("backlog").group(stream([0]))


def test_policies_are_rule_strings():
    b = parse_rule("backlog:below=0.5")
    assert b.canonical() == "backlog:below=0.5,max_chars=300,min_words=3"
    assert b.to_dict() == {"rule": "backlog", "below": 0.5, "max_chars": 300, "min_words": 3}
    assert parse_rule("pacer").canonical() == "pacer:min_audio_buffer=5,max_text_length=300"
    with pytest.raises(InputError, match="below"):
        parse_rule("backlog:below=-1")
