"""Closed-loop outputs in synthesis: each request synthesized when its policy sends it.

A policy's requests are not known before synthesis (docs/listening-grouping.md), so the
plan holds one placeholder row per closed-loop output (and realization), at the place the
synthesis order gives that output. The executors treat the output as a *loop unit*: its
engine (:func:`simulplay.grouping.engine.policy_steps`) runs in the driver process, and each
request it sends becomes a job for the output's worker, one in flight per output, while
other outputs run on other workers. A request whose key the store already holds (reuse
across conditions by text, or a killed run's finished requests) is served from the store
without synthesis, with the recorded service time and sample count, so a killed run
resumes to the same groups when the stored durations are the same. When the engine has
finished, the placeholder row becomes the output's requests, each with what the policy saw
when it sent it (``queued_s``, ``in_flight``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pandas as pd

from simulplay.backends.base import Backend, identity_key
from simulplay.core.plugins import with_origin
from simulplay.core.timebase import from_ns
from simulplay.grouping import Rule, Splitter, is_closed_loop
from simulplay.grouping.engine import Served, policy_steps
from simulplay.grouping.policy import LoopRequest
from simulplay.grouping.registry import Committing
from simulplay.grouping.requests import REQUEST_COLUMNS, group_requests
from simulplay.store.store import AudioStore
from simulplay.synthesis.executors.jobs import Job
from simulplay.synthesis.plan import Plan, origin_of, plan_from_requests, request_key
from simulplay.traces.model import Stream

#: What the manifest adds for closed-loop outputs: what the policy saw when it sent each request.
LOOP_COLUMNS = ("queued_s", "in_flight")
PLACEHOLDER = "loop"


class LoopUnit:
    """One closed-loop output of one realization, as the executors run it: ``next_job()``
    gives the next request to synthesize (None once the output is done or failed);
    ``finished(key)`` says that the job's outcome is in the store."""

    dynamic = True

    def __init__(self, stream: Stream, rule: Rule, splitter: Splitter | None, row: dict[str, Any],
                 ident: str, reuse: str, store: AudioStore):
        self.steps = policy_steps(stream, rule, splitter=splitter.split if splitter else None)
        self.row, self.ident, self.reuse, self.store = row, ident, reuse, store
        self.sent: list[tuple[LoopRequest, str]] = []
        self.pending: tuple[LoopRequest, str] | None = None
        self.job: Job | None = None
        self.started = self.failed = self.done = False
        self.finished_keys: set[str] = set()
        self.from_store = 0  # requests served from records that were in the store before this run asked

    def _step(self, served: Served | None) -> None:
        try:
            req = next(self.steps) if served is None else self.steps.send(served)
        except StopIteration:
            self.done, self.pending = True, None
            return
        origin = {**origin_of(self.row), "seq": req.seq}
        self.pending = (req, request_key(self.ident, req.text, self.reuse, origin))
        self.sent.append(self.pending)

    def next_job(self) -> Job | None:
        """The next request the store lacks, after serving from the store what it holds."""
        if not self.started:
            self.started = True
            self._step(None)
        while self.pending is not None and not self.failed:
            req, key = self.pending
            rec = self.store.get_record(key)
            if rec is not None and key not in self.finished_keys:
                problem = self.store.record_problem(key)
                if problem is not None:
                    self.store.discard(key, problem)
                    rec = None
            if rec is not None:
                self.from_store += key not in self.finished_keys
                self._step(Served(float(rec["service_s"]), n_samples=int(rec["n_samples"]),
                                  sample_rate=int(rec["sample_rate"])))
                continue
            if key in self.finished_keys:  # synthesized in this run and failed: the output stops here
                self.failed = True
                return None
            if self.job is None or self.job.key != key:
                self.job = Job(key, req.text, int(self.row["realization"]), {**origin_of(self.row), "seq": req.seq})
            return self.job
        return None

    def finished(self, key: str) -> None:
        """The outcome of ``key`` (audio or failure) has been written to the store."""
        self.finished_keys.add(key)

    def rows(self) -> list[dict[str, Any]]:
        """The output's plan rows: the placeholder's place and order, each sent request."""
        out = []
        for req, key in self.sent:
            out.append({**self.row, "seq": req.seq, "dispatch_s": req.dispatch_s, "trigger": req.trigger,
                        "n_updates": req.last - req.first + 1, "text": req.text, "glue": req.glue,
                        "group": req.group, "key": key, "queued_s": float(from_ns(req.queued_ns)),
                        "in_flight": req.in_flight})
        return out


