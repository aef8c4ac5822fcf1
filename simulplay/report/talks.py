"""A report of some talks only (``report --talks``): the run's tables narrowed to the picked
talks, and every number that averages over talks recomputed over them.

The manifest, the playback summary, the traces and every table with a ``talk_id`` column
keep the picked talks' rows; η, its per-talk table and the contrasts are computed again
from the narrowed summary with the run's own bootstrap settings (read off the η table's
signature), so their means, intervals and direction counts are those of the picked talks.
Tables that summarize all talks and cannot be recomputed from the run folder (the
sensitivity replays' η, edge-silence η, the quality intervals, …) are left out, and a note
says which."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from simulplay.analysis.bootstrap import Bootstrap
from simulplay.analysis.eta import compute_eta
from simulplay.core.signature import format_signature
from simulplay.report.read_run import RunData, Signed
from simulplay.traces.select import check_talks


def _narrow(table: Signed, talks: set[str]) -> Signed:
    """The rows of ``table`` whose ``talk_id`` is picked, with their signatures."""
    keep = table.frame["talk_id"].astype(str).isin(talks).to_numpy()
    sigs = [s for s, k in zip(table.signatures, keep) if k] if len(table.signatures) == len(keep) \
        else table.signatures
    return Signed(table.frame[keep].reset_index(drop=True), sigs, table.path)


def _signed(frame: pd.DataFrame, sigs: Sequence[dict[str, Any]], like: Signed) -> Signed:
    """A recomputed table as the report reads it: its display signatures as a column."""
    return Signed(frame.assign(signature=[format_signature(s) for s in sigs]), list(sigs), like.path)


def _bootstrap(run: RunData) -> Bootstrap:
    sig = next((s for s in run.eta.signatures if isinstance(s, dict) and "draws" in s), None)
    return Bootstrap.from_signature(sig) if sig is not None else Bootstrap()


def pick_run_talks(run: RunData, talks: Sequence[str]) -> RunData:
    """``run`` narrowed to ``talks`` (module docstring); all of it when ``talks`` is empty.
    An id that is not a talk of the run is an InputError naming a few that are."""
    if not talks:
        return run
    picked = check_talks(talks, run.summary.frame["talk_id"].astype(str).unique(), "--talks")
    n_all = run.summary.frame["talk_id"].nunique()
    run.manifest, run.summary = _narrow(run.manifest, picked), _narrow(run.summary, picked)
    pairs = [] if run.contrasts is None else list(zip(run.contrasts.frame["p1"], run.contrasts.frame["p2"]))
    summary_sigs = [s if isinstance(s, dict) else {} for s in run.summary.signatures]
    res = compute_eta(run.summary.frame, a=run.a, f=run.f, reference=run.reference, boot=_bootstrap(run),
                      contrasts=pairs, upstream=summary_sigs, allow_incomplete=bool(run.excluded_outputs),
                      source=str(run.summary.path))
    run.eta = _signed(res.table, res.table_signatures, run.eta)
    run.per_talk = _signed(res.per_talk, res.per_talk_signatures, run.per_talk)
    if run.contrasts is not None:
        run.contrasts = _signed(res.contrasts, res.contrast_signatures, run.contrasts)
    left = [f"η of {name}" for name in run.variants]
    run.variants = {}
    for key, table in list(run.optional.items()):
        if "talk_id" in table.frame:
            run.optional[key] = _narrow(table, picked)
        else:
            left.append(key.replace("_", " "))
            del run.optional[key]
    if run.traces is not None and "talk_id" in run.traces:
        run.traces = run.traces[run.traces["talk_id"].astype(str).isin(picked)].reset_index(drop=True)
    run.parts = None
    shown = ", ".join(sorted(picked))
    run.notes.append(f"Talks picked with --talks: {shown} ({len(picked)} of {n_all}). η, its per-talk table and "
                     "the contrasts are recomputed over them"
                     + (f"; tables of the whole run left out: {', '.join(left)}." if left else "."))
    return run
