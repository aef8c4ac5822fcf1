"""Table 8c: what the listener got under each commit policy, when the run has one (its
``spoken.parquet``, written by a run with commit policies; docs/retranslation.md).

One row per condition (commit policy + grouping rule) and translator, in the run's order:
the talks, the words spoken and the spoken-then-retracted words summed over the talks, the
spoken-then-retracted words per minute of source (their sum over the talks' summed source
minutes), and the equal-talk means of the WER and CER (%) of the spoken text against the
translator's final hypothesis, of the commit-lag percentiles p50 and p90 and of the
normalized erasure of the input stream; the lag max is the largest over the talks. The
figures are those of the policy: the rule groups what the policy committed, so a policy's
rows under two rules agree.
"""

from __future__ import annotations

from simulplay.analysis.spoken import spoken_per_policy
from simulplay.grouping import canonical_condition
from simulplay.grouping.commit import parse_commit
from simulplay.grouping.registry import split_commit
from simulplay.report.model import ReportTable, extend
from simulplay.report.order import sort_rows
from simulplay.report.read_run import RunData


def condition_parts(condition: str) -> tuple[str, str]:
    """``POLICY+RULE`` → (the policy's table label, the canonical rule); a plain rule is under ``eager``."""
    policy, rule = split_commit(canonical_condition(condition))
    return (policy or parse_commit("eager")).label(), rule


def spoken_report_table(run: RunData) -> ReportTable | None:
    """Table 8c when the run folder has the listener's table, else None."""
    if "spoken" not in run.optional:
        return None
    conds = run.summary.frame[["condition", "system"]].drop_duplicates()
    parts = [condition_parts(c) for c in conds["condition"]]
    rows = conds.assign(condition=[canonical_condition(c) for c in conds["condition"]],
                        commit=[p for p, _ in parts], rule=[r for _, r in parts])
    spoken = run.optional["spoken"]
    table = rows.merge(spoken_per_policy(spoken.frame, run.summary.frame), on=["commit", "system"], how="inner")
    table = sort_rows(table, run, ["condition", "system"]).drop(columns="condition")
    cols = ["commit", "rule", "system", "talks", "words_spoken", "spoken_then_retracted", "retracted_per_min",
            "wer_pct", "cer_pct", "lag_p50_s", "lag_p90_s", "lag_max_s", "normalized_erasure"]
    sigs = [extend(spoken.signatures[int(i)], {"table": "spoken-per-condition"}) for i in table["_first"]]
    labels = {"words_spoken": "words spoken", "spoken_then_retracted": "spoken then retracted",
              "retracted_per_min": "retracted/min", "wer_pct": "WER vs final (%)", "cer_pct": "CER vs final (%)",
              "lag_p50_s": "lag p50 (s)", "lag_p90_s": "lag p90 (s)", "lag_max_s": "lag max (s)",
              "normalized_erasure": "erasure"}
    digits = {"retracted_per_min": 2, "wer_pct": 1, "cer_pct": 1, "lag_p50_s": 2, "lag_p90_s": 2, "lag_max_s": 2,
              "normalized_erasure": 3}
    return ReportTable.signed(
        "table08c_spoken", "What the listener got under each commit policy",
        "Per condition (commit policy + grouping rule) and translator, from the trace alone: words spoken and "
        "words spoken then retracted by a later revision (summed over the talks; per minute of source), the WER "
        "and CER of the spoken text against the translator's final hypothesis (%), the commit lag per word (s; "
        "p50 and p90 equal-talk means of each talk's percentiles, max over the talks) and the normalized erasure "
        "of the input stream (equal-talk mean). A policy marked (oracle) looks at the future: it is not causal.",
        table[cols], sigs, labels=labels, digits=digits, number="Table 8c")
