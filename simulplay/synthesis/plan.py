"""Planning synthesis: every request of every output, in a counterbalanced order, with its key.

``plan_requests`` turns streams × rules × realizations into requests (through
``plan_from_requests``, which a requests file read with ``--requests`` also takes), each with a
*request key*: the hash of the backend identity, the text and the reuse scope
(``never``: the request itself; ``same-realization``: the realization; ``always``: none).
Requests that share a key share audio and measured service time (reuse, recorded).
Planning reads no model: the backend is created but not loaded.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

import pandas as pd

from simulplay.backends.base import Backend, identity_key
from simulplay.grouping import Rule, Splitter, requests_frame, split_requests
from simulplay.traces.model import Stream


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
                  realizations: int = 1, splitter: Splitter | None = None, reuse: str | None = None) -> pd.DataFrame:
    """Every request of every output of ``streams`` grouped by ``rules`` (see
    :func:`plan_from_requests`, which it calls on the unsplit groups)."""
    return plan_from_requests(requests_frame(streams, rules), backend, realizations=realizations,
                              splitter=splitter, reuse=reuse)


def plan_from_requests(requests: pd.DataFrame, backend: Backend, *, realizations: int = 1,
                       splitter: Splitter | None = None, reuse: str | None = None) -> pd.DataFrame:
    """Every request of a requests table (rows of an output in ``seq`` order), split by
    the input limit (``splitter``, default the backend's), in a counterbalanced synthesis order.

    Order: realization by realization; within it talk by talk (in order of first
    appearance), with the condition order (first appearance) rotated by one position per
    talk (and per realization) so that no condition is always synthesized first.
    """
    splitter = splitter or backend.splitter()
    reuse = reuse or backend.config.reuse_policy()
    ident = identity_key(backend.identity())
    base = split_requests(requests, splitter)
    conds = list(dict.fromkeys(base["condition"]))
    talks = list(dict.fromkeys(base["talk_id"]))
    frames = []
    for r in range(realizations):
        df = base.assign(realization=r)
        t_index = df["talk_id"].map({t: i for i, t in enumerate(talks)})
        c_index = df["condition"].map({c: i for i, c in enumerate(conds)})
        df["_order"] = (c_index - t_index - r) % len(conds)
        df["_talk"] = t_index
        frames.append(df)
    plan = pd.concat(frames, ignore_index=True)
    plan = plan.sort_values(["realization", "_talk", "_order", "system", "seq"], kind="stable")
    plan = plan.drop(columns=["_order", "_talk"]).reset_index(drop=True)
    plan["backend"] = backend.label()
    origins = plan[["talk_id", "system", "condition", "realization", "seq"]].to_dict("records")
    plan["key"] = [request_key(ident, t, reuse, o) for t, o in zip(plan["text"], origins)]
    plan.attrs["reuse"] = reuse
    plan.attrs["splitter"] = splitter.describe()
    return plan


def origin_of(row: dict[str, Any]) -> dict[str, Any]:
    """The request a plan row stands for: talk_id, system, condition, realization, seq."""
    return {k: (int(row[k]) if k in ("seq", "realization") else str(row[k]))
            for k in ("talk_id", "system", "condition", "realization", "seq")}
