"""Closed-loop outputs decided again under shared servers (``servers=K``).

Under shared servers the outputs of a share group (one condition's talks and systems, or
one talk's, …; :mod:`simulplay.sim.servers`) queue at the same K workers, so no output can
be decided again alone: every closed-loop output of a share group runs its policy in one
joint simulation (:mod:`simulplay.grouping.joint`), its requests queued FIFO with the
recorded requests of the group's other outputs (those kept as recorded) at an online queue
with the replay's discipline, tie order and slowdown (:class:`simulplay.sim.servers.ServerQueue`),
each output seeing its own request ready when its service ends. Durations come as in
:mod:`simulplay.durationmodel.redecide` (the run's own, else the duration model), service
times are the measured ones (slowed by the queue as the replay slows them), so that the
replay of the decided rows under the same servers is the joint simulation's clock.

An output that cannot be decided again (:mod:`simulplay.durationmodel.redecide`'s reasons)
joins its group's queue with its recorded requests; an output with failed requests, which
the replay leaves out, is left out of the queue too.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from simulplay.core.timebase import to_ns
from simulplay.durationmodel.redecide import Context, Decided, _Keep, _plan, redecide
from simulplay.grouping.joint import JointOutput, run_joint
from simulplay.sim.servers import Servers
from simulplay.traces.model import Stream


class _KeepOutput(Exception):
    """Output ``index`` of a joint run cannot be decided again (``reason``)."""

    def __init__(self, index: int, reason: str):
        super().__init__(reason)
        self.index, self.reason = index, reason


def redecide_shared(manifest: pd.DataFrame, streams: Sequence[Stream], service: Servers, **kwargs) -> Decided:
    """:func:`~simulplay.durationmodel.redecide.redecide` under shared servers: the
    closed-loop outputs of each share group decided jointly (module docstring)."""
    return redecide(manifest, streams, service, together=_together(service), **kwargs)


def _together(service: Servers):
    def decide(manifest: pd.DataFrame, codes: np.ndarray, items: dict, ctx: Context) -> dict:
        first = np.unique(codes, return_index=True)[1]
        failed = ((manifest["error"] != "") | manifest["audio_s"].isna()).groupby(codes).any().to_numpy()
        complete = np.flatnonzero(~failed)  # the outputs the replay keeps, in its order
        group, rank = service.share_groups(manifest.iloc[first[complete]].reset_index(drop=True))
        group_of = dict(zip(complete.tolist(), group.tolist()))
        results: dict = {c: "it has failed requests" for c in items if failed[c]}
        for g in sorted({group_of[c] for c in items if not failed[c]}):
            at = np.flatnonzero(group == g)
            results |= _share_group(service, manifest, codes, complete[at].tolist(), rank[at].tolist(), items, ctx)
        return results

    return decide


def _share_group(service: Servers, manifest: pd.DataFrame, codes: np.ndarray, members: list[int],
                 ranks: list[int], items: dict, ctx: Context) -> dict:
    """One share group's closed-loop outputs decided jointly; an output that cannot be
    decided again joins the queue with its recorded requests (and the rest run again)."""
    kept: dict[int, str] = {}
    while True:
        queue, plans = service.queue(ranks), {}
        for q, c in enumerate(members):
            if c in items and c not in kept:
                try:
                    plans[q] = (c, *_plan(items[c], ctx.keys, ctx.by_name, ctx.durations, ctx.clock, ctx.lookup))
                    continue
                except _Keep as why:
                    kept[c] = str(why)
            rows = np.flatnonzero(codes == c)
            dispatch = to_ns(np.nan_to_num(manifest["dispatch_s"].to_numpy(float)[rows]))
            svc = to_ns(np.nan_to_num(service.request_seconds(manifest.iloc[rows])))
            for j, (d, s) in enumerate(zip(dispatch.tolist(), svc.tolist())):
                queue.submit(q, j, d, s)
        outputs = [JointOutput(stream, rule, _tagged(q, provider), q)
                   for q, (_, stream, rule, provider, _) in plans.items()]
        try:
            results = run_joint(outputs, queue, silent=ctx.silent)
        except _KeepOutput as why:
            kept[plans[why.index][0]] = why.reason
            continue
        out: dict = dict(kept)
        for (c, *_, finish), result in zip(plans.values(), results):
            out[c] = finish(result)
        return out


def _tagged(index: int, provider):
    def provide(req):
        try:
            return provider(req)
        except _Keep as why:
            raise _KeepOutput(index, str(why)) from None

    return provide
