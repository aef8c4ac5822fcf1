"""From streams to synthesis requests: group with a rule, then split each group.

Grouping and splitting are two steps so that a requests table read from a file (a
``group`` output, possibly edited) is split by a backend's input limit exactly as a
freshly grouped stream is: :func:`split_requests` is the one splitting path.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from simulplay.core.keys import OUTPUT_KEYS
from simulplay.grouping.registry import Rule, groups_of
from simulplay.grouping.splitter import Splitter
from simulplay.traces.model import Stream, join_texts

REQUEST_COLUMNS = (*OUTPUT_KEYS, "seq", "dispatch_s", "trigger",
                   "n_updates", "text", "glue", "group", "source_s")


def group_requests(stream: Stream, rule: Rule) -> list[dict]:
    """One request per group of one stream (no input limit); ``seq`` = group index (0-based),
    ``dispatch_s`` the group's dispatch in seconds from source start.

    ``glue`` marks a group whose first update is glued to the previous update (or, for a
    group with a character span, that starts inside a word), so the requests' joined text
    equals the stream's.
    """
    condition = rule.canonical()
    rows = []
    joined = None
    stream = rule.prepare(stream)  # what a commit policy speaks of a revising stream, or the stream itself
    for g_index, g in enumerate(groups_of(rule, stream)):
        members = slice(g.first, g.last + 1)
        if g.span is None:
            text = join_texts(stream.texts[members], stream.glue[members])
            glue = bool(stream.glue[g.first]) if g.first > 0 else False
        else:
            joined = stream.joined if joined is None else joined
            text, glue = span_text(joined, *g.span)
        rows.append({
            "talk_id": stream.talk_id,
            "system": stream.system,
            "condition": condition,
            "seq": g_index,
            "dispatch_s": g.dispatch_s,
            "trigger": g.trigger,
            "n_updates": g.n_updates,
            "text": text,
            "glue": glue,
            "group": g_index,
            "source_s": stream.source_s,
        })
    return rows


def span_text(joined: str, start: int, end: int) -> tuple[str, bool]:
    """The text of characters ``start:end`` of a stream's joined text, edge whitespace
    stripped, and whether it continues the text before it without a space (a cut inside
    a word)."""
    text = joined[start:end]
    lead = len(text) - len(text.lstrip())
    glue = lead == 0 and start > 0 and not joined[start - 1].isspace()
    return text.strip(), glue


def split_rows(rows: Iterable[dict], splitter: Splitter | None = None) -> list[dict]:
    """Cut each request's text with ``splitter``; ``seq`` is renumbered from 0 per output.

    The first piece keeps the request's ``glue``; later pieces take the splitter's (a
    word cut inside is glued). Every other field is copied to each piece.
    """
    splitter = splitter or Splitter()
    out: list[dict] = []
    next_seq: dict[tuple, int] = {}
    for row in rows:
        key = tuple(row[k] for k in OUTPUT_KEYS)
        for k, (piece, glued) in enumerate(splitter.split(row["text"])):
            seq = next_seq.get(key, 0)
            next_seq[key] = seq + 1
            out.append({**row, "seq": seq, "text": piece, "glue": bool(row["glue"]) if k == 0 else glued})
    return out


def split_requests(requests: pd.DataFrame, splitter: Splitter | None = None) -> pd.DataFrame:
    """:func:`split_rows` on a requests table (rows of an output in ``seq`` order)."""
    return pd.DataFrame(split_rows(requests.to_dict("records"), splitter), columns=list(requests.columns))


def stream_requests(stream: Stream, rule: Rule, splitter: Splitter | None = None) -> list[dict]:
    """One dict per request of one stream; ``seq`` counts requests from 0.

    ``n_updates`` is the size of the group a request came from; ``glue`` marks a request
    that continues the previous one without a space (a cut word, or a group whose first
    update is glued), so the requests' joined text equals the stream's.
    """
    return split_rows(group_requests(stream, rule), splitter)


def requests_frame(streams: Iterable[Stream], rules: Iterable[Rule],
                   splitter: Splitter | None = None) -> pd.DataFrame:
    """All requests of all streams under all rules, as one table (rule by rule, then
    stream by stream in the given order)."""
    streams = list(streams)
    rows = [r for rule in rules for s in streams for r in group_requests(s, rule)]
    return pd.DataFrame(split_rows(rows, splitter), columns=list(REQUEST_COLUMNS))


def request_signatures(requests: pd.DataFrame, splitter: Splitter) -> list[dict]:
    """One signature per request row: the table, its condition as the rule, the splitter; a
    condition after a non-causal commit policy (``final``) is marked ``oracle: non-causal``."""
    from simulplay.core.signature import base_signature
    from simulplay.grouping.registry import split_commit

    oracle: dict[str, bool] = {}
    for c in dict.fromkeys(requests["condition"]):
        policy, _ = split_commit(str(c))
        oracle[c] = policy is not None and not policy.causal
    return [base_signature(table="requests", rule=c, splitter=splitter.describe(),
                           oracle="non-causal" if oracle[c] else None) for c in requests["condition"]]
