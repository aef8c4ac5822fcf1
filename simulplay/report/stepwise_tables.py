"""Report tables about the inputs themselves: the Inputs table (every file read, what it
was used for), the overview of step-by-step tables, and the player metrics.

Seconds throughout; the player means weight talks equally.
"""

from __future__ import annotations

import pandas as pd

from simulplay.core.keys import OUTPUT_ID
from simulplay.core.signature import base_signature, merge
from simulplay.grouping import canonical_condition
from simulplay.report.measured import machine_items
from simulplay.report.model import ReportTable, extend, signature_lines
from simulplay.report.order import condition_order, panels, sort_rows
from simulplay.report.read_run import RunData, relative_name

#: Player columns shown (equal-talk means per output group and pre-buffer).
PLAYER_SHOWN = ("first_playable_s", "required_startup_delay_s", "stall_count", "stall_total_s", "fluidity_index",
                "prebuffer_stall_count", "prebuffer_stall_total_s")


def inputs_table(run: RunData) -> ReportTable | None:
    """Every input: path (relative to the folder the report describes), kind, what the report
    made of it, rows, signature fingerprint, file hash."""
    if not run.files:
        return None
    files = run.files
    frame = pd.DataFrame({
        "path": [t.path.name if t.path.name.startswith("(") else relative_name(t.path, run.folder) for t in files],
        "kind": [t.what for t in files], "use": [t.use for t in files],
        "rows": pd.array([len(t.frame) if len(t.frame.columns) else None for t in files], dtype="Int64"),
        "signature_fingerprint": [t.fingerprint or "—" for t in files],
        "sha256": [t.file_sha256 for t in files]})
    sig = base_signature(table="inputs")
    return ReportTable.signed(
        "inputs", "Inputs", "Every file the report read or found, and what it did with it. Signature fingerprint: "
        "the first 12 hex digits of SHA-256 over the table's distinct display signatures (a Parquet table and its "
        "CSV copy share it); file sha256: the first 12 hex digits of the file's SHA-256. Roles are read from each "
        "table's structured signature, never from file names.", frame,
        [sig] * len(frame), labels={"signature_fingerprint": "signature fingerprint", "sha256": "file sha256"})


def stepwise_overview(run: RunData) -> ReportTable:
    """Settings and counts of step-by-step tables (no run.json): from the tables themselves."""
    man, s = run.manifest.frame, run.summary.frame
    eta_sig = next((x for x in run.eta.signatures if isinstance(x, dict)), None)
    boot = ("see the η table's signature" if eta_sig is None else
            f"{eta_sig.get('draws')} draws, seed {eta_sig.get('boot_seed')}, quantile {eta_sig.get('quantile')}, "
            f"confidence {eta_sig.get('confidence')}, generator {eta_sig.get('boot_rng', 'numpy')}, talks "
            f"{eta_sig.get('talk_order', 'sorted')}")
    outputs = man.drop_duplicates([k for k in OUTPUT_ID
                                   if k in man])
    used = [t for t in run.files if not t.use.startswith("not used")]
    items = [
        ("inputs", f"{len(run.files)} file(s), {len(used)} used (see Inputs)"),
        ("translators", f"A = {run.a}, F = {run.f} (δ = L(A) − L(F))"),
        ("rules", ", ".join(condition_order(run))), ("reference", canonical_condition(run.reference)),
        ("backend", ", ".join(dict.fromkeys(man["backend"])) if "backend" in man else "—"),
        ("realizations", man["realization"].nunique() if "realization" in man else 1),
        ("talks", s["talk_id"].nunique()), ("outputs", len(s)),
        ("requests", len(man)), ("failed requests", int((man["error"] != "").sum())),
        ("audio (s)", f"{float(man['audio_s'].sum()):.3f}"),
        ("excluded outputs", len(outputs) - len(s)),
        ("bootstrap", boot),
        ("sensitivity replays", ", ".join(run.variants) or "none"),
        ("per-talk η", "rebuilt from the summary" if str(run.per_talk.path).startswith("(") else
         str(run.per_talk.path)),
        *machine_items(run),
    ]
    frame = pd.DataFrame({"item": [k for k, _ in items], "value": [str(v) for _, v in items]})
    common = next((x for x in run.manifest.signatures if isinstance(x, dict)), {})
    sig = merge({k: v for k, v in common.items() if k != "rule"}, base_signature(table="inputs-overview"))
    return ReportTable.signed("table00_run", "The inputs", "Settings and counts read from the input tables "
                              "(step-by-step work, no run.json).", frame, [sig] * len(frame))


def player_table(run: RunData) -> ReportTable | None:
    """Equal-talk means of the player metrics (seconds) per [panel,] system, condition and
    pre-buffer; None without a player table."""
    t = run.optional.get("player")
    if t is None:
        return None
    df = t.frame.assign(_sig=range(len(t.frame)))
    df["condition"] = df["condition"].map(canonical_condition)
    shown = [c for c in PLAYER_SHOWN if c in df]
    for c in shown + ["prebuffer_s"]:
        df[c] = pd.to_numeric(df[c], errors="coerce")
    keys = panels(df) + ["system", "condition", "prebuffer_s"]
    g = df.groupby(keys, sort=False)
    table = g.agg(n_talks=("talk_id", "nunique"), **{c: (c, "mean") for c in shown}, _sig=("_sig", "first"))
    table = sort_rows(table.reset_index(), run, ["system", "condition", "prebuffer_s"])
    sigs = [extend(t.signatures[int(i)], {"table": "player-means"}) for i in table["_sig"]]
    digits = {"fluidity_index": 4, "stall_count": 2, "prebuffer_stall_count": 2}
    out = ReportTable.signed(
        "player_metrics", "Streaming player metrics per condition",
        "Equal-talk means in seconds (counts per output) from the player table: first playable audio, the start-up "
        "delay that removes every wait, stalls longer than the table's minimum (count, total), the fluidity index "
        "(deadlines met / all) and stalls with each pre-buffer.", table.drop(columns="_sig"), sigs, digits=digits,
        labels={"prebuffer_s": "pre-buffer (s)", "first_playable_s": "first playable (s)",
                "required_startup_delay_s": "required start-up delay (s)", "stall_count": "stalls",
                "stall_total_s": "stall total (s)", "fluidity_index": "fluidity",
                "prebuffer_stall_count": "stalls with pre-buffer",
                "prebuffer_stall_total_s": "stall total with pre-buffer (s)"})
    # the pre-buffer is a column: shown once as (per row); each CSV row keeps its full signature
    out.lines = signature_lines([extend(s, {"prebuffer": "(per row)"}) for s in sigs])
    return out

