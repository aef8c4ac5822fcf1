"""Policies: grouping that may see the listener and the synthesizer (docs/listening-grouping.md).

A policy is a grouping rule that decides while its output plays. It is registered in the
same registry as the rules (RULE-string syntax, ``to_dict``, signatures, plugins through
``simulplay.rules`` and ``--plugin``) and run per output by the discrete-event engine of
:mod:`simulplay.grouping.engine`, which asks it at every distinct event instant (an update
arrives, a request becomes ready, a part finishes playing, a wake-up it asked for) what to
do, once every event of that instant is applied. The policy sees an :class:`Observation`
of its own output and answers a :class:`Decision`: send the first ``k`` held updates now
as one group, and/or wake me at a later instant. After a send the engine applies what the
send caused at the same instant (a request with zero service is ready at once) and asks
again, until the policy sends nothing: so one instant may release several groups
(``immediate`` sends tied updates one by one).

Every open-loop rule is a policy that ignores the feedback: :func:`as_policy` gives the
built-in rules' own event logic (``immediate``, ``timer``, ``punct``, ``words``), and any
other rule is replayed from its own groups. Through the engine they give exactly the
rule's groups and dispatch times.

Times are int64 nanoseconds from source start (``*_ns``); float seconds only label
dispatches (``dispatch_s``), so that open-loop groups keep their exact float dispatch.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, ClassVar

import numpy as np

from simulplay.core.errors import InputError
from simulplay.grouping.registry import Committing, Group, Rule, groups_of
from simulplay.traces.model import Stream, join_texts


class ClosedLoopError(InputError):
    """A closed-loop policy was asked for groups without synthesis feedback."""


@dataclass(slots=True)
class LoopRequest:
    """One request an output sent, as the engine knows it (ns from source start).

    ``ready_ns``, ``audio_ns``, ``service_ns`` and ``end_ns`` are filled only once the
    request is ready (a policy never sees them earlier); ``end_ns`` is ``C_j``, when its
    audio finishes playing (under ``skip``, a silent request keeps the previous end).
    ``queued_ns`` and ``in_flight`` are what the policy saw when it sent the request; ``span``
    the group's character span of the joined text when the policy sent a span. The
    engine fills the fields as they become known; a policy reads them and never writes.
    """

    seq: int
    group: int
    text: str
    glue: bool
    first: int
    last: int
    trigger: str
    dispatch_s: float
    dispatch_ns: int
    queued_ns: int
    in_flight: int
    start_ns: int = -1
    ready_ns: int = -1
    service_ns: int = -1
    audio_ns: int = -1
    end_ns: int = -1
    chunked: bool = False  # chunk release: its audio became playable chunk by chunk
    span: tuple[int, int] | None = None

    @property
    def is_ready(self) -> bool:
        """Whether the request's readiness has happened (its audio and service known)."""
        return self.ready_ns >= 0


@dataclass
class Observation:
    """What a policy sees at instant ``now_ns`` (int64 nanoseconds from source start; ``now_s``
    the same instant in seconds), for its own output only.

    ``held_first..held_stop-1`` are the held updates (available, not sent; indices into
    ``stream``); ``ended``: the stream's last update has arrived; ``requests``: every
    request sent so far in order, the ready ones with their dispatch, service, duration
    and end (:class:`LoopRequest`); ``in_flight``: the requests sent and not yet ready;
    ``queued_ns``: ``q(t) = max(0, C_k − t)`` with ``k`` the last ready request (0 when
    none); ``pushed_ns``: the audio of every ready request; ``arrivals``: updates that
    arrived at this instant; ``woken``: a wake-up the policy asked for falls at this
    instant; ``memo``: the policy's own scratch dict for this output (kept between calls);
    ``sent_chars``: how many characters of the stream's joined text (``Stream.joined``) have
    been sent, where the held text starts (a policy that sends spans reads it).
    """

    now_ns: int
    now_s: float
    stream: Stream
    keys: np.ndarray
    held_first: int
    held_stop: int
    ended: bool
    requests: list[LoopRequest]
    in_flight: list[LoopRequest]
    queued_ns: int
    pushed_ns: int
    arrivals: int
    woken: bool
    memo: dict[str, Any] = field(default_factory=dict)
    sent_chars: int = 0

    @property
    def n_held(self) -> int:
        """How many updates are held."""
        return self.held_stop - self.held_first

    @property
    def held_texts(self) -> tuple[str, ...]:
        """The held updates' texts."""
        return self.stream.texts[self.held_first:self.held_stop]

    def held_text(self, k: int | None = None) -> str:
        """The joined text of the first ``k`` held updates (all by default)."""
        stop = self.held_stop if k is None else self.held_first + k
        return join_texts(self.stream.texts[self.held_first:stop], self.stream.glue[self.held_first:stop])

    @property
    def oldest_held_ns(self) -> int | None:
        """Arrival of the oldest held update (ns), None when nothing is held."""
        return int(self.keys[self.held_first]) if self.n_held else None

    def audio_pushed_ns(self) -> int:
        """The audio of every ready request (ns)."""
        return self.pushed_ns


