"""Shared-server replay (docs/many-listeners.md): the outputs of one share group
send their requests to one queue of K identical workers.

Request ``j`` of output ``o`` becomes eligible at ``e_j = max(dispatch_j, ready_{j−1})``
(one request in flight per output, as in the serial clock); eligible requests start in
order of ``e_j`` (ties: talk, system, condition, seq) on the worker that frees first:
``start_j = max(e_j, free_w)``, ``ready_j = start_j + service_j × slowdown(c_j)`` with
``c_j`` the requests in service at ``start_j`` (a request is in service on
``[start, ready)``) including ``j``, times ``flight(n_j)`` with a calibrated slowdown
(:mod:`simulplay.sim.slowdown`; ``n_j``: ``c_j`` plus the requests eligible before
``start_j`` and not yet started); ``queue_j = start_j − e_j``. Every time is int64
nanoseconds; a slowdown of exactly 1 leaves the service untouched, so with K at least the
group's outputs and no load curve the clock is the serial clock bit for bit.

Share groups never mix conditions, backends or realizations: each condition is its own
deployment, so η compares rules that each ran on their own servers. ``panel``: every talk
and system of a condition; ``talk``: one talk's systems; ``system``: one system's talks;
``output``: each output alone (the serial clock with slowdown(1) = 1).

A load curve is a table (CSV or Parquet) with columns ``concurrency`` (whole numbers ≥ 1,
distinct, 1 among them) and ``service_p50_s`` (the median service seconds at that level,
> 0); ``slowdown(c) = p50(c) / p50(1)``, linear in p50 between listed levels. Its last
level must reach K (a request never meets more than K in service). The curve is kept as
canonical text ``c:p50;…`` (each p50 as Python's ``repr``); its SHA-256 is that text's, so
one curve read from CSV or Parquet has one digest, and a signature's ``service`` label
rebuilds it without the file. This module never opens a file: the table is read and checked
in its home, :mod:`simulplay.formats.load`, by whoever takes the user's text (``--load-curve``,
and a spec's ``load_curve=TABLE`` rewritten as ``curve=c:p50;…`` by
:func:`simulplay.formats.service_spec.read_spec_tables`), and this module gets the canonical points.
"""

from __future__ import annotations

import bisect
import hashlib
import heapq
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from simulplay.core.errors import InputError
from simulplay.core.keys import OUTPUT_KEYS, RUN_PANEL_KEYS, present
from simulplay.formats.load import checked_curve, curve_points
from simulplay.sim.playback import Clock
from simulplay.sim.segments import segment_starts
from simulplay.sim.slowdown import flight_factors, parse_flight
from simulplay.sim.variants import ServiceModel, register_service_model

SHARES = ("panel", "talk", "system", "output")
DISCIPLINES = ("fifo",)
#: what each share group adds to the condition, backend and realization that every group holds fixed
SHARE_KEYS = {"panel": (), "talk": ("talk_id",), "system": ("system",), "output": ("talk_id", "system")}
SYNTAX = ("servers=K[,share=panel|talk|system|output][,discipline=fifo][,load_curve=TABLE][,slowdown=F|TABLE] "
          "with K ≥ 1")

@dataclass(frozen=True)
class SharedClock(Clock):
    """The serial clock's start and ready plus, per request: ``eligible`` (e_j, ns),
    ``queue`` (start − e_j, ns), ``level`` (c_j, requests in service at its start including
    itself), ``slowdown`` (the factor its service was multiplied by) and ``in_flight`` (n_j,
    with a calibrated slowdown; else 0)."""

    eligible: np.ndarray
    queue: np.ndarray
    level: np.ndarray
    slowdown: np.ndarray
    in_flight: np.ndarray


def parse_points(text: str, source: str) -> tuple[np.ndarray, np.ndarray]:
    """Levels and p50 seconds of canonical text ``c:p50;…``, checked as a table's rows."""
    try:
        pairs = [item.split(":") for item in text.split(";")]
        levels = [int(c) for c, _ in pairs]
        p50s = [float(p) for _, p in pairs]
    except ValueError as e:
        raise InputError.at(source, f"load curve '{text}' is not c:p50;… points",
                            accepted="concurrency:service_p50_s pairs joined by ';'") from e
    return checked_curve(np.array(levels), np.array(p50s), source)


