"""Planning synthesis: every request of every output, in a synthesis order, with its key.

``plan_requests`` turns streams × rules × realizations into requests (through
``plan_from_requests``, which a requests file read with ``--requests`` also takes), each with a
*request key*: the hash of the backend identity, the text and the reuse scope
(``never``: the request itself; ``same-realization``: the realization; ``always``: none).
Requests that share a key share audio and measured service time (reuse, recorded).
Planning reads no model: the backend is created but not loaded.

Synthesis order (``order``, :data:`ORDERS`): realization by realization, talk by talk
(first appearance), within a talk condition by condition, and within a (talk, condition)
cell system by system. With C conditions numbered c = 0…C−1 by first appearance, talks
t = 0…T−1 and S systems numbered s = 0…S−1 in name order, realization r uses the *order
id* ``k = (t + r) mod C`` under ``counterbalanced`` (``k = 0`` under ``fixed``), and
condition c takes position ``(c − k) mod C`` in its talk's block: a cyclic Latin square, so
over any C consecutive talks, or C realizations of one talk, every condition is synthesized
once in every position. The systems rotate the same way: system s takes position
``(s − j) mod S`` in each of the talk's cells with ``j = (t + r) mod S`` (``j = 0`` under
``fixed``: name order, so A before F everywhere). With two systems the first one alternates
from talk to talk and from realization to realization, so an effect of going first on the
service clock enters δ = L(A) − L(F) with both signs, and A is first in half of the
(talk, condition, realization) cells whenever T · R is even; within one talk and
realization every condition has the same system first, so such an effect cancels in
η(p) = δ(p) − δ(0). ``paper`` is Truong & Le (2026)'s design: realization 0 in the fixed order,
later realizations counterbalanced. Each planned request records ``synth_order`` (its
0-based position in the run's order), ``order_id`` (k), ``condition_pos`` (its
condition's position) and ``system_pos`` (its system's position in its cell).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from simulplay.backends.base import Backend, identity_key
from simulplay.core.errors import InputError
from simulplay.core.keys import OUTPUT_KEYS
from simulplay.core.plugins import with_origin
from simulplay.grouping import Rule, Splitter, requests_frame, split_requests
from simulplay.traces.model import Stream

#: Synthesis orders: ``counterbalanced`` rotates the condition and the system order per talk and
#: realization, ``fixed`` keeps both, ``paper`` keeps both in realization 0 and rotates after it.
ORDERS = ("counterbalanced", "fixed", "paper")
#: Columns a plan (and the manifest) records about the synthesis order.
ORDER_COLUMNS = ("synth_order", "order_id", "condition_pos", "system_pos")
#: The orders as an error message lists them.
ORDERS_TEXT = ", ".join(ORDERS[:-1]) + " or " + ORDERS[-1]


def check_order(order: str, source: str = "--order") -> str:
    """``order`` when it is one of :data:`ORDERS`, else an InputError naming ``source``."""
    if order not in ORDERS:
        raise InputError.at(f"{source} '{order}'", "unknown synthesis order", accepted=ORDERS_TEXT)
    return order


@dataclass(frozen=True)
class Plan:
    """Every request to synthesize (``frame``: one row per request, in synthesis order, with
    its ``key``) and what the plan was made with, which the manifest's signature records: the
    reuse scope of the request keys, the input-limit splitter (as described) and the order."""

    frame: pd.DataFrame
    reuse: str
    splitter: str
    order: str


def request_key(ident_hash: str, text: str, reuse: str, origin: dict[str, Any]) -> str:
    """32 hex digits of SHA-256 over the backend identity's hash, the text and the reuse
    scope of ``origin`` (its talk_id, system, condition, realization and seq)."""
    if reuse == "always":
        scope: Any = None
    elif reuse == "same-realization":
        scope = origin["realization"]
    else:
        scope = origin
    blob = json.dumps({"identity": ident_hash, "text": text, "scope": scope}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def plan_requests(streams: list[Stream], rules: Iterable[Rule], backend: Backend, *,
                  realizations: int = 1, splitter: Splitter | None = None, reuse: str | None = None,
                  order: str = "counterbalanced") -> Plan:
    """Every request of every output of ``streams`` grouped by ``rules`` (see
    :func:`plan_from_requests`, which it calls on the unsplit groups)."""
    return plan_from_requests(requests_frame(streams, rules), backend, realizations=realizations,
                              splitter=splitter, reuse=reuse, order=order)


def order_ids(talk_index: pd.Series, realization: int, n: int, order: str) -> pd.Series:
    """The order id of each row's (talk, realization) over ``n`` conditions (k) or systems
    (j): ``(t + r) mod n`` under ``counterbalanced`` and in realizations after the first
    under ``paper``, else 0 (module docstring)."""
    if order == "fixed" or (order == "paper" and realization == 0):
        return talk_index * 0
    return (talk_index + realization) % n


def plan_from_requests(requests: pd.DataFrame, backend: Backend, *, realizations: int = 1,
                       splitter: Splitter | None = None, reuse: str | None = None,
                       order: str = "counterbalanced") -> Plan:
    """Every request of a requests table (rows of an output in ``seq`` order), split by
    the input limit (``splitter``, default the backend's), in the synthesis ``order``
    (module docstring): realization, talk, condition position, system position, seq.
    """
    check_order(order)
    splitter = splitter or backend.splitter()
    reuse = reuse or backend.config.reuse_policy()
    ident = identity_key(with_origin(backend.identity(), "backend", backend.config.name))
    base = split_requests(requests, splitter)
    conds = list(dict.fromkeys(base["condition"]))
    talks = list(dict.fromkeys(base["talk_id"]))
    systems = sorted(set(base["system"]))
    frames = []
    for r in range(realizations):
        df = base.assign(realization=r)
        t_index = df["talk_id"].map({t: i for i, t in enumerate(talks)})
        c_index = df["condition"].map({c: i for i, c in enumerate(conds)})
        df["order_id"] = order_ids(t_index, r, len(conds), order)
        df["condition_pos"] = (c_index - df["order_id"]) % len(conds)
        s_index = df["system"].map({s: i for i, s in enumerate(systems)})
        df["system_pos"] = (s_index - order_ids(t_index, r, len(systems), order)) % len(systems)
        df["_talk"] = t_index
        frames.append(df)
    plan = pd.concat(frames, ignore_index=True)
    plan = plan.sort_values(["realization", "_talk", "condition_pos", "system_pos", "seq"], kind="stable")
    plan = plan.drop(columns=["_talk"]).reset_index(drop=True)
    plan["synth_order"] = range(len(plan))
    plan["backend"] = backend.label()
    origins = plan[[*OUTPUT_KEYS, "realization", "seq"]].to_dict("records")
    plan["key"] = [request_key(ident, t, reuse, o) for t, o in zip(plan["text"], origins)]
    return Plan(plan, reuse, splitter.describe(), order)


def origin_of(row: dict[str, Any]) -> dict[str, Any]:
    """The request a plan row stands for: talk_id, system, condition, realization, seq."""
    return {k: (int(row[k]) if k in ("seq", "realization") else str(row[k]))
            for k in (*OUTPUT_KEYS, "realization", "seq")}
