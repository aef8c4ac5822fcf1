"""The explorer's revision lane (docs/retranslation.md): for a revising stream, the
hypothesis over time, and for each of its outputs the commits and the requests they became.

* ``hypothesis(stream)``: the text of the hypothesis in spans, each written by one update
  (``t0``, seconds) and, for a span a later update took back, retracted at ``t1`` (null for
  a span of the final hypothesis). A span is a run of characters written by the same update
  and taken back by the same one, stripped of the whitespace at its ends (spans that hold
  only whitespace are left out).
* ``commits(stream, condition, texts, seqs)``: what the condition's commit policy (``eager``
  for a plain rule) committed (``t``: commit times, seconds; ``text``) and, per commit, the
  ``seq`` of every request (the output's request ``texts`` in ``seqs`` order) holding one of
  its characters, matched by the position of each non-whitespace character in the committed
  text and in the requests' texts, which hold the same characters in the same order.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby
from typing import Any

from simulplay.grouping.commit import parse_commit
from simulplay.grouping.registry import split_commit
from simulplay.traces.model import Stream
from simulplay.traces.revisions import hypotheses, retractions


def _runs(chars: str, since: Sequence[float]) -> list[tuple[float, str]]:
    """Runs of characters written at the same time, stripped (blank runs left out)."""
    out = []
    pos = 0
    for t, group in groupby(since):
        n = len(list(group))
        text = chars[pos:pos + n].strip()
        pos += n
        if text:
            out.append((t, text))
    return out


def hypothesis(stream: Stream) -> dict[str, list[Any]]:
    """The spans of the stream's hypotheses (module docstring), retracted ones in the order
    they were taken back, then those of the final hypothesis."""
    since: list[float] = []
    t0: list[float] = []
    t1: list[float | None] = []
    text: list[str] = []
    h = ""
    for t, (gone, after), r in zip(stream.times.tolist(), hypotheses(stream.texts, stream.glue, retractions(stream)),
                                   retractions(stream).tolist()):
        cut = len(h) - int(r)
        for written, span in _runs(gone, since[cut:]):
            t0.append(written)
            t1.append(t)
            text.append(span)
        del since[cut:]
        since.extend([t] * (len(after) - cut))
        h = after
    for written, span in _runs(h, since):
        t0.append(written)
        t1.append(None)
        text.append(span)
    return {"t0": t0, "t1": t1, "text": text}


def commits(stream: Stream, condition: str, texts: Sequence[str], seqs: Sequence[int]) -> dict[str, list[Any]]:
    """What the condition's policy committed of the stream, and the requests each commit became."""
    policy, _ = split_commit(condition)
    c = (policy or parse_commit("eager")).commit(stream).stream
    owner: list[int] = []  # per non-whitespace character of the requests: its request's seq
    for seq, x in zip(seqs, texts):
        owner.extend([int(seq)] * sum(not ch.isspace() for ch in x))
    req: list[list[int]] = []
    pos = 0
    for x in c.texts:
        n = sum(not ch.isspace() for ch in x)
        req.append(list(dict.fromkeys(owner[pos:pos + n])))
        pos += n
    return {"t": c.times.tolist(), "text": list(c.texts), "req": req}


def revising_streams(traces) -> dict[tuple[str, str], Stream]:
    """The revising streams of the run's traces (a table of trace rows, or None), by (talk, system)."""
    from simulplay.traces import streams_from_frame

    if traces is None or "retract" not in traces or not traces["retract"].fillna(0).astype(int).any():
        return {}
    return {(str(s.talk_id), str(s.system)): s for s in streams_from_frame(traces, revising=True) if s.revising}


def revision_payload(streams: dict[tuple[str, str], Stream], talk: str, outputs: Sequence[dict[str, Any]],
                     requests: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The talk's ``hyp`` (per revising system, :func:`hypothesis`) and ``commits`` (per output
    of a revising system, :func:`commits`; null for the others); nothing when none revises."""
    hyp = {system: hypothesis(s) for (t, system), s in streams.items() if t == talk}
    if not hyp:
        return {}
    per = [commits(streams[(talk, o["system"])], o["condition"], r["text"], r["seq"]) if o["system"] in hyp else None
           for o, r in zip(outputs, requests)]
    return {"hyp": hyp, "commits": per}