def slowdowns(curve: str, k: int, source: str = "load curve") -> list[float]:
    """``slowdown(c)`` for c = 0..k (index 0 unused, 1.0): p50(c) / p50(1), linear between
    listed levels; 1 for every c without a curve. The curve must reach level ``k``."""
    if not curve:
        return [1.0] * (k + 1)
    levels, p50s = parse_points(curve, source)
    if levels[-1] < k:
        raise InputError.at(source, f"load curve ends at concurrency {levels[-1]}, below the {k} servers",
                            field="load_curve", accepted=f"a load curve measured up to concurrency {k} or more")
    c = np.arange(1, k + 1)
    ratio = np.interp(c, levels, p50s) / p50s[0]
    ratio[c == 1] = 1.0  # exactly: isolated service is the measured service
    return [1.0, *ratio.tolist()]


def shared_clock(codes: np.ndarray, dispatch: np.ndarray, service: np.ndarray, group: np.ndarray,
                 rank: np.ndarray, k: int, factors: list[float], flight: str = "") -> SharedClock:
    """The shared-server clock (module docstring) of requests sorted by output (``codes``,
    contiguous) and seq: ``dispatch`` and ``service`` int64 ns per request, ``group`` and
    ``rank`` (the tie order: talk, system, condition) per output, ``k`` workers per group,
    ``factors[c]`` the slowdown at ``c`` requests in service, ``flight`` the calibrated
    slowdown's points. An event loop over one heap of eligible requests and one of the
    readiness of those in service, per group (with ``flight``, a sorted list of the
    eligibility times of the requests waiting, to count those in flight)."""
    n = len(codes)
    first = segment_starts(codes)
    stop = np.r_[first[1:], n].tolist()
    disp, svc = dispatch.astype(np.int64).tolist(), service.astype(np.int64).tolist()
    start, ready, elig, level, in_flight, applied = [0] * n, [0] * n, [0] * n, [0] * n, [0] * n, [1.0] * n
    code_of_first = codes[first] if n else codes
    for g in np.unique(group):
        members = np.flatnonzero(group[code_of_first] == g)
        eligible = [(disp[first[o]], int(rank[code_of_first[o]]), int(first[o]), stop[o]) for o in members]
        heapq.heapify(eligible)
        per_flight = flight_factors(flight, len(members) + k)
        waiting = sorted(x[0] for x in eligible) if per_flight else []
        busy: list[int] = []
        pop, push = heapq.heappop, heapq.heappush
        while eligible:
            e, r, j, end = pop(eligible)
            if per_flight:
                waiting.remove(e)
            while busy and busy[0] <= e:
                pop(busy)
            s = e
            if len(busy) >= k:
                s = pop(busy)
                while busy and busy[0] <= s:
                    pop(busy)
            c = len(busy) + 1
            f = factors[c]
            if per_flight:
                in_flight[j] = c + bisect.bisect_left(waiting, s)
                f *= per_flight[in_flight[j]]
            rd = s + (svc[j] if f == 1.0 else int(round(svc[j] * f)))
            push(busy, rd)
            start[j], ready[j], elig[j], level[j], applied[j] = s, rd, e, c, f
            if j + 1 < end:
                d = disp[j + 1]
                nxt = d if d > rd else rd
                push(eligible, (nxt, r, j + 1, end))
                if per_flight:
                    bisect.insort(waiting, nxt)
    start_a, elig_a, level_a = np.array(start, np.int64), np.array(elig, np.int64), np.array(level, np.int64)
    return SharedClock(start_a, np.array(ready, np.int64), elig_a, start_a - elig_a, level_a,
                       np.array(applied, float), np.array(in_flight, np.int64))


