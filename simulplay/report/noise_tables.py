"""The report's tables on clock and synthesis noise: η across realizations beside its
bootstrap interval, each talk's η per realization (Truong & Le (2026), Appendix C.4), and whether η keeps
its sign and size under the modelled clock (``service=fit``).

Computed from the run's η tables as saved (``eta``, ``eta_per_talk``, ``eta.service-fit``);
a run with one realization, or without the fit replay, leaves the tables out.
"""

from __future__ import annotations

import numpy as np

from simulplay.analysis.noise import SPREAD_PANELS, spread_table
from simulplay.analysis.realizations import has_realizations, talk_sd_summary, talk_spread
from simulplay.report.model import ReportTable, extend
from simulplay.report.order import sort_rows
from simulplay.report.read_run import RunData

FIT_VARIANT = "service-fit"  # the label `simulplay run` gives the replay variant service=fit


def _without_realization(sig, table: str):
    """A row signature for a table across realizations (a display string is kept as it is)."""
    if isinstance(sig, str):
        return sig
    return extend({k: v for k, v in sig.items() if k != "realization"}, {"table": table})


def realization_table(run: RunData) -> ReportTable | None:
    """Per condition: η's spread across realizations (mean, lowest, highest, range and SD of
    the realizations' η, :func:`simulplay.analysis.noise.spread_table`), the mean width of
    their bootstrap intervals, and the per-talk standard deviations across realizations
    (median, maximum, the widest talk)."""
    eta = run.eta.frame.reset_index(drop=True)
    if not has_realizations(eta):
        return None
    keys = [k for k in SPREAD_PANELS if k in eta]
    table, _ = spread_table(eta, [s if isinstance(s, dict) else {} for s in run.eta.signatures])
    eta = eta.assign(_i=range(len(eta)), ci_width_mean_s=eta["ci_high_s"] - eta["ci_low_s"])
    width = eta.groupby([*keys, "condition"], sort=False).agg(ci_width_mean_s=("ci_width_mean_s", "mean"),
                                                              _i=("_i", "first")).reset_index()
    table = table.merge(width, on=[*keys, "condition"], how="left")
    talk, _ = talk_sd_summary(talk_spread(run.per_talk.frame)[0])
    cols = ["median_talk_sd_s", "max_talk_sd_s", "widest_talk", "widest_low_s", "widest_high_s"]
    table = table.merge(talk[[*keys, "condition", *cols]], on=[*keys, "condition"], how="left")
    table = sort_rows(table, run, ["condition"])
    sigs = [_without_realization(run.eta.signatures[int(i)], "eta-realizations") for i in table["_i"]]
    n = int(table["n_realizations"].max())
    return ReportTable.signed(
        "realizations_eta", "η across realizations beside its bootstrap interval",
        f"Seconds. {n} synthesis realizations of the same plan, each its own panel (never pooled): the mean, lowest "
        "and highest of their η, its range (how much realizations disagree) and standard deviation, beside the mean "
        "width of their "
        "paired talk-bootstrap intervals (which describe the talks, not synthesis noise). Per talk, the sample "
        "standard deviation (ddof 1) of its η across realizations: median and maximum over talks, and the talk whose "
        "η ranges widest, from its lowest to its highest η. A range small against the interval width says the effect "
        "is not clock or synthesis noise.", table.drop(columns="_i"), sigs,
        labels={"n_realizations": "realizations", "eta_mean_s": "η mean (s)", "eta_min_s": "η lowest (s)",
                "eta_max_s": "η highest (s)", "eta_range_s": "η range (s)", "eta_sd_s": "η SD (s)",
                "ci_width_mean_s": "interval width, mean (s)", "median_talk_sd_s": "per-talk SD, median (s)",
                "max_talk_sd_s": "per-talk SD, max (s)", "widest_talk": "widest talk",
                "widest_low_s": "its lowest η (s)", "widest_high_s": "its highest η (s)"})