def has_loops(rules: list[Rule]) -> bool:
    """Whether any rule is a closed-loop policy."""
    return any(is_closed_loop(r) for r in rules)


def scaled(stream: Stream, speed: float | None) -> Stream:
    """The stream on a time base ``speed`` times faster: its times and source duration
    divided by ``speed`` (the stream itself when ``speed`` is None)."""
    if speed is None:
        return stream
    return dataclasses.replace(stream, times=stream.times / speed, source_s=stream.source_s / speed)


def plan_with_loops(streams: list[Stream], rules: list[Rule], backend: Backend, store: AudioStore, *,
                    realizations: int = 1, splitter: Splitter | None = None, reuse: str | None = None,
                    order: str = "counterbalanced", speed: float | None = None
                    ) -> tuple[Plan, dict[str, LoopUnit]]:
    """The plan of open-loop rules' requests and one placeholder row per closed-loop output
    (key ``loop:<n>``), all in the synthesis order, and the loop unit of each placeholder.
    With ``speed``, the policies run on the stream's times divided by ``speed`` (the time
    base a live run's policies decided on) and their rows are on it already."""
    rows: list[dict[str, Any]] = []
    for rule in rules:
        for s in streams:
            if is_closed_loop(rule):
                rows.append({"talk_id": s.talk_id, "system": s.system, "condition": rule.canonical(), "seq": 0,
                             "dispatch_s": 0.0, "trigger": "", "n_updates": 0, "text": PLACEHOLDER, "glue": False,
                             "group": 0, "source_s": scaled(s, speed).source_s, "_loop": True})
            else:
                rows += [{**r, "_loop": False} for r in group_requests(s, rule)]
    frame = pd.DataFrame(rows, columns=[*REQUEST_COLUMNS, "_loop"])
    made = plan_from_requests(frame, backend, realizations=realizations, splitter=splitter, reuse=reuse, order=order)
    plan = made.frame
    splitter = splitter or backend.splitter()
    ident = identity_key(with_origin(backend.identity(), "backend", backend.config.name))
    by_name = {(s.talk_id, s.system): s for s in streams}
    by_cond = {r.canonical(): r for r in rules}
    loops: dict[str, LoopUnit] = {}
    keys = plan["key"].to_numpy(object).copy()
    for i in np.flatnonzero(plan["_loop"].to_numpy(bool)):
        row = plan.iloc[i].to_dict()
        keys[i] = f"loop:{len(loops)}"
        rule = by_cond[row["condition"]]
        stream = scaled(rule.prepare(by_name[row["talk_id"], row["system"]]), speed)  # what a commit policy commits
        rule = rule.rule if isinstance(rule, Committing) else rule
        loops[keys[i]] = LoopUnit(stream, rule, splitter, row, ident, made.reuse, store)
    plan["key"] = keys
    return made, loops


def expand_plan(plan: Plan, loops: dict[str, LoopUnit]) -> Plan:
    """The plan with each placeholder replaced by its output's requests (``synth_order``
    renumbered), with :data:`LOOP_COLUMNS` (empty for open-loop rows)."""
    records: list[dict[str, Any]] = []
    for r in plan.frame.to_dict("records"):
        records += loops[r["key"]].rows() if r["_loop"] else [{**r, "queued_s": np.nan, "in_flight": None}]
    out = pd.DataFrame(records, columns=[*plan.frame.columns, *LOOP_COLUMNS])
    out["in_flight"] = out["in_flight"].astype("Int64")
    out["synth_order"] = range(len(out))
    return dataclasses.replace(plan, frame=out.drop(columns=["_loop"]))
