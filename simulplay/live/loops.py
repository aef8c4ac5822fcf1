"""Closed-loop outputs of a live run: a policy per output on the wall clock (docs/live.md,
"Policies live").

A closed-loop policy's requests are not known before the run: each such output gets a
:class:`~simulplay.grouping.wallclock.WallClockLoop` on its stream, whose times are the
run's time base (the trace's divided by ``--speed``, as every live time is: the queued
audio the policy reads plays at its real rate), and the client's closed-loop session
(:func:`simulplay.live.client.loop_session`) fills its records as the policy sends. After
the run its requests become plan rows like an open-loop rule's, with what the policy saw
when it sent each (``queued_s``, ``in_flight``), as a closed-loop ``synth`` records them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from simulplay.core.timebase import from_ns
from simulplay.grouping import Rule, Splitter, is_closed_loop
from simulplay.grouping.registry import Committing
from simulplay.grouping.wallclock import WallClockLoop
from simulplay.live.client import LoopRecords
from simulplay.synthesis.loop import scaled
from simulplay.traces.model import Stream


def loop_outputs(streams: Sequence[Stream], rules: Sequence[Rule], *, speed: float,
                 splitter: Splitter | None = None) -> list[tuple[dict[str, Any], WallClockLoop]]:
    """Per closed-loop rule and stream (rule by rule, as the plan's order): the output's
    keys and its policy on the wall clock. A commit policy before a policy commits on the
    trace's own times, then the policy runs on what it committed."""
    split = (splitter or Splitter()).split
    out = []
    for rule in (r for r in rules if is_closed_loop(r)):
        policy = rule.rule if isinstance(rule, Committing) else rule
        for s in streams:
            keys = {"talk_id": s.talk_id, "system": s.system, "condition": rule.canonical(),
                    "source_s": s.source_s / speed}
            out.append((keys, WallClockLoop(scaled(rule.prepare(s), speed), policy, split)))
    return out


def loop_sessions(loops: Sequence[tuple[dict[str, Any], WallClockLoop]], first: int) -> list[LoopRecords]:
    """The client's record lists of the closed-loop outputs, numbered from ``first``."""
    return [LoopRecords(loop, first + i) for i, (_, loop) in enumerate(loops)]


def loop_rows(loops: Sequence[tuple[dict[str, Any], WallClockLoop]], *, backend: str) -> pd.DataFrame:
    """The plan rows of the requests the policies sent, output by output."""
    rows = []
    for keys, loop in loops:
        for req in loop.requests:
            rows.append({**keys, "backend": backend, "realization": 0, "seq": req.seq, "dispatch_s": req.dispatch_s,
                         "trigger": req.trigger, "n_updates": req.last - req.first + 1, "text": req.text,
                         "glue": req.glue, "group": req.group, "queued_s": float(from_ns(req.queued_ns)),
                         "in_flight": req.in_flight})
    return pd.DataFrame(rows)
