"""A policy on a real clock: the engine's events, with readiness measured instead of computed.

The discrete-event engine (:mod:`simulplay.grouping.engine`) knows each request's service
time when it sends it, so it computes every readiness ahead. On a real clock (a live run)
a request's readiness is known only when its last byte arrives. :class:`WallClockLoop`
keeps the engine's state (:class:`~simulplay.grouping.engine.LoopState`) and its order of
events, and asks the same policy object at the same kinds of instants: an update's arrival,
a request's readiness (reported by :meth:`WallClockLoop.ready` with the measured times), the
end of a part's playback, a wake-up the policy asked for. The caller reads the clock and
calls :meth:`WallClockLoop.advance` with the current time: every instant up to it is
processed in order, each one as the engine would (events applied, then the policy asked
until it sends nothing), and the requests sent come back, each labelled with the instant it
was decided at (its dispatch), which the caller then sends, one in flight at a time.

Between calls the caller sleeps until :meth:`WallClockLoop.next_instant` or until a
request it sent becomes ready, whichever comes first. When every update has arrived,
nothing is in flight and nothing else is due, the held text goes at once (trigger ``eos``),
as in the engine. Times are int64 nanoseconds since the output's time 0.
"""

from __future__ import annotations

import heapq

from simulplay.core.timebase import NS_PER_S
from simulplay.grouping.engine import READY, LoopState, Served, apply_events, arrive, ask
from simulplay.grouping.policy import LoopRequest, as_policy
from simulplay.grouping.registry import Rule
from simulplay.traces.model import Stream


class WallClockLoop:
    """One output's policy on a real clock (module docstring); ``splitter`` as the
    engine's (text → ``[(piece, glued), …]``)."""

    def __init__(self, stream: Stream, rule: Rule, splitter=None):
        self.policy = as_policy(rule)
        self.state = LoopState(stream, splitter, "skip")
        self.t = 0  # the last instant processed (ns)

    @property
    def requests(self) -> list[LoopRequest]:
        """Every request sent so far, in order (ready ones with their clocks)."""
        return self.state.requests

    @property
    def done(self) -> bool:
        """Every update arrived and sent, and every request ready."""
        st, n = self.state, len(self.state.keys)
        return st.next_arrival == n and st.held_first == n and not st.in_flight

    def next_instant(self) -> int | None:
        """The next instant something is due at (ns): an arrival, a readiness already
        reported, the end of a part, a wake-up, or now for the held text at the end; None
        while only an in-flight request's readiness can come (or when done)."""
        st, n = self.state, len(self.state.keys)
        nexts = ([int(st.keys[st.next_arrival])] if st.next_arrival < n else []) + ([st.heap[0][0]] if st.heap else [])
        if nexts:
            return min(nexts)
        if st.held_first < n and not st.in_flight:
            return self.t
        return None

    def ready(self, seq: int, sent_ns: int, ready_ns: int, served: Served) -> None:
        """Request ``seq`` was sent at ``sent_ns`` and its last audio arrived at ``ready_ns``
        (nanoseconds; ``served``: its audio); its readiness is applied at its instant (never before an
        instant already processed)."""
        req = self.state.requests[seq]
        req.start_ns, req.service_ns = int(sent_ns), int(ready_ns) - int(sent_ns)
        req.audio_ns = self.state.audio_of(served)
        heapq.heappush(self.state.heap, (max(int(ready_ns), self.t), READY, seq))

    def advance(self, now_ns: int) -> list[LoopRequest]:
        """Process every instant up to ``now_ns`` (nanoseconds) in order; the requests sent
        (their ``dispatch_ns`` the instant each was decided at)."""
        st, sent = self.state, []
        while (t := self.next_instant()) is not None and t <= now_ns:
            self.t = t
            if not st.heap and st.next_arrival == len(st.keys):  # nothing more can happen: the held text goes
                sent += self._send(t, len(st.keys) - st.held_first, "eos", t / NS_PER_S)
                continue
            woken = apply_events(st, t)
            arrivals, now_s = arrive(st, t)
            while (send := ask(self.policy, st, t, now_s, arrivals, woken)) is not None:
                sent += self._send(t, *send)
        return sent

    def _send(self, t: int, k: int, trigger: str, dispatch_s: float, upto: int | None = None) -> list[LoopRequest]:
        reqs = self.state.open_group(t, k, trigger, dispatch_s, upto)
        for req in reqs:
            self.state.requests.append(req)
            self.state.in_flight.append(req.seq)
        return reqs