def talk_realizations_table(run: RunData) -> ReportTable | None:
    """Each talk's η in every realization, its range and sample standard deviation."""
    pt = run.per_talk.frame
    if not has_realizations(pt):
        return None
    spread, _ = talk_spread(pt)
    keys = [k for k in ("backend", "threshold") if k in spread] + ["condition", "talk_id"]
    first = pt.assign(_i=range(len(pt))).groupby(keys, sort=False)["_i"].first()
    spread = sort_rows(spread, run, ["condition", "talk_id"])
    sigs = [_without_realization(run.per_talk.signatures[int(first.loc[tuple(k)])], "eta-talk-spread")
            for k in spread[keys].itertuples(index=False)]
    labels = {c: f"η realization {c[8:-1]} (s)" for c in spread.columns if c.startswith("eta_s[r=")}
    return ReportTable.signed(
        "realizations_talks", "Per-talk η in each realization",
        "Seconds. Each talk's η under each synthesis realization, its mean, lowest, highest and range, and its sample "
        "standard deviation across realizations (ddof 1); a talk missing from a realization (excluded as incomplete) "
        "is counted over the realizations it has.", spread, sigs,
        labels={**labels, "n_realizations": "realizations", "eta_mean_s": "η mean (s)", "eta_min_s": "η lowest (s)",
                "eta_max_s": "η highest (s)", "eta_range_s": "η range (s)", "eta_sd_s": "η SD (s)"})


def fit_check_table(run: RunData) -> ReportTable | None:
    """η under the measured clock beside η under the modelled clock (service=fit), with
    whether the sign is kept and the ratio of sizes."""
    fit = run.variants.get(FIT_VARIANT)
    if fit is None:
        return None
    keys = [k for k in ("backend", "realization", "threshold") if k in run.eta.frame]
    measured = run.eta.frame.assign(_i=range(len(run.eta.frame)))[[*keys, "condition", "eta_s", "ci_low_s",
                                                                   "ci_high_s", "_i"]]
    modelled = fit.frame.assign(_j=range(len(fit.frame)))[[*keys, "condition", "eta_s", "ci_low_s", "ci_high_s",
                                                           "_j"]]
    table = measured.merge(modelled, on=[*keys, "condition"], how="inner", suffixes=("", "_fit"))
    table["same_sign"] = np.sign(table["eta_s"]) == np.sign(table["eta_s_fit"])
    with np.errstate(divide="ignore", invalid="ignore"):
        table["size_ratio"] = table["eta_s_fit"] / table["eta_s"]
    table = sort_rows(table, run, ["condition"])
    sigs = [extend(fit.signatures[int(j)], {"table": "fit-check"}) for j in table["_j"]]
    kept = int(table["same_sign"].sum())
    ratio = table["size_ratio"].replace([np.inf, -np.inf], np.nan).dropna()
    span = f"{ratio.min():.2f} to {ratio.max():.2f}" if len(ratio) else "undefined"
    verdict = (f"η keeps its sign under the modelled clock in {kept} of {len(table)} rows; the modelled η is "
               f"{span} times the measured one.")
    out = ReportTable.signed(
        "fitclock_eta", "η under a modelled clock (service=fit)",
        "Seconds. The modelled clock replaces each request's measured service time by a least-absolute-deviations "
        "fit on its audio duration and text length, one fit per backend and realization (coefficients in the "
        "signature's 'fit'): per-request clock noise is gone, the backend's cost structure stays. It is a model, not "
        "a measurement. " + verdict, table.drop(columns=["_i", "_j"]), sigs, number="",
        labels={"eta_s": "η measured (s)", "ci_low_s": "CI low (s)", "ci_high_s": "CI high (s)",
                "eta_s_fit": "η modelled clock (s)", "ci_low_s_fit": "CI low, modelled (s)",
                "ci_high_s_fit": "CI high, modelled (s)", "same_sign": "same sign",
                "size_ratio": "modelled / measured"}, digits={"size_ratio": 2})
    out.notes = [verdict]
    return out
