"""Closed-loop outputs decided again jointly under shared servers (hand-worked)."""

import numpy as np
import pandas as pd
import pytest

from simulplay.durationmodel.fit import DurationFit
from simulplay.durationmodel.modelled import PanelModel
from simulplay.durationmodel.redecide_shared import redecide_shared
from simulplay.durationmodel.replay_again import labelled
from simulplay.grouping.engine import Served, run_policy
from simulplay.grouping.joint import JointOutput, run_joint
from simulplay.grouping.policy import LOOP_DECIDED_AGAIN, LOOP_OTHER_CLOCK
from simulplay.grouping.registry import parse_rule
from simulplay.manifest import validate_manifest
from simulplay.sim import replay
from simulplay.sim.servers import Servers, shared_clock
from simulplay.sim.servicefit import ServiceFit
from tests.support.factories import stream

BACKLOG = "backlog:below=1,max_chars=300,min_words=1"
A = stream([0], ["a1"], source_s=3.0, talk_id="t1")
B = stream([0, 1.2, 1.5], ["b1", "b2", "b3"], source_s=3.0, talk_id="t2")
# audio = 0.1 s + 0.2 s a character, service 0.2 s (the duration model of texts the run lacks)
MODEL = PanelModel((), DurationFit((), ("intercept", "chars"), (0.1, 0.2), ("intercept", "chars"), 1, 0),
                   ServiceFit((), (0.2, 0.0, 0.0), (), 1, 0.0), 0)
# The run (each output alone, service 1.0 s and audio 0.5 s a request). t1: "a1" goes at 0. t2: "b1" goes at 0
# (ready 1.0, plays 1.0–1.5); at 1.2 "b2" arrives, q = 0.3 ≤ 1 and nothing in flight: it goes (ready 2.2); "b3"
# (1.5, the last) waits for it and goes at 2.2 (q = 0.5).
RECORDED = [("t1", "a1", 0.0, 0.0), ("t2", "b1", 0.0, 0.0), ("t2", "b2", 1.2, 0.3), ("t2", "b3", 2.2, 0.5)]
IMMEDIATE = [("t1", "a1", 0.0), ("t2", "b1", 0.0), ("t2", "b2", 1.2), ("t2", "b3", 1.5)]


def run_manifest():
    rows = [{"condition": BACKLOG, "talk_id": t, "text": x, "dispatch_s": d, "service_s": 1.0, "trigger": "backlog",
             "queued_s": q, "in_flight": 0} for t, x, d, q in RECORDED]
    rows += [{"condition": "immediate", "talk_id": t, "text": x, "dispatch_s": d, "service_s": 0.3,
              "trigger": "immediate"} for t, x, d in IMMEDIATE]
    df = pd.DataFrame(rows)
    df["seq"] = df.groupby(["condition", "talk_id"]).cumcount()
    df = df.assign(system="A", source_s=3.0, glue=False, audio_s=0.5, n_updates=1, group=df["seq"])
    return validate_manifest(df, "test")


def offsets(rep):
    return {(r.condition, r.talk_id): r.offset_s for r in rep.summary.itertuples()}


def test_one_shared_server_delays_a_readiness_and_the_policy_joins_what_it_held():
    # servers=1 over each condition's two talks (share=panel; t1 ranks first). Decided jointly: at 0 "a1" and "b1"
    # are both sent; "a1" runs 0–1.0 and "b1" waits for the server, 1.0–2.0 (alone it was ready at 1.0). At 1.2
    # "b2" and at 1.5 "b3" arrive while "b1" is in flight: held. At 2.0 "b1" is ready (plays 2.0–2.5), q = 0.5 ≤ 1,
    # nothing in flight: "b2 b3" goes as one group (a text the run lacks: modelled, 0.1 + 0.2 × 5 = 1.1 s of audio,
    # service 0.2 s), starts at 2.0 (the server free since 1.0), ready 2.2, plays 2.5–3.6: L(t2) = +0.6 s.
    # t1: "a1" ready 1.0, plays 1.0–1.5: L(t1) = −1.5 s. The recorded groups on one server: "b1" 1.0–2.0,
    # "b2" eligible at max(1.2, 2.0) = 2.0, ready 3.0, "b3" at 3.0, ready 4.0, plays 4.0–4.5: L(t2) = +1.5 s.
    # The open-loop condition is its own share group (K = 1): "a1" 0–0.3; "b1" 0.3–0.6; "b2" 1.2–1.5; "b3"
    # 1.5–1.8; t2 plays 0.6–1.1, 1.5–2.0, 2.0–2.5: L = −0.5 s; t1 0.3–0.8: L = −2.2 s, with or without deciding.
    m, servers = run_manifest(), Servers(1)
    plain = replay(m, service=servers)
    assert offsets(plain) == pytest.approx({(BACKLOG, "t1"): -1.5, (BACKLOG, "t2"): 1.5,
                                            ("immediate", "t1"): -2.2, ("immediate", "t2"): -0.5}, abs=1e-9)
    decided = redecide_shared(m, [A, B], servers, models=[MODEL])
    rows = decided.manifest[decided.manifest["condition"] == BACKLOG]
    assert [(r.talk_id, r.text, r.dispatch_s, r.trigger, r.queued_s) for r in rows.itertuples()] == [
        ("t1", "a1", 0.0, "backlog", 0.0), ("t2", "b1", 0.0, "backlog", 0.0), ("t2", "b2 b3", 2.0, "backlog", 0.5)]
    assert list(rows["service_s"]) == pytest.approx([1.0, 1.0, 0.2]) and list(rows["audio_s"]) == pytest.approx(
        [0.5, 0.5, 1.1])
    assert decided.outputs == {("t1", "A", BACKLOG): (1, 0), ("t2", "A", BACKLOG): (2, 1)}
    rep = labelled(replay(decided.manifest, service=decided.service), decided)
    assert offsets(rep) == pytest.approx({(BACKLOG, "t1"): -1.5, (BACKLOG, "t2"): 0.6,
                                          ("immediate", "t1"): -2.2, ("immediate", "t2"): -0.5}, abs=1e-9)
    for cond in ("immediate",):  # the open-loop outputs: the plain shared-server replay to the nanosecond
        assert {k: v for k, v in offsets(rep).items() if k[0] == cond} == \
            {k: v for k, v in offsets(plain).items() if k[0] == cond}
    loops = {(r.condition, r.talk_id): s.get("loop") for r, s in zip(rep.summary.itertuples(), rep.signatures)}
    assert loops == {(BACKLOG, "t1"): f"{LOOP_DECIDED_AGAIN}, 0 of 1 requests modelled",
                     (BACKLOG, "t2"): f"{LOOP_DECIDED_AGAIN}, 1 of 2 requests modelled",
                     ("immediate", "t1"): None, ("immediate", "t2"): None}


