"""The discrete-event engine that runs a policy on one output (docs/listening-grouping.md).

Events on the source clock, int64 ns: an update arrives (``a_i``); a request becomes ready
(``r_j``: its duration and service time now known); a part finishes playing (``C_j``); a
wake-up the policy asked for. At each distinct instant every event of that instant is
applied (ready, playback ends, arrivals, wake-ups; readiness in request order), then the
policy is asked (:mod:`simulplay.grouping.policy`); after a send, what the send caused at
the same instant is applied (a zero-service request is ready at once) and the policy is
asked again, until it sends nothing. When nothing more can happen and the policy still
holds text, the engine sends it (trigger ``eos``).

The synthesizer is serial with the requests in order, ``start_j = max(dispatch_j,
r_{j−1})``, ``r_j = start_j + service_j``; playback is serial, ``p_j = max(r_j, C_{j−1})``,
``C_j = p_j + d_j``, silent parts skipped (or holding the clock at ``r_j`` with
``silent="hold"``); under chunk release (the provider gives a request's chunks) each chunk
plays from its own readiness, ``start_j`` plus its offset, so the queue rises chunk by
chunk. Each request's service and audio come from ``provider`` when it is
sent, so the engine runs on real synthesis, on a duration model or on fixed values alike;
its numbers enter the clock as replay reads them back from a manifest: dispatch and
service through :func:`~simulplay.core.timebase.to_ns` (its scalar twin ``scalar_ns``), audio
from running sample totals (:func:`~simulplay.core.timebase.dur_ns`) when the provider gives samples. A splitter may
cut a group into several requests, all dispatched with the group.

A policy may send a span of the held text (``Decision.upto``: a framework's splitter cuts
inside updates): the group is the characters from where the held text starts to ``upto`` of
the stream's joined text, edge whitespace stripped (``Group.span``); the updates it touches
are ``first..last``, and an update stays held until its last character other than
whitespace is sent.
"""

from __future__ import annotations

import heapq
from bisect import bisect_right
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass

from simulplay.core.timebase import NS_PER_S, from_ns, scalar_dur_ns, scalar_ns
from simulplay.grouping.policy import LoopRequest, Observation, Policy, as_policy
from simulplay.grouping.registry import Group, Rule
from simulplay.grouping.requests import span_text
from simulplay.grouping.rules import instant_keys
from simulplay.traces.model import Stream, join_texts

READY, PLAYED, CHUNK, WAKE = 0, 1, 2, 3
SILENT = ("skip", "hold")


@dataclass(frozen=True)
class Served:
    """What synthesis gave one request: its service time (seconds, as the manifest holds
    it) and its audio, as ``n_samples`` at ``sample_rate`` Hz or, without samples, as
    ``audio_s`` seconds. ``chunks`` (chunk release): each chunk's readiness after the
    request's start (seconds) and its samples, in order; the chunks then play as they are
    ready, in place of the whole request at its readiness (their samples make up
    ``n_samples``)."""

    service_s: float
    audio_s: float = 0.0
    n_samples: int | None = None
    sample_rate: int | None = None
    chunks: tuple[tuple[float, int], ...] | None = None


Provider = Callable[[LoopRequest], Served]


@dataclass(frozen=True)
class LoopResult:
    """One output's run: its groups (as a rule's) and its requests with their clocks."""

    groups: list[Group]
    requests: list[LoopRequest]


def fixed_provider(service_s: float | Sequence[float], audio_s: float | Sequence[float]) -> Provider:
    """A provider of fixed values: one service time and one duration for every request, or
    one per request in order (seconds)."""
    def pick(v, j):
        return float(v[j]) if isinstance(v, Sequence) else float(v)

    return lambda req: Served(pick(service_s, req.seq), pick(audio_s, req.seq))


