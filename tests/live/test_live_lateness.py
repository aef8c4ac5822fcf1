"""The client's lateness is recorded as it happened: a loop blocked on purpose past two
requests' release times makes them late by the block's overrun, and the sends reach the
server after they are recorded as sent; the client's wake-up never comes before its time."""

import asyncio
import math

import pandas as pd
import pytest

from simulplay.core.keys import OUTPUT_ID
from simulplay.live import client as live_client
from simulplay.live.client import Endpoint, Record, run_sessions
from simulplay.live.tables import lateness, request_rows
from tests.live.fake_server import MODEL, ScriptedServer

BLOCK_END_S = 0.15  # the loop is held (busy, no await) until 0.15 s after the outputs' time 0
# output 0 releases at 0.10 s (due during the block: 0.05 s late), then at 0.30 s (on time);
# output 1 releases at 0.12 s (0.03 s late)
PLAN = [[0.10, 0.30], [0.12]]
LATE = {(0, 0): 0.05, (1, 0): 0.03}  # hand-worked: BLOCK_END_S − dispatch
TOL_S = 0.025  # the wake-up after the block on a busy 2-core machine


async def _blocked_run(endpoint: Endpoint, sessions: list[list[Record]]) -> None:
    async def block() -> None:
        first = sessions[0][0]
        while math.isnan(first.t0):  # the session has not started: let it start (an event, not a time)
            await asyncio.sleep(0)
        while live_client.clock() < first.t0 + BLOCK_END_S:  # hold the loop: no task runs meanwhile
            pass

    await asyncio.gather(run_sessions(endpoint, sessions), block())


def test_a_blocked_loop_makes_requests_late_by_the_block():
    with ScriptedServer({}, default=[("audio", 240)]) as server:
        endpoint = Endpoint(url=server.url + "/audio/speech", model=MODEL, timeout=10.0)
        sessions = [[Record(i, k, t, f"o{i} r{k}") for k, t in enumerate(times)] for i, times in enumerate(PLAN)]
        asyncio.run(_blocked_run(endpoint, sessions))
        arrivals = dict(server.received)
    records = [r for s in sessions for r in s]
    assert all(r.ok for r in records), [r.error for r in records]
    # both sessions started together (one time 0 up to the loop's turn), as the block assumes
    assert abs(sessions[0][0].t0 - sessions[1][0].t0) < 0.01
    for rec in records:
        assert rec.sent_s >= rec.released_s >= rec.due_s == rec.dispatch_s  # nothing in flight before: due = dispatch
        # the server received the request after the client recorded its send (same clock, one process)
        assert arrivals[rec.text] >= rec.t0 + rec.sent_s
    for (o, k), late in LATE.items():
        rec = sessions[o][k]
        assert rec.released_s >= BLOCK_END_S  # it cannot have woken while the loop was held
        assert rec.released_s - rec.due_s == pytest.approx(late, abs=TOL_S)
        assert rec.sent_s - rec.due_s == pytest.approx(late, abs=TOL_S)
    assert sessions[0][1].sent_s - sessions[0][1].due_s < TOL_S  # after the block: on time again

    # the requests table and its summary carry the same lateness (s and ms)
    plan = pd.DataFrame([{**{k: str(r.output) for k in OUTPUT_ID}, "seq": r.seq, "text": r.text} for r in records])
    rows = request_rows(plan, records)
    assert rows["release_late_s"].tolist() == pytest.approx([r.released_s - r.due_s for r in records])
    assert rows["send_late_s"].tolist() == pytest.approx([r.sent_s - r.due_s for r in records])
    summary = lateness(rows)
    assert summary["send"]["max_ms"] == pytest.approx(max(LATE.values()) * 1e3, abs=TOL_S * 1e3)


def test_sleep_until_never_returns_early():
    async def run() -> list[float]:
        start = live_client.clock()
        early = []
        for k in range(20):  # deadlines around the timer/yield switch, and past ones
            deadline = start + 0.002 * k + (live_client.SPIN_S if k % 2 else 0.0) - 0.001
            await live_client.sleep_until(deadline)
            early.append(deadline - live_client.clock())
        return early

    assert max(asyncio.run(run())) <= 0
