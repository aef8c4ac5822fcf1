"""Table 8b: open- against closed-loop rules, when the run has at least one closed-loop
condition (a policy that reads the listener's queue, docs/listening-grouping.md).

One row per panel and condition, the reference first: whether the rule runs in open or
closed loop, η and its duration and idle parts (from the η table as saved; 0 for the
reference), and per translator (A, then F) the equal-talk mean end offset L, the requests
summed over talks and the equal-talk mean joins per minute of audio. An output's joins are
the boundaries between its consecutive requests that carry audio (failed and empty
requests are not heard), counted per minute of its audio D: ``(n − 1) · 60 / D`` for n
such requests (0 for one, left out for none), as ``simulplay quality`` counts joins under
request release.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from simulplay.grouping import canonical_condition
from simulplay.grouping.policy import closed_loop_condition
from simulplay.report.model import ReportTable, extend
from simulplay.report.order import panels, sort_rows
from simulplay.report.read_run import RunData

ETA_PARTS = ("eta_s", "duration_part_s", "idle_part_s")


def has_closed_loop(run: RunData) -> bool:
    """Whether any condition of the run's manifest is a closed-loop policy."""
    return any(closed_loop_condition(c) for c in run.manifest.frame["condition"].unique())


def output_joins(man: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per output (``keys``): requests, audio-carrying requests and joins per minute of audio."""
    heard = (man["audio_s"].to_numpy(float) > 0) & (man["error"].to_numpy() == "")
    out = man.assign(_heard=heard, _audio=np.where(heard, man["audio_s"].to_numpy(float), 0.0))
    per = out.groupby(keys, sort=False).agg(requests=("seq", "size"), parts=("_heard", "sum"),
                                            audio=("_audio", "sum")).reset_index()
    audio = per["audio"].to_numpy(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        per["joins_per_min"] = np.where(audio > 0, (per["parts"] - 1) * 60.0 / audio, np.nan)
    return per


def _per_system(run: RunData, keys: list[str]) -> pd.DataFrame:
    """Per panel and condition, columns ``offset_s[S]``, ``requests[S]``, ``joins_per_min[S]``
    for S in A, F."""
    out_keys = keys + ["system", "talk_id"]
    per = output_joins(run.manifest.frame, out_keys)
    s = run.summary.frame[out_keys + ["offset_s"]].merge(per, on=out_keys, how="left")
    g = s.groupby(keys + ["system"], sort=False).agg(
        offset_s=("offset_s", "mean"), requests=("requests", "sum"), joins_per_min=("joins_per_min", "mean"))
    wide = None
    for system in (run.a, run.f):
        part = g.xs(system, level="system").add_suffix(f"[{system}]")
        wide = part if wide is None else wide.join(part, how="outer")
    return wide.reset_index()


def loop_table(run: RunData) -> ReportTable | None:
    """Table 8b when some condition is closed-loop, else None."""
    if run.stepwise or not has_closed_loop(run):
        return None
    keys = panels(run.eta.frame)
    eta = run.eta.frame.assign(_i=range(len(run.eta.frame)))
    eta = eta.assign(condition=eta["condition"].map(canonical_condition))
    ref = canonical_condition(run.reference)
    summary = run.summary.frame.assign(_ref=range(len(run.summary.frame)))
    ref_rows = summary[summary["condition"].map(canonical_condition) == ref].drop_duplicates(keys)
    ref_frame = ref_rows[keys].assign(condition=ref, **{c: 0.0 for c in ETA_PARTS}, _ref=ref_rows["_ref"])
    rows = pd.concat([ref_frame, eta[keys + ["condition", *ETA_PARTS, "_i"]]], ignore_index=True)
    rows.insert(rows.columns.get_loc("condition") + 1, "loop",
                ["closed" if closed_loop_condition(c) else "open" for c in rows["condition"]])
    wide = _per_system(run, keys + ["condition"])
    wide = wide.assign(condition=wide["condition"].map(canonical_condition))
    table = sort_rows(rows.merge(wide, on=keys + ["condition"], how="left"), run, ["condition"])
    sigs = [extend(run.summary.signatures[int(r)], {"table": "open-closed-loop"}) if not pd.isna(r)
            else run.eta.signatures[int(i)] for r, i in zip(table["_ref"], table["_i"])]
    labels = {"loop": "loop"}
    for system in (run.a, run.f):
        labels.update({f"offset_s[{system}]": f"L {system} (s)", f"requests[{system}]": f"requests {system}",
                       f"joins_per_min[{system}]": f"joins/min {system}"})
    digits = {f"joins_per_min[{s}]": 1 for s in (run.a, run.f)}
    return ReportTable.signed(
        "table08b_loops", "Open- against closed-loop rules",
        f"Open-loop rules group from the text alone; closed-loop rules decide on the listener's queued audio and "
        f"the request in flight. η = δ(p) − δ(0) against {ref} in seconds, with its duration and idle parts "
        f"(from Table 2; 0 for the reference); per translator the equal-talk mean offset L (s), requests summed "
        f"over talks and the equal-talk mean joins per minute of audio (boundaries between consecutive requests "
        f"that carry audio).", table.drop(columns=["_i", "_ref"]), sigs, labels=labels, digits=digits,
        number="Table 8b")
