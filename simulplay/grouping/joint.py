"""Several outputs' policies run together on one source clock, their requests queued at
shared servers (docs/listening-grouping.md, "Sweeps and replay variants").

Under shared servers no output can be run alone: when its request starts depends on what
the other outputs sent. This driver runs each output's policy with the engine's own event
code (:mod:`simulplay.grouping.engine`: its state, arrivals, events and questions) and
advances the earliest event across the outputs. A sent request goes to ``queue`` (an online
shared-server queue, :class:`simulplay.sim.servers.ServerQueue`, passed in by the caller)
in place of the engine's serial synthesizer; the queue starts it once the simulation has
reached its start, and the request's readiness (``start`` plus its service, slowed as the
queue slows it) becomes the output's event, so each output sees its own request ready when
its service ends, and reads the service it met (readiness minus start).

At each instant ``t``, in order of the outputs' rank (the queue's tie order): the queue
starts what starts by ``t`` and became eligible before ``t``; then each output with an event
at ``t`` takes its turn as in the engine (events, arrivals, the policy asked until it sends
nothing; its held text sent as ``eos`` once nothing more can happen to it), the queue
starting, before and after each send, the requests eligible at ``t`` up to that output's
rank, so that a request ready at once is applied in its own output's turn. Outputs the
caller does not run (open-loop or recorded ones) are submitted to the queue beforehand.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass

from simulplay.core.timebase import NS_PER_S, scalar_ns
from simulplay.grouping.engine import READY, LoopResult, LoopState, Provider, apply_events, arrive, ask
from simulplay.grouping.policy import as_policy
from simulplay.grouping.registry import Rule
from simulplay.traces.model import Stream


@dataclass(frozen=True)
class JointOutput:
    """One output run in the joint simulation: its stream, rule (a policy, or an open-loop
    rule as one), provider, and its index in the queue."""

    stream: Stream
    rule: Rule
    provider: Provider
    queue_id: int


class _Joint(LoopState):
    """An output's engine state whose requests go to the shared queue."""

    def __init__(self, stream: Stream, silent: str, queue, queue_id: int, provider: Provider):
        super().__init__(stream, None, silent)
        self.queue, self.queue_id, self.provider = queue, queue_id, provider

    def submit(self, now: int, k: int, trigger: str, dispatch_s: float, upto: int | None = None) -> None:
        """Send a group (the engine's :meth:`LoopState.open_group`) and submit its requests."""
        for req in self.open_group(now, k, trigger, dispatch_s, upto):
            served = self.provider(req)
            if served.chunks is not None:
                raise ValueError("shared servers run requests whole (no chunk release)")
            req.service_ns, req.audio_ns = scalar_ns(served.service_s), self.audio_of(served)
            if req.service_ns < 0:
                raise ValueError(f"service time {served.service_s!r} s of request {req.seq} is negative")
            self.requests.append(req)
            self.in_flight.append(req.seq)
            self.queue.submit(self.queue_id, req.seq, req.dispatch_ns, req.service_ns)

    def started(self, seq: int, start: int, ready: int) -> None:
        """Request ``seq`` started at ``start`` and is ready at ``ready`` (ns)."""
        req = self.requests[seq]
        req.start_ns, req.service_ns = start, ready - start
        heapq.heappush(self.heap, (ready, READY, seq))

    def next_time(self) -> int | None:
        """Its next event (ns); None once it is done (the engine stops there) or has none."""
        if self.done():
            return None
        keys, n = self.keys, len(self.keys)
        nexts = ([int(keys[self.next_arrival])] if self.next_arrival < n else []) + \
            ([self.heap[0][0]] if self.heap else [])
        return min(nexts) if nexts else None

    def done(self) -> bool:
        return self.next_arrival == len(self.keys) and self.held_first == len(self.keys) and not self.in_flight

    def stuck(self) -> bool:
        """Nothing more can happen to it and it still holds text (the engine's ``eos``)."""
        return not self.done() and self.next_time() is None and not self.in_flight


def run_joint(outputs: Sequence[JointOutput], queue, *, silent: str = "skip") -> list[LoopResult]:
    """Run every output's policy together (module docstring); ``queue`` has ``submit(output,
    seq, dispatch_ns, service_ns)``, ``next_start()`` and ``pop(t, rank)`` (the started
    requests as (output, seq, start, ready)) and ``ranks`` (each queue output's rank).
    Returns each output's groups and requests, in the order given."""
    states = [_Joint(o.stream, silent, queue, o.queue_id, o.provider) for o in outputs]
    policies = [as_policy(o.rule) for o in outputs]
    by_queue = {o.queue_id: i for i, o in enumerate(outputs)}
    ranks = [queue.ranks[o.queue_id] for o in outputs]
    order = sorted(range(len(states)), key=ranks.__getitem__)
    never = 1 << 62
    nexts = [never] * len(states)  # each output's next event (ns), kept up to date

    def refresh(i: int) -> None:
        t = states[i].next_time()
        nexts[i] = never if t is None else t

    def pop(t: int, rank: float) -> None:
        for o, seq, start, ready in queue.pop(t, rank):
            if o in by_queue:
                states[by_queue[o]].started(seq, start, ready)
                refresh(by_queue[o])

    for i in order:
        refresh(i)
    while True:
        t, q = min(nexts, default=never), queue.next_start()
        if q is not None and q < t:
            t = q
        if t == never:
            break
        pop(t, -1)
        for i in order:
            if nexts[i] != t:
                continue
            out, rank = states[i], ranks[i]
            pop(t, rank)
            woken = apply_events(out, t)
            arrivals, now_s = arrive(out, t)
            while (sent := ask(policies[i], out, t, now_s, arrivals, woken)) is not None:
                out.submit(t, *sent)
                pop(t, rank)
                apply_events(out, t)
            if out.stuck():  # nothing more can happen to it: its held text goes
                out.submit(t, len(out.keys) - out.held_first, "eos", t / NS_PER_S)
                pop(t, rank)
            refresh(i)
        pop(t, float("inf"))
    left = [i for i, s in enumerate(states) if not s.done()]
    if left:
        raise ValueError(f"outputs {left} still hold text or requests when nothing more can happen")
    return [LoopResult(s.groups, s.requests) for s in states]