@register_service_model("servers")
@dataclass(frozen=True)
class Servers(ServiceModel):
    """Shared servers: the outputs of a share group queue for ``servers`` identical workers
    (module docstring); measured service × the load curve's slowdown at the level met (×
    the calibrated slowdown at the number in flight, ``flight``)."""

    syntax = SYNTAX
    servers: int = 1
    share: str = "panel"
    discipline: str = "fifo"
    curve: str = ""  # canonical points c:p50;… ("" : slowdown 1)
    flight: str = ""  # the calibrated slowdown's canonical points n:f;… ("": 1)
    _source: str = field(default="load curve", repr=False, compare=False)  # what a curve error names
    _factors: tuple[float, ...] = field(default=(), init=False, repr=False, compare=False)  # slowdown(c), c = 0..K

    def __post_init__(self):
        if isinstance(self.servers, bool) or not isinstance(self.servers, int) or self.servers < 1:
            raise ValueError(f"servers {self.servers!r} is not a whole number ≥ 1")
        if self.share not in SHARES:
            raise ValueError(f"unknown share group '{self.share}'")
        if self.discipline not in DISCIPLINES:
            raise ValueError(f"unknown discipline '{self.discipline}'")
        object.__setattr__(self, "_factors", tuple(slowdowns(self.curve, self.servers, self._source)))  # parsed once
        if self.flight:
            parse_flight(self.flight, "slowdown")

    @staticmethod
    def parse_spec(text: str, source: str) -> Servers:
        """The model a ``servers=K,…`` text names (:func:`parse_servers`)."""
        return parse_servers(text, source)

    def label(self) -> str:
        """``servers=K,share=G,discipline=D``, ``,curve=c:p50;…`` with a load curve and
        ``,slowdown=n:f;…`` with a calibrated slowdown."""
        text = f"servers={self.servers},share={self.share},discipline={self.discipline}"
        text += f",curve={self.curve}" if self.curve else ""
        return text + (f",slowdown={self.flight}" if self.flight else "")

    def digest(self) -> str:
        """SHA-256 of the curve's canonical points, or ``none``."""
        return hashlib.sha256(self.curve.encode()).hexdigest() if self.curve else "none"

    def output_signature(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """servers, share, discipline, the load curve's digest and, with one, the calibrated
        slowdown's points."""
        sig = {"servers": self.servers, "share": self.share, "discipline": self.discipline,
               "load_curve_sha256": self.digest()}
        return sig | ({"slowdown": self.flight} if self.flight else {})

    def clock(self, manifest: pd.DataFrame, codes: np.ndarray, dispatch: np.ndarray,
              service: np.ndarray) -> SharedClock:
        """The shared-server clock of a validated manifest's rows (int64 ns in and out)."""
        group, rank = self.share_groups(manifest.iloc[segment_starts(codes)].reset_index(drop=True))
        return shared_clock(codes, dispatch, service, group, rank, self.servers,
                            list(self._factors), self.flight)

    def share_groups(self, outputs: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """Each output's share group and tie rank (``outputs``: one row per output)."""
        fixed = present(("condition", *RUN_PANEL_KEYS), outputs) + list(SHARE_KEYS[self.share])
        group = outputs.groupby(fixed, sort=False, dropna=False).ngroup().to_numpy()
        order = present((*OUTPUT_KEYS, *RUN_PANEL_KEYS), outputs)
        ranked = outputs[order].astype(str).sort_values(order, kind="stable").index.to_numpy()
        rank = np.empty(len(outputs), np.int64)
        rank[ranked] = np.arange(len(outputs))
        return group, rank

    def queue(self, ranks: list[int]) -> ServerQueue:
        """The servers of one share group as an online queue (outputs ranked ``ranks``)."""
        return ServerQueue(self.servers, list(self._factors), flight_factors(self.flight, len(ranks) + self.servers),
                           ranks)


class ServerQueue:
    """:func:`shared_clock` run online, as a joint simulation of policies needs it
    (:mod:`simulplay.grouping.joint`): requests are submitted as they are sent, and a request
    is started only once the simulation has reached its start, so that every request
    eligible before it is known; the starts, readiness and slowdowns are then those that
    :func:`shared_clock` gives the same requests. Output ``o`` (0-based) ranks ``ranks[o]``."""

    def __init__(self, k: int, factors: list[float], per_flight: list[float] | None, ranks: list[int]):
        self.k, self.factors, self.per_flight, self.ranks = k, factors, per_flight, ranks
        self.eligible: list[tuple[int, int, int, int]] = []  # (e, rank, output, seq)
        self.waiting: list[int] = []  # eligibility of the requests in ``eligible`` (with a calibrated slowdown)
        self.busy: list[int] = []
        self.pending: list[list[int]] = [[] for _ in ranks]  # seqs sent, waiting for their predecessor
        self.queued = [False] * len(ranks)  # whether the output has a request in ``eligible``
        self.last_ready: list[int | None] = [None] * len(ranks)
        self.service: dict[tuple[int, int], tuple[int, int]] = {}  # (output, seq) → (dispatch, service)

    def submit(self, output: int, seq: int, dispatch: int, service: int) -> None:
        """Request ``seq`` of ``output`` sent at ``dispatch`` with ``service`` (ns)."""
        self.service[output, seq] = (dispatch, service)
        if self.queued[output] or self.pending[output]:
            self.pending[output].append(seq)
        else:
            self._push(output, seq)

    def _push(self, output: int, seq: int) -> None:
        d = self.service[output, seq][0]
        prev = self.last_ready[output]
        e = d if prev is None or d > prev else prev
        heapq.heappush(self.eligible, (e, self.ranks[output], output, seq))
        self.queued[output] = True
        if self.per_flight:
            bisect.insort(self.waiting, e)

    def next_start(self) -> int | None:
        """When the first eligible request would start (ns), None when none is eligible."""
        if not self.eligible:
            return None
        e = self.eligible[0][0]
        return self.busy[0] if len(self.busy) >= self.k and self.busy[0] > e else e

    def pop(self, t: int, rank: float) -> list[tuple[int, int, int, int]]:
        """Start every request that starts by ``t`` (ns) and is eligible before ``t`` or at
        ``t`` with a rank up to ``rank``: (output, seq, start, ready) each, in order."""
        started = []
        while self.eligible and (s := self.next_start()) <= t and (self.eligible[0][0] < t
                                                                   or self.eligible[0][1] <= rank):
            e, _, o, j = heapq.heappop(self.eligible)
            if self.per_flight:
                self.waiting.remove(e)
            while self.busy and self.busy[0] <= e:
                heapq.heappop(self.busy)
            if len(self.busy) >= self.k:
                heapq.heappop(self.busy)
                while self.busy and self.busy[0] <= s:
                    heapq.heappop(self.busy)
            f = self.factors[len(self.busy) + 1]
            if self.per_flight:
                f *= self.per_flight[len(self.busy) + 1 + bisect.bisect_left(self.waiting, s)]
            svc = self.service[o, j][1]
            ready = s + (svc if f == 1.0 else int(round(svc * f)))
            heapq.heappush(self.busy, ready)
            started.append((o, j, s, ready))
            self.queued[o], self.last_ready[o] = False, ready
            if self.pending[o]:
                self._push(o, self.pending[o].pop(0))
        return started


def parse_servers(text: str, source: str) -> Servers:
    """``servers=K[,share=G][,discipline=D][,curve=c:p50;…][,slowdown=F|n:f;…]``, the tables a
    user's text names already read (:func:`simulplay.formats.service_spec.read_spec_tables`);
    errors name ``source`` and the text."""
    where = f"{source} '{text}'"
    fields: dict[str, str] = {}
    for item in text.strip().split(","):
        key, eq, value = item.partition("=")
        if not eq or key.strip() in fields or key.strip() not in ("servers", "share", "discipline",
                                                                  "load_curve", "curve", "slowdown"):
            raise InputError.at(where, f"'{item}' is not a setting of shared servers", accepted=SYNTAX)
        fields[key.strip()] = value.strip()
    if "load_curve" in fields:
        raise InputError.at(where, f"load_curve '{fields['load_curve']}' names a table, which is read before the "
                            "text is parsed (simulplay.formats.service_spec.read_spec_tables)",
                            accepted="curve=c:p50;… points here")
    curve = fields.get("curve", "")
    if curve:
        curve = curve_points(*parse_points(curve, where))
    flight = parse_flight(fields.get("slowdown", ""), where)
    return servers_model(fields.get("servers", ""), fields.get("share", "panel"),
                         fields.get("discipline", "fifo"), curve, where, flight)


def servers_model(servers: str | int, share: str, discipline: str, curve: str, where: str,
                  flight: str = "") -> Servers:
    """A checked :class:`Servers`; errors are one line at ``where``."""
    try:
        k = int(str(servers).strip())
    except ValueError:
        k = 0
    if k < 1:
        raise InputError.at(where, f"servers '{servers}' is not a whole number ≥ 1", accepted=SYNTAX)
    if share not in SHARES:
        raise InputError.at(where, f"unknown share group '{share}'", accepted=" or ".join(SHARES))
    if discipline not in DISCIPLINES:
        raise InputError.at(where, f"unknown discipline '{discipline}'", accepted=" or ".join(DISCIPLINES))
    return Servers(k, share, discipline, curve, flight, _source=where)