@dataclass(frozen=True)
class Decision:
    """Send the first ``send`` held updates now as one group released by ``trigger``
    (0: send nothing), and/or wake at ``wake_ns`` (ignored unless later than now).

    A policy that cuts inside updates sends a span instead: ``upto`` is the end (exclusive)
    of the characters to send in the stream's joined text, from ``Observation.sent_chars``
    on (``send`` is then ignored); the group's span is those characters without edge
    whitespace, and ``upto`` may not pass the end of the last update that has arrived.

    ``dispatch_s`` labels the group's dispatch in float seconds when the policy knows a
    more exact float than the instant's own (open-loop rules keep their deadlines'
    floats); it must round to the instant within 1 ns.
    """

    send: int = 0
    trigger: str = ""
    wake_ns: int | None = None
    dispatch_s: float | None = None
    upto: int | None = None


NOTHING = Decision()


@dataclass(frozen=True)
class Policy(Rule):
    """Base class of policies: frozen dataclasses whose fields are parameters, registered
    with :func:`~simulplay.grouping.registry.register_rule`. ``decide`` answers at each
    event instant; ``closed_loop`` says whether it reads feedback (then it has no groups
    without synthesis, and ``group`` refuses)."""

    closed_loop: ClassVar[bool] = True

    def decide(self, obs: Observation) -> Decision:  # pragma: no cover - interface
        """What to do at ``obs.now_ns``."""
        raise NotImplementedError

    def group(self, stream: Stream) -> list[Group]:
        """Refused: a closed-loop policy's groups need feedback (the engine's ``run_policy``)."""
        raise ClosedLoopError.at(f"rule '{self.canonical()}'", "is a closed-loop policy: its groups depend "
                                 "on the durations and service times of its own requests",
                                 accepted="synth, run or demo (synthesis in the loop), or an open-loop rule")


def is_closed_loop(rule: Rule) -> bool:
    """Whether a rule reads feedback: a closed-loop policy, or a commit policy before one."""
    if isinstance(rule, Committing):
        return is_closed_loop(rule.rule)
    return bool(getattr(rule, "closed_loop", False))


@lru_cache(maxsize=4096)
def closed_loop_condition(condition: str) -> bool:
    """Whether a manifest's condition names a closed-loop policy (a label that is no rule
    string is not one)."""
    from simulplay.grouping.registry import parse_rule

    try:
        return is_closed_loop(parse_rule(condition))
    except InputError:
        return False


#: The signature's ``loop`` value of a closed-loop output replayed under the clock it was
#: run on, and under another clock (its groups are the recorded ones, not decided again).
LOOP_RECORDED = "closed"
LOOP_OTHER_CLOCK = "closed:groups-recorded-under-the-measured-clock"
#: … and decided again under the replay's own clock (:mod:`simulplay.durationmodel.redecide`),
#: followed by ``, M of N requests modelled`` (the duration model gave M of its N durations).
LOOP_DECIDED_AGAIN = "closed:decided-again-under-this-clock"


def decided_again(loop: str | None) -> tuple[int, int] | None:
    """For a ``loop`` value of an output decided again, (modelled requests, requests); None
    for any other value."""
    if not str(loop or "").startswith(LOOP_DECIDED_AGAIN):
        return None
    counts = re.search(r", (\d+) of (\d+) requests modelled$", str(loop))
    return (int(counts.group(1)), int(counts.group(2))) if counts else (0, 0)


