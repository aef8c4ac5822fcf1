"""A closed-loop output's recorded groups replayed under another clock say so."""

import simulplay
from simulplay.grouping.policy import LOOP_OTHER_CLOCK, LOOP_RECORDED
from tests.support.factories import manifest

BACKLOG = "backlog:below=1,max_chars=300,min_words=3"


def table():
    reqs = [(0.0, 0.5, 2.0), (2.0, 0.5, 1.0)]
    return manifest({(t, s, c): reqs for t in ("t1", "t2") for s in ("A", "F") for c in ("immediate", BACKLOG)})


def loops(out):
    return {(r["condition"], s.get("loop")) for r, s in zip(out.summary.to_dict("records"), out.signatures)}


def test_the_recorded_clock_is_marked_closed_and_another_clock_is_named():
    assert loops(simulplay.replay(table())) == {("immediate", None), (BACKLOG, LOOP_RECORDED)}
    for variant in ({"service": "zero"}, {"service": "scale=2"}, {"silent_parts": "hold"}):
        assert loops(simulplay.replay(table(), **variant)) == {("immediate", None), (BACKLOG, LOOP_OTHER_CLOCK)}


def test_the_eta_table_notes_a_closed_loop_condition_under_another_clock():
    measured = simulplay.replay(table())
    zero = simulplay.replay(table(), service="zero")
    assert not any("closed loop" in n for n in simulplay.eta(measured, a="A", f="F", reference="immediate").notes)
    notes = simulplay.eta(zero, a="A", f="F", reference="immediate").notes
    assert [n for n in notes if n.startswith("closed loop: ")] == [
        f"closed loop: {BACKLOG} replayed with the groups recorded under the measured clock; under this clock the "
        "policy would have decided other groups (not decided again here)"]
