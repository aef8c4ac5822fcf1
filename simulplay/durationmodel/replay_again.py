"""Replays that decide closed-loop outputs again (:mod:`simulplay.durationmodel.redecide`).

:func:`replay_deciding` is the replay every caller of a variant uses (``run``'s sensitivity
replays, ``replay`` of a manifest file, the explorer): when the variant changes the clock a
closed-loop output was decided under, and the engine can run that clock (request or chunk
release; measured, zero, scaled or fitted service; either reading of silent parts; shared
servers under request release, every output of a share group decided jointly), its
policy decides again on the run's streams and the variant replays the requests it decides,
their signatures saying so (:func:`labelled`). Edge trimming and shared servers under chunk
release keep the recorded groups, labelled by the replay itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from simulplay.core.errors import InputError
from simulplay.core.keys import OUTPUT_ID
from simulplay.core.signature import merge
from simulplay.durationmodel.redecide import DECIDABLE, Decided, redecide
from simulplay.durationmodel.redecide_shared import redecide_shared
from simulplay.grouping.policy import LOOP_DECIDED_AGAIN, closed_loop_condition
from simulplay.manifest.validate import output_keys
from simulplay.sim.replay import ReplayResult, replay
from simulplay.sim.variants import Release, ServiceModel
from simulplay.traces.model import Stream

#: The releases under which a closed-loop output is decided again.
RELEASES = ("request", "chunk")


def decidable(release: Release, service: ServiceModel) -> bool:
    """Whether a replay under ``release`` and ``service`` decides closed-loop outputs again."""
    if service.name == "servers":  # decided jointly, requests whole
        return release.name == "request"
    return release.name in RELEASES and service.name in DECIDABLE


def decides_again(manifest: pd.DataFrame, release: Release, service: ServiceModel, silent: str) -> bool:
    """Whether a replay decides the manifest's closed-loop outputs again: it has some, and
    ``release``, ``service`` and ``silent`` change the clock in a way the engine runs."""
    changed = release.name != "request" or service.name != "measured" or silent != "skip"
    return changed and decidable(release, service) and has_closed_loop(manifest)


def replay_deciding(manifest: pd.DataFrame, *, service: ServiceModel, release: Release, silent: str,
                    streams: Sequence[Stream] | None, chunks: pd.DataFrame | None = None,
                    allow_incomplete: bool = False, upstream: dict[str, Any] | None = None,
                    source: str = "manifest") -> ReplayResult:
    """:func:`simulplay.sim.replay` of a validated manifest (and its validated chunk table
    under chunk release), whose closed-loop outputs are first decided again on ``streams``
    when the clock changes (:func:`decides_again`; without ``streams`` they keep their
    recorded groups, labelled so by the replay)."""
    kwargs = dict(release=release, allow_incomplete=allow_incomplete, upstream=upstream, source=source,
                  silent_parts=silent)
    if not (streams and decides_again(manifest, release, service, silent)):
        return replay(manifest, service=service, chunks=chunks, **kwargs)
    decide = redecide_shared if service.name == "servers" else redecide
    decided = decide(manifest, streams, service, silent=silent, source=source,
                     chunks=chunks if release.needs_chunks else None)
    return labelled(replay(decided.manifest, service=decided.service, chunks=decided.chunks, **kwargs), decided)


def recorded_streams(traces: Any) -> list[Stream] | None:
    """The streams of the trace files a manifest records (``[{path, sha256}, …]``), when each
    file is still there unchanged; None otherwise."""
    from simulplay.manifest.traces import recorded_traces
    from simulplay.traces import read_traces, streams_from_frame

    paths, changed = recorded_traces(traces)
    if not traces or len(paths) != len(traces) or changed or not all(p.is_file() for p in paths):
        return None
    try:
        return streams_from_frame(read_traces(paths), revising=True)
    except InputError:
        return None


def has_closed_loop(manifest: pd.DataFrame) -> bool:
    """Whether any condition of the manifest is a closed-loop policy."""
    return bool(any(closed_loop_condition(str(c)) for c in manifest["condition"].unique()))


def labelled(result: ReplayResult, decided: Decided) -> ReplayResult:
    """The replay with each decided output's signature ``loop`` saying so (and how many of
    its requests have modelled durations), and every row the duration model's description
    (``loop_model``) when it gave a duration."""
    keys = [k for k in result.summary.columns if k in OUTPUT_ID]
    order = [k for k in output_keys(result.summary) if k in keys]
    sigs = []
    for row, sig in zip(result.summary[order].itertuples(index=False), result.signatures):
        got = decided.outputs.get(tuple(row))
        extra: dict[str, Any] = {"loop_model": decided.model or None}
        if got is not None:
            n, m = got
            extra["loop"] = f"{LOOP_DECIDED_AGAIN}, {m} of {n} requests modelled"
        sigs.append(merge(sig, extra))
    result.signatures = sigs
    return result
