"""η of commit policies against a reference policy, the grouping rule fixed.

A run with commit policies has conditions ``POLICY+RULE``. ``eta --reference CONDITION``
compares every condition against one condition; ``eta --reference-commit POLICY`` compares
each condition ``P+R`` against ``POLICY+R``, the same rule after the reference policy:

    η_s(P+R) = δ_s(P+R) − δ_s(POLICY+R)        (s; δ = L(A) − L(F), as in every η)

with the same paired talk bootstrap (one index matrix per panel, the same for every rule
when the talks are the same), direction counts (``n_zero``: ties within the tolerance),
duration and idle parts. It is :func:`simulplay.analysis.eta.compute_eta` run once per
rule on that rule's conditions with its own reference; the tables gain the columns
``rule`` and ``reference`` after ``condition``. A plain rule is the rule after ``eager``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from simulplay.analysis.bootstrap import Bootstrap
from simulplay.analysis.eta import EtaResult, compute_eta
from simulplay.core.errors import InputError
from simulplay.grouping import canonical_condition, parse_commit
from simulplay.grouping.registry import Committing, parse_rule, with_commit


def split_condition(condition: str, source: str) -> tuple[str, str]:
    """A condition's (canonical policy, canonical rule); a plain rule is after ``eager``."""
    try:
        rule = parse_rule(condition, source=f"{source}: condition")
    except InputError:
        raise InputError.at(source, f"condition '{condition}' is not POLICY+RULE", field="condition",
                            accepted="conditions written by group, synth or run with --commit") from None
    if isinstance(rule, Committing):
        return rule.policy.canonical(), rule.rule.canonical()
    return "eager", rule.canonical()


def commit_eta(summary: pd.DataFrame, *, a: str, f: str, reference_commit: str, boot: Bootstrap | None = None,
               allow_incomplete: bool = False, upstream: Sequence[dict[str, Any]] | None = None,
               source: str = "summary") -> EtaResult:
    """η of every condition ``P+R`` of ``summary`` against ``reference_commit+R`` (module
    docstring), rule by rule in the order the summary first lists them; a rule without an
    output under the reference policy is an :class:`InputError` naming it."""
    policy = parse_commit(reference_commit, source="--reference-commit")
    boot = boot or Bootstrap()
    upstream = list(upstream) if upstream is not None else [{}] * len(summary)
    parts = pd.Series([split_condition(c, source) for c in summary["condition"]], index=summary.index, dtype=object)
    rules = list(dict.fromkeys(p[1] for p in parts))
    results, references = [], []
    for rule in rules:
        reference = with_commit(policy, parse_rule(rule)).canonical()
        at = (parts.map(lambda p: p[1]) == rule).to_numpy()
        conditions = set(summary.loc[at, "condition"].map(canonical_condition))
        if reference not in conditions:
            raise InputError.at(source, f"rule '{rule}' has no output under the reference policy "
                                f"({reference})", field="condition",
                                accepted=f"every rule under --reference-commit {policy.canonical()} too")
        if len(conditions) == 1:
            continue  # the rule only under the reference policy: nothing to compare
        sub = summary[at].reset_index(drop=True)
        results.append(compute_eta(sub, a=a, f=f, reference=reference, boot=boot, allow_incomplete=allow_incomplete,
                                   upstream=[u for u, keep in zip(upstream, at) if keep], source=source))
        references.append((rule, reference))
    if not results:
        raise InputError.at(source, f"has no condition other than under the reference policy {policy.canonical()}",
                            field="condition", accepted="conditions under two commit policies or more")
    return _joined(results, references)


def _joined(results: list[EtaResult], references: list[tuple[str, str]]) -> EtaResult:
    """The per-rule results as one, each table with ``rule`` and ``reference`` after ``condition``."""
    def stack(name: str) -> pd.DataFrame:
        frames = []
        for res, (rule, reference) in zip(results, references):
            df = getattr(res, name).copy()
            at = list(df.columns).index("condition") + 1
            df.insert(at, "reference", reference)
            df.insert(at, "rule", rule)
            frames.append(df)
        return pd.concat(frames, ignore_index=True)

    def joined(name: str) -> list:
        return [x for res in results for x in getattr(res, name)]

    empty = results[0].contrasts.iloc[0:0]
    return EtaResult(stack("table"), joined("table_signatures"), stack("per_talk"), joined("per_talk_signatures"),
                     empty, [], joined("excluded"), list(dict.fromkeys(joined("notes"))))