class LoopState:
    """The mutable state of one output's run: arrivals, held updates, requests, the event
    heap and the player's queue (shared by the engine and the wall-clock driver)."""

    def __init__(self, stream: Stream, splitter, silent: str):
        if silent not in SILENT:
            raise ValueError(f"silent must be one of {', '.join(SILENT)}, got {silent!r}")
        self.stream, self.splitter, self.silent = stream, splitter, silent
        self.keys = instant_keys(stream.times)
        self.next_arrival = 0
        self.held_first = 0
        self.requests: list[LoopRequest] = []
        self.in_flight: list[int] = []
        self.heap: list[tuple[int, int, int]] = []
        self.groups: list[Group] = []
        self.synth_free = 0  # r of the last request sent (ns)
        self.chunk_parts: list[tuple[int, int]] = []  # chunk release: (request seq, audio ns) per chunk event
        self.end = 0  # C of the last ready request (ns)
        self.samples = 0
        self.pushed = 0  # the audio of every ready request (ns)
        self.rate: int | None = None
        self.memo: dict = {}
        self.sent_chars = 0  # characters of the joined text sent (span sends)
        self.pushes = None  # the stream as pushes, made at the first span send

    def span_pushes(self):
        """The stream as pushes (character spans), made at the first span send."""
        if self.pushes is None:
            from simulplay.grouping.frameworks.pushes import Pushes

            self.pushes = Pushes(self.stream)
            ends = [a + len(t) for a, t in zip(self.pushes.starts, self.pushes.texts)]
            self.update_ends = ends
        return self.pushes

    def available_chars(self) -> int:
        """The end of the last arrived update in the joined text."""
        return self.update_ends[self.next_arrival - 1] if self.next_arrival else 0

    def queued(self, now: int) -> int:
        """q(t): the audio queued for the listener at ``now`` (ns)."""
        return max(0, self.end - now)

    def observe(self, now: int, now_s: float, arrivals: int, woken: bool) -> Observation:
        """What the policy sees at ``now`` (ns; ``now_s`` the same instant in seconds)."""
        return Observation(now, now_s, self.stream, self.keys, self.held_first, self.next_arrival,
                           self.next_arrival == len(self.keys), self.requests,
                           [self.requests[j] for j in self.in_flight], self.queued(now), self.pushed, arrivals, woken,
                           self.memo, self.sent_chars)

    def open_group(self, now: int, k: int, trigger: str, dispatch_s: float,
                   upto: int | None = None) -> list[LoopRequest]:
        """The first ``k`` held updates (or the held text up to ``upto``) as one group sent
        at ``now`` (ns), labelled ``dispatch_s`` (seconds): its requests (one per piece of the
        splitter; none for whitespace alone), not yet started; what they hold is no longer held."""
        s, first = self.stream, self.held_first
        last = first + k - 1
        span = None
        if upto is not None or self.pushes is not None:  # a span (after one, every send is one)
            p = self.span_pushes()
            if upto is None:
                upto = self.update_ends[last]
            group = p.group(self.sent_chars, upto, 0, trigger)
            text, glue = span_text(p.joined, self.sent_chars, upto)
            self.sent_chars = upto
            rest = len(p.joined[upto:]) - len(p.joined[upto:].lstrip())
            self.held_first = min(bisect_right(p.starts, upto + rest) - 1 if upto + rest < len(p.joined)
                                  else len(s), self.next_arrival)
            if group is None:  # only whitespace: nothing to speak
                return []
            first, last, span = group.first, group.last, group.span
        else:
            text = join_texts(s.texts[first:last + 1], s.glue[first:last + 1])
            glue = bool(s.glue[first]) if first > 0 else False
            self.held_first = last + 1
        pieces = self.splitter(text) if self.splitter is not None else [(text, False)]
        dispatch = scalar_ns(dispatch_s)
        if abs(dispatch - now) > 1:
            raise ValueError(f"dispatch label {dispatch_s!r} s is not the instant {from_ns(now)!r} s")
        seen_q, seen_flight = self.queued(now), len(self.in_flight)
        self.groups.append(Group(first, last, dispatch_s, trigger, span))
        return [LoopRequest(len(self.requests) + p, len(self.groups) - 1, piece, glue if p == 0 else bool(glued),
                            first, last, trigger, dispatch_s, dispatch, seen_q, seen_flight, span=span)
                for p, (piece, glued) in enumerate(pieces)]

    def send(self, now: int, k: int, trigger: str, dispatch_s: float,
             upto: int | None = None) -> Generator[LoopRequest, Served, None]:
        """:meth:`open_group` (``now`` in ns, ``dispatch_s`` in seconds), each request yielded and
        its :class:`Served` taken back: its start on the serial synthesizer, its service and
        audio, its readiness scheduled."""
        for req in self.open_group(now, k, trigger, dispatch_s, upto):
            req.start_ns = start = max(req.dispatch_ns, self.synth_free)
            served = yield req
            service = scalar_ns(served.service_s)
            if service < 0:
                raise ValueError(f"service time {served.service_s!r} s of request {req.seq} is negative")
            if served.chunks is None:
                req.service_ns, req.audio_ns = service, self.audio_of(served)
            else:  # chunk release: each chunk ready at the start plus its offset, played from then
                req.service_ns, req.audio_ns, req.chunked = service, 0, True
                for offset_s, n in served.chunks:
                    audio = self.audio_of(Served(0.0, n_samples=n, sample_rate=served.sample_rate))
                    req.audio_ns += audio
                    heapq.heappush(self.heap, (max(start + scalar_ns(offset_s), now), CHUNK, len(self.chunk_parts)))
                    self.chunk_parts.append((req.seq, audio))
            self.synth_free = start + service
            self.requests.append(req)
            self.in_flight.append(req.seq)
            heapq.heappush(self.heap, (max(self.synth_free, now), READY, req.seq))

    def audio_of(self, served: Served) -> int:
        """A ready request's audio (ns), from running sample totals when it gives samples."""
        if served.n_samples is None:
            return scalar_ns(served.audio_s)
        n, sr = int(served.n_samples), served.sample_rate
        if n == 0:
            return 0
        if self.rate is None or self.rate == sr:
            self.rate = int(sr)
            before, self.samples = self.samples, self.samples + n
            return scalar_dur_ns(self.samples, sr) - scalar_dur_ns(before, sr)
        return scalar_dur_ns(n, sr)  # a second sample rate: this part alone

    def ready(self, seq: int) -> None:
        """Apply request ``seq``'s readiness: its playback and the end of its audio."""
        req = self.requests[seq]
        r = req.start_ns + req.service_ns
        if req.chunked:  # its audio entered playback chunk by chunk
            req.ready_ns, req.end_ns = r, self.end
            self.in_flight.remove(seq)
            return
        if req.audio_ns > 0:
            self.end = max(r, self.end) + req.audio_ns
            heapq.heappush(self.heap, (self.end, PLAYED, seq))
        elif self.silent == "hold":
            self.end = max(r, self.end)
        req.ready_ns, req.end_ns = r, self.end
        self.pushed += req.audio_ns
        self.in_flight.remove(seq)

    def chunk(self, index: int, t: int) -> None:
        """Apply chunk ``index``'s readiness at ``t`` (ns): it plays after what is queued."""
        seq, audio = self.chunk_parts[index]
        if audio > 0:
            self.end = max(t, self.end) + audio
            heapq.heappush(self.heap, (self.end, PLAYED, seq))
        elif self.silent == "hold":
            self.end = max(t, self.end)
        self.pushed += audio