def loop_signature(condition: str, clock_changed: bool) -> dict[str, str]:
    """What a replayed output's signature adds: nothing for an open-loop rule; for a
    closed-loop policy ``loop``, which says when the replay's clock (service model,
    release, trimming, shared servers) is not the one its groups were decided under."""
    if not closed_loop_condition(condition):
        return {}
    return {"loop": LOOP_OTHER_CLOCK if clock_changed else LOOP_RECORDED}


@dataclass(frozen=True)
class OpenLoop(Policy):
    """An open-loop rule as a policy (not registered; built by :func:`as_policy`)."""

    closed_loop: ClassVar[bool] = False
    rule: Rule | None = None

    def canonical(self) -> str:
        """The rule's own canonical string."""
        return self.rule.canonical()

    def to_dict(self) -> dict[str, Any]:
        """The rule's own configuration."""
        return self.rule.to_dict()

    def group(self, stream: Stream) -> list[Group]:
        """The rule's own groups."""
        return groups_of(self.rule, stream)


@dataclass(frozen=True)
class OpenImmediate(OpenLoop):
    """``immediate``: every held update goes on its own, ties one by one."""

    def decide(self, obs: Observation) -> Decision:
        """The oldest held update alone, at its own arrival."""
        if not obs.n_held:
            return NOTHING
        return Decision(1, "immediate", dispatch_s=float(obs.stream.times[obs.held_first]))


@dataclass(frozen=True)
class OpenBuffered(OpenLoop):
    """``timer``, ``punct`` and ``words``: a deadline ``wait_s`` seconds after the oldest held update
    (inclusive), a content test on the held text, the end of the stream (in that order)."""

    wait_s: float = 0.0
    content: Callable[[str], bool] | None = None
    content_trigger: str = "timer"

    def decide(self, obs: Observation) -> Decision:
        """Content at an arrival, else the deadline, else the end; wake at the deadline."""
        if not obs.n_held:
            return NOTHING
        times, first, last = obs.stream.times, obs.held_first, obs.held_stop - 1
        deadline = int(obs.keys[first]) + int(round(self.wait_s * 1e9))
        if obs.arrivals and self.content is not None and self.content(obs.held_text()):
            return Decision(obs.n_held, self.content_trigger, dispatch_s=float(times[last]))
        if deadline <= obs.now_ns:
            return Decision(obs.n_held, "timer", dispatch_s=max(float(times[first]) + self.wait_s, float(times[last])))
        if obs.ended and obs.arrivals:
            return Decision(obs.n_held, "eos", dispatch_s=float(times[last]))
        return Decision(wake_ns=deadline)


@dataclass(frozen=True)
class OpenReplayed(OpenLoop):
    """Any other rule: its own groups, each sent at its dispatch instant (or once its
    updates have all arrived, if later); a group with a character span as that span."""

    def decide(self, obs: Observation) -> Decision:
        """The rule's next group once it is due and its updates are held."""
        groups = obs.memo.get("groups")
        if groups is None:
            groups = obs.memo["groups"] = groups_of(self.rule, obs.stream)
            obs.memo["next"] = 0
        k = obs.memo["next"]
        if k >= len(groups):
            return NOTHING
        g = groups[k]
        due = int(np.round(g.dispatch_s * 1e9))
        whole = g.span is None and obs.held_first == g.first
        if due <= obs.now_ns and obs.held_stop > g.last and (whole or g.span is not None):
            obs.memo["next"] = k + 1
            return Decision(g.n_updates, g.trigger, dispatch_s=g.dispatch_s if due == obs.now_ns else None,
                            upto=None if g.span is None else g.span[1])
        return Decision(wake_ns=due)


def as_policy(rule: Rule) -> Policy:
    """The policy of a rule: a policy itself, or an open-loop rule's event logic."""
    if isinstance(rule, Policy):
        return rule
    native = getattr(rule, "as_policy", None)
    if callable(native):
        return native()
    return OpenReplayed(rule=rule)
