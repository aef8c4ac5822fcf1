"""From streams to synthesis requests: group with a rule, then split each group."""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from simulplay.grouping.registry import Rule
from simulplay.grouping.splitter import Splitter
from simulplay.traces.model import Stream, join_texts

REQUEST_COLUMNS = ("talk_id", "system", "condition", "seq", "dispatch_s", "trigger",
                   "n_updates", "text", "glue", "group", "source_s")


def stream_requests(stream: Stream, rule: Rule, splitter: Splitter | None = None) -> list[dict]:
    """One dict per request of one stream; ``seq`` counts requests from 0.

    ``n_updates`` is the size of the group a request came from; ``glue`` marks a request
    that continues the previous one without a space (a cut word, or a group whose first
    update is glued), so the requests' joined text equals the stream's.
    """
    splitter = splitter or Splitter()
    condition = rule.canonical()
    rows = []
    for g_index, g in enumerate(rule.group(stream)):
        members = slice(g.first, g.last + 1)
        text = join_texts(stream.texts[members], stream.glue[members])
        for k, (piece, glued) in enumerate(splitter.split(text)):
            rows.append({
                "talk_id": stream.talk_id,
                "system": stream.system,
                "condition": condition,
                "seq": len(rows),
                "dispatch_s": g.dispatch_s,
                "trigger": g.trigger,
                "n_updates": g.n_updates,
                "text": piece,
                "glue": bool(stream.glue[g.first]) if k == 0 and g.first > 0 else glued,
                "group": g_index,
                "source_s": stream.source_s,
            })
    return rows


def requests_frame(streams: Iterable[Stream], rules: Iterable[Rule],
                   splitter: Splitter | None = None) -> pd.DataFrame:
    """All requests of all streams under all rules, as one table."""
    rows = [r for rule in rules for s in streams for r in stream_requests(s, rule, splitter)]
    return pd.DataFrame(rows, columns=list(REQUEST_COLUMNS))


def trigger_shares(requests: pd.DataFrame) -> pd.DataFrame:
    """Share of groups released by each trigger, per system and condition (in %)."""
    groups = requests.drop_duplicates(["talk_id", "system", "condition", "group"])
    counts = groups.groupby(["system", "condition", "trigger"]).size().rename("groups").reset_index()
    counts["pct"] = 100 * counts["groups"] / counts.groupby(["system", "condition"])["groups"].transform("sum")
    return counts
