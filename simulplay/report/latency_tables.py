"""Report tables in the field's terms: SimulEval's speech-output metrics beside D, I and L
(Table 1b, from ``simulplay latency`` or the run's ``latency.csv``) and text latency beside
speech completion (Table 1c, from ``simulplay textlatency``). Milliseconds for the
SimulEval and OmniSTEval metrics, seconds for playback; means weight talks equally."""

from __future__ import annotations

import pandas as pd

from simulplay.analysis.latency import METRIC_COLUMNS
from simulplay.grouping import canonical_condition
from simulplay.report.model import ReportTable
from simulplay.report.order import panels, sort_rows
from simulplay.report.read_run import RunData

SIMULEVAL_LABELS = {"start_offset_ms": "StartOffset", "end_offset_ms": "EndOffset", "atd_ms": "ATD",
                    "num_chunks": "NumChunks", "discontinuity_sum_ms": "Disc. sum", "discontinuity_ave_ms": "Disc. ave",
                    "discontinuity_num": "Disc. num", "rtf": "RTF"}


def _labels() -> dict[str, str]:
    out = {}
    for col, name in SIMULEVAL_LABELS.items():
        unit = " (ms)" if col.endswith("_ms") else ""
        out[col] = f"{name}{unit}"
        out[f"{col}_ca"] = f"{name} CA{unit}"
    return out


def speech_latency_table(run: RunData) -> ReportTable | None:
    """Table 1b: equal-talk means of the latency table per [panel,] system and condition,
    beside the primary replay's D, I and L."""
    t = run.optional.get("latency")
    if t is None:
        return None
    cols = [c for c in (*METRIC_COLUMNS, *(f"{c}_ca" for c in METRIC_COLUMNS)) if c in t.frame]
    df = t.frame.assign(_sig=range(len(t.frame)), condition=t.frame["condition"].map(canonical_condition))
    for c in cols:
        df[c] = pd.to_numeric(df[c], errors="coerce")
    keys = panels(df) + ["system", "condition"]
    means = df.groupby(keys, sort=False).agg(n_talks=("talk_id", "nunique"), **{c: (c, "mean") for c in cols},
                                             _sig=("_sig", "first")).reset_index()
    table = means.merge(_playback_means(run, keys), on=keys, how="left")
    table = sort_rows(table[keys + ["n_talks", "audio_s", "idle_s", "offset_s"] + cols + ["_sig"]], run,
                      ["system", "condition"])
    sigs = [t.signatures[int(i)] for i in table["_sig"]]  # the latency table's rows' own (a CSV keeps strings)
    digits = {c: 1 for c in cols if "num" in c}
    return ReportTable.signed(
        "table01b_simuleval", "SimulEval speech-output metrics beside D, I and L",
        "Equal-talk means. D, I and L in seconds (Table 1); SimulEval 1.1.4's speech-output metrics in ms (RTF = "
        "end of playback / S, no unit; NumChunks and Disc. num are counts): StartOffset, EndOffset, ATD with 300 ms "
        "pseudo-tokens on both sides, the silences between parts (Disc.). Plain: each part delayed to its dispatch "
        "time, service zero; CA: to its ready time under the measured synthesizer clock (this is not SimulEval's "
        "own --computation-aware mode, whose EndOffset does not move with compute time). Parts without audio are "
        "left out; an output without audio counts 0 chunks and has no other value.",
        table.drop(columns="_sig"), sigs, digits=digits, labels=_labels(), number="Table 1b")


def _playback_means(run: RunData, keys: list[str]) -> pd.DataFrame:
    """Equal-talk means of D, I and L (seconds) of the primary replay per ``keys`` (Table 1's)."""
    s = run.summary.frame.assign(condition=run.summary.frame["condition"].map(canonical_condition))
    return s.groupby(keys, sort=False)[["audio_s", "idle_s", "offset_s"]].mean().reset_index()


def text_latency_table(run: RunData) -> ReportTable | None:
    """Table 1c: the text-latency comparison of ``simulplay textlatency``, as it is."""
    t = run.optional.get("text_latency")
    if t is None:
        return None
    df = t.frame.drop(columns="signature", errors="ignore").assign(_sig=range(len(t.frame)))
    df["condition"] = df["condition"].map(canonical_condition)
    df = sort_rows(df, run, ["condition"])
    sigs = [t.signatures[int(i)] for i in df["_sig"]]
    return ReportTable.signed(
        "table01c_text_latency", "Text latency beside speech completion",
        f"Per condition and measure: equal-talk means of A = {run.a} and F = {run.f} over talks with both, their "
        "difference and the talks where A's value is lower / higher. Text latency (OmniSTEval 0.1.10, long-form, "
        "ms; ca_: computation-aware clock) is the same under every condition; first playback and L (offset_s) are "
        "seconds, and offset_s's difference is δ. A translator can produce text early and still finish speaking "
        "late. LongYAAL leaves out words emitted at or after the end of a talk's last reference segment.",
        df.drop(columns="_sig"), sigs, digits={"mean_a": 3, "mean_f": 3, "mean_a_minus_f": 3},
        labels={"measure": "measure", "mean_a": "A", "mean_f": "F", "mean_a_minus_f": "A − F",
                "n_a_lower": "A lower", "n_a_higher": "A higher"}, number="Table 1c")