def run_policy(stream: Stream, rule: Rule, provider: Provider, *, splitter=None,
               silent: str = "skip") -> LoopResult:
    """Run ``rule`` (a policy, or an open-loop rule as one) on one stream in closed loop.

    ``provider(request)`` gives each request's :class:`Served` when it is sent;
    ``splitter`` (text → ``[(piece, glued), …]``, e.g. ``Splitter.split``) cuts each group
    into requests. Returns the groups and the requests with their clocks (ns).
    """
    steps = policy_steps(stream, rule, splitter=splitter, silent=silent)
    try:
        req = next(steps)
        while True:
            req = steps.send(provider(req))
    except StopIteration as done:
        return done.value


def policy_steps(stream: Stream, rule: Rule, *, splitter=None,
                 silent: str = "skip") -> Generator[LoopRequest, Served, LoopResult]:
    """:func:`run_policy` as a generator: it yields each request when it is sent and takes
    its :class:`Served` back (``send``), so that a caller can synthesize it elsewhere (a
    worker process) before the run goes on; it returns the :class:`LoopResult`."""
    policy = as_policy(rule)
    out = LoopState(stream, splitter, silent)
    keys, n = out.keys, len(out.keys)
    t = 0
    while True:
        if out.next_arrival == n and out.held_first == n and not out.in_flight:
            break
        nexts = ([int(keys[out.next_arrival])] if out.next_arrival < n else []) + ([out.heap[0][0]] if out.heap else [])
        if not nexts:  # nothing more can happen: the policy's held text goes
            yield from out.send(t, n - out.held_first, "eos", t / NS_PER_S)
            continue
        t = min(nexts)
        woken = apply_events(out, t)
        arrivals, now_s = arrive(out, t)
        while (sent := ask(policy, out, t, now_s, arrivals, woken)) is not None:
            yield from out.send(t, *sent)
            apply_events(out, t)
    return LoopResult(out.groups, out.requests)


def arrive(out: LoopState, t: int) -> tuple[int, float]:
    """Apply the arrivals at instant ``t``: how many arrived, and the instant in seconds
    (the last arrival's own float time when one arrived)."""
    arrivals, keys = 0, out.keys
    while out.next_arrival < len(keys) and keys[out.next_arrival] == t:
        out.next_arrival += 1
        arrivals += 1
    return arrivals, float(out.stream.times[out.next_arrival - 1]) if arrivals else t / NS_PER_S


def ask(policy: Policy, out: LoopState, t: int, now_s: float, arrivals: int,
        woken: bool) -> tuple[int, str, float, int | None] | None:
    """Ask the policy at instant ``t`` (ns; ``now_s`` in seconds); its wake-up goes on the heap. What it sends, as
    :meth:`LoopState.send`'s arguments after the instant (held updates, trigger, dispatch
    label, span end), or None when it sends nothing."""
    d = policy.decide(out.observe(t, now_s, arrivals, woken))
    if d.wake_ns is not None and d.wake_ns > t:
        heapq.heappush(out.heap, (int(d.wake_ns), WAKE, -1))
    label = now_s if d.dispatch_s is None else d.dispatch_s
    if d.upto is not None:
        out.span_pushes()
        if not out.sent_chars < d.upto <= out.available_chars():
            raise ValueError(f"span end {d.upto} is not after {out.sent_chars} and within the "
                             f"{out.available_chars()} characters that have arrived")
        return 0, d.trigger, label, d.upto
    k = min(d.send, out.next_arrival - out.held_first)
    return (k, d.trigger, label, None) if k > 0 else None


def apply_events(out: LoopState, t: int) -> bool:
    """Apply the engine's events at ``t`` (ready in order, playback ends, wake-ups);
    whether a wake-up fell at ``t``."""
    woken = False
    while out.heap and out.heap[0][0] <= t:
        at, kind, seq = heapq.heappop(out.heap)
        if kind == READY:
            out.ready(seq)
        elif kind == CHUNK:
            out.chunk(seq, at)
        woken |= kind == WAKE
    return woken
