"""Commit policies in the modelled sweep: what each policy speaks, grouped and modelled.

A condition ``POLICY+RULE`` groups the stream the policy commits
(:mod:`simulplay.grouping.commit`), not the translator's updates. :func:`commit_tables`
commits every stream under every policy a sweep needs (``eager`` for a plain rule: an
append-only stream passes through it unchanged) and holds all the committed streams in one
:class:`~simulplay.grouping.vectorized.UpdateTable`, one block of streams per policy, so
the duration model is fitted and predicts on one table and a rule after a policy groups
only that policy's block (:meth:`CommitTables.group`). Modelled durations of committed
text are those of any text (the model reads characters, words or phonemes); the anchored
residuals of the run's own requests carry over only to the blocks the run synthesized.

What the listener got needs no model: :func:`listener_columns` adds to the sweep table,
per translator, the spoken-then-retracted words (summed over talks and per minute of
source) and the WER and CER (%) of the spoken text against the final hypothesis (the
equal-talk mean over talks), exact, from the same committed streams
(:mod:`simulplay.analysis.spoken`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from simulplay.analysis.spoken import spoken_row, stream_input
from simulplay.grouping.commit import CommitPolicy, Committed, parse_commit
from simulplay.grouping.registry import Committing, Rule, parse_rule
from simulplay.grouping.vectorized import Groups, UpdateTable, group_many, update_table
from simulplay.traces.model import Stream

#: The sweep table's columns of what the listener got, per translator (``_a``, ``_f``).
LISTENER = ("spoken_then_retracted", "retracted_per_min", "wer_pct", "cer_pct")
EAGER = "eager"


def policy_of(rule: Rule) -> str:
    """The canonical commit policy a rule groups after (``eager`` for a plain rule)."""
    return rule.policy.canonical() if isinstance(rule, Committing) else EAGER


@dataclass(frozen=True)
class CommitTables:
    """Every stream committed under every policy, in one update table: ``blocks[policy]``
    the table's stream indices of that policy (input order), ``committed[policy]`` the
    policy's :class:`~simulplay.grouping.commit.Committed` of each input stream."""

    table: UpdateTable
    blocks: dict[str, range]
    committed: dict[str, list[Committed]]
    policies: dict[str, CommitPolicy]

    def group(self, rules: Sequence[Rule]) -> Groups:
        """The groups of each rule on its policy's block (rule indices as given; stream and
        update indices into :attr:`table`)."""
        plain = [r.rule if isinstance(r, Committing) else r for r in rules]
        return group_many(self.table, plain, [self.blocks[policy_of(r)] for r in rules])

    def block(self, condition: str) -> range:
        """The table's streams a condition groups: its policy's block."""
        return self.blocks[policy_of(parse_rule(condition))]


def commit_tables(streams: Sequence[Stream], rules: Sequence[Rule]) -> CommitTables:
    """The :class:`CommitTables` of the policies of ``rules`` (``eager`` always first)."""
    names = list(dict.fromkeys([EAGER, *(policy_of(r) for r in rules)]))
    policies = {n: parse_commit(n, source="condition") for n in names}
    committed = {n: [p.commit(s) for s in streams] for n, p in policies.items()}
    blocks, start = {}, 0
    for n in names:
        blocks[n] = range(start, start + len(streams))
        start += len(streams)
    table = update_table([c.stream for n in names for c in committed[n]])
    return CommitTables(table, blocks, committed, policies)


def listener_columns(table: pd.DataFrame, tables: CommitTables, streams: Sequence[Stream], *, a: str,
                     f: str) -> pd.DataFrame:
    """``table`` (one row per grid point, column ``rule`` its condition) with the column
    ``commit`` (the policy's label) and :data:`LISTENER` for translators A and F."""
    shared = [stream_input(s) for s in streams]
    per_policy = {}
    for name, policy in tables.policies.items():
        rows = pd.DataFrame([spoken_row(s, policy, i, c) for s, i, c in zip(streams, shared, tables.committed[name])])
        minutes = np.array([s.source_s for s in streams]) / 60.0
        cols: dict[str, object] = {"commit": policy.label()}
        for tag, system in (("a", a), ("f", f)):
            at = (rows["system"] == system).to_numpy()
            retracted = int(rows.loc[at, "spoken_then_retracted"].sum())
            cols |= {f"spoken_then_retracted_{tag}": retracted,
                     f"retracted_per_min_{tag}": retracted / minutes[at].sum() if at.any() else np.nan,
                     f"wer_pct_{tag}": float(rows.loc[at, "wer_pct"].mean()),
                     f"cer_pct_{tag}": float(rows.loc[at, "cer_pct"].mean())}
        per_policy[name] = cols
    extra = pd.DataFrame([per_policy[policy_of(parse_rule(r))] for r in table["rule"]], index=table.index)
    at = list(table.columns).index("rule") + 1
    return pd.concat([table.iloc[:, :at], extra, table.iloc[:, at:]], axis=1)
