"""The Quality section: how grouping changes the sound (docs/quality.md).

A run folder that holds ``quality.intervals.parquet`` (or ``.csv``; ``simulplay run`` and
``simulplay demo`` write it when the experiment scores quality, ``simulplay quality --out
quality.parquet`` writes it beside its table), or step-by-step tables that include such a
table, get Table 19: per panel (system, backend, realization) and condition, ΔOVRL (DNSMOS),
Δsimilarity and Δ joins per minute against the reference, each with its paired
talk-bootstrap interval and direction counts, read from the interval table as it is
(:func:`simulplay.analysis.quality_table.quality_summary`).
"""

from __future__ import annotations

from simulplay.analysis.quality_table import SUMMARY_METRICS, quality_summary
from simulplay.grouping import canonical_condition
from simulplay.report.model import ReportTable
from simulplay.report.read_run import RunData

LABELS = {"metric": "score", "reference_mean": "reference", "condition_mean": "condition mean", "delta": "Δ",
          "n_negative": "Δ<0", "n_zero": "Δ=0", "n_positive": "Δ>0", "ci_low": "CI low", "ci_high": "CI high",
          "n_talks_left_out": "talks left out"}


def quality_table(run: RunData) -> ReportTable | None:
    """Table 19, when the run has a quality interval table with Δ rows of the shown scores."""
    t = run.optional.get("quality")
    if t is None:
        return None
    ref = canonical_condition(run.reference)
    intervals = t.frame.assign(condition=[_canonical_pair(c) for c in t.frame["condition"]])
    frame, sigs = quality_summary(intervals, ref, t.signatures)
    if frame.empty:
        return None
    conf = f"{run.confidence:.0%} " if run.confidence is not None else ""
    scores = "; ".join(f"{k}: {v}" for k, v in SUMMARY_METRICS.items())
    shown = sorted(set(frame["metric"]), key=list(SUMMARY_METRICS).index)
    missing = [m for m in SUMMARY_METRICS if m not in shown]
    caption = (f"How each condition sounds against {ref}: Δ = condition − {ref}, per output, then the equal-talk "
               f"mean within each panel (system, backend, realization); {conf}intervals from the paired talk "
               f"bootstrap, as for η; Δ<0 / Δ>0 count talks. Scores: {scores}. A talk without the score under "
               f"every compared condition is left out and counted. DNSMOS is a proxy trained on noisy and "
               f"enhanced speech, not a listener.")
    caption += _scope(sigs)
    if missing:
        caption += f" Not in this run's quality table: {', '.join(missing)}."
    return ReportTable.signed("table19_quality", "Quality: what grouping changes in how the outputs sound",
                              caption, frame, sigs, number="Table 19", labels=LABELS)


def _scope(sigs: list) -> str:
    """What a narrowed scoring left out (the demo's), from the structured signatures; "" otherwise."""
    sig = next((s for s in sigs if isinstance(s, dict)), {})
    out = ""
    if sig.get("dnsmos_first_windows"):
        out += (f" DNSMOS scored the first {sig['dnsmos_first_windows']} window(s) of 9.01 s of each output's "
                "speech, not every request.")
    if sig.get("scored_conditions"):
        out += f" DNSMOS and similarity scored only {sig['scored_conditions'].replace(',', ', ')}; joins every output."
    return out


def _canonical_pair(text: str) -> str:
    """``punct − immediate`` with each condition canonical (a CSV may spell a rule short)."""
    a, sep, b = str(text).partition(" − ")
    return f"{canonical_condition(a)}{sep}{canonical_condition(b)}" if sep else canonical_condition(a)