def test_an_output_that_cannot_be_decided_again_queues_with_its_recorded_requests():
    # Without t1's trace, t1 keeps its recorded "a1" (0, 1.0 s), which still holds the server 0–1.0: t2 decides
    # as above (L = +0.6 s), labelled; t1 labelled as recorded under another clock.
    m = run_manifest()
    decided = redecide_shared(m, [B], Servers(1), models=[MODEL])
    assert decided.kept == {("t1", "A", BACKLOG): "its trace is not among the run's traces"}
    rep = labelled(replay(decided.manifest, service=decided.service), decided)
    rep.summary, rep.signatures = rep.summary.iloc[:2], rep.signatures[:2]
    assert offsets(rep) == pytest.approx({(BACKLOG, "t1"): -1.5, (BACKLOG, "t2"): 0.6}, abs=1e-9)
    assert [s["loop"] for s in rep.signatures] == [LOOP_OTHER_CLOCK, f"{LOOP_DECIDED_AGAIN}, 1 of 2 requests modelled"]


def test_with_a_server_per_output_the_joint_run_is_each_output_alone():
    rule = parse_rule(BACKLOG)

    def provider(req):
        return Served(0.3 + 0.01 * len(req.text), 0.2 * len(req.text))

    streams = [stream([0, 0, 1, 2], ["aa b.", "cc", "dd e.", "f"], talk_id="t1"),
               stream([0, 0.5, 1.5, 3], ["xx y.", "ww", "vv u.", "s"], talk_id="t2")]
    joint = run_joint([JointOutput(s, rule, provider, i) for i, s in enumerate(streams)], Servers(2).queue([0, 1]))
    for s, j in zip(streams, joint):
        alone = run_policy(s, rule, provider)
        assert j.groups == alone.groups
        assert [(r.start_ns, r.ready_ns, r.end_ns) for r in j.requests] == \
            [(r.start_ns, r.ready_ns, r.end_ns) for r in alone.requests]


def test_the_online_queue_gives_the_shared_clock_with_a_load_curve_and_a_calibrated_slowdown():
    rng = np.random.default_rng(3)
    sizes = [5, 3, 6, 4]
    codes = np.repeat(np.arange(4), sizes)
    dispatch = np.concatenate([np.sort(rng.integers(0, 5_000, n)) for n in sizes]).astype(np.int64)
    service = rng.integers(100, 3_000, len(codes)).astype(np.int64)
    servers = Servers(2, curve="1:1.0;2:1.5", flight="1:1.0;4:1.25")
    ranks = [2, 0, 3, 1]
    want = shared_clock(codes, dispatch, service, np.zeros(4, int), np.array(ranks), 2, list(servers._factors),
                        servers.flight)
    queue = servers.queue(ranks)
    for j, (c, d, s) in enumerate(zip(codes, dispatch, service)):
        queue.submit(int(c), j, int(d), int(s))
    started = {}
    while (t := queue.next_start()) is not None:
        started |= {j: (s, r) for _, j, s, r in queue.pop(t, float("inf"))}
    assert [started[j] for j in range(len(codes))] == list(zip(want.start.tolist(), want.ready.tolist()))
    assert (want.slowdown != 1.0).any()  # the slowdowns were met


def test_a_server_per_output_decides_the_recorded_groups_with_the_measured_L_exactly():
    from tests.durationmodel.test_redecide import S as ONE
    from tests.durationmodel.test_redecide import backlog_rows
    from tests.durationmodel.test_redecide import run_manifest as one_output_run

    m = one_output_run()
    decided = redecide_shared(m, [ONE], Servers(1, share="output"))
    assert backlog_rows(decided.manifest) == backlog_rows(m)
    assert offsets(replay(decided.manifest, service=decided.service)) == offsets(replay(m))  # to the nanosecond
