"""The report's tables in the shapes Truong & Le (2026) use (numbers as the run saved them;
table numbers are that paper's).

Table 1: playback per system and condition (equal-talk means); Table 2: η with
intervals and direction counts; Tables 4–5: per-talk δ, η and the duration/idle parts;
Table 8: every rule side by side, with the sensitivity replays' η; Table 9:
buffered-policy contrasts; Table 10: edge-silence η per threshold; Table 11: trace
statistics pooled per system; Table 12: requests and groups per condition; Table 16:
non-speech share of the duration reduction; content diagnostics when present.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from simulplay.analysis.bootstrap import Bootstrap
from simulplay.analysis.interaction import interaction
from simulplay.analysis.small_panels import counts_first, small_panel_notes
from simulplay.core.signature import base_signature, merge
from simulplay.grouping import canonical_condition
from simulplay.report.latency_tables import speech_latency_table, text_latency_table
from simulplay.report.live import live_tables
from simulplay.report.loop_tables import loop_table
from simulplay.report.measured import machine_items
from simulplay.report.model import ReportTable, extend, row_strings, signature_lines
from simulplay.report.noise_tables import fit_check_table, realization_table, talk_realizations_table
from simulplay.report.order import condition_order, panels, sort_rows
from simulplay.report.quality import quality_table
from simulplay.report.read_run import RunData, Signed
from simulplay.report.spoken_tables import spoken_report_table
from simulplay.report.stepwise_tables import inputs_table, player_table, stepwise_overview
from simulplay.traces.model import ends_terminal, join_texts, word_count

TRIGGERS = ("immediate", "timer", "punct", "words", "eos", "sentence")


def _mean_over_talks(run: RunData) -> tuple[pd.DataFrame, list]:
    s = run.summary.frame.assign(_sig=range(len(run.summary.frame)))
    man = run.manifest.frame
    keys = panels(s) + ["system", "condition"]
    out_keys = keys + ["talk_id"]
    per_output = man.groupby(out_keys, sort=False).size().rename("requests").reset_index()
    s = s.merge(per_output, on=out_keys, how="left")
    g = s.groupby(keys, sort=False)
    table = g.agg(n_talks=("talk_id", "nunique"), requests_per_talk=("requests", "mean"),
                  first_play_s=("first_play_s", "mean"), audio_s=("audio_s", "mean"), idle_s=("idle_s", "mean"),
                  offset_s=("offset_s", "mean"), source_s=("source_s", "mean"), _sig=("_sig", "first")).reset_index()
    table = sort_rows(table, run, ["system", "condition"])
    sigs = [extend(run.summary.signatures[i], {"table": "playback-means"}) for i in table["_sig"]]
    return table.drop(columns="_sig"), sigs


def playback_table(run: RunData) -> ReportTable:
    """Table 1: equal-talk means per system and condition of p₁, D, I, L and S (seconds)
    and requests per talk."""
    table, sigs = _mean_over_talks(run)
    return ReportTable.signed(
        "table01_playback", "Playback per system and condition",
        "Equal-talk means in seconds: first playback p₁, audio D, idle I (including the initial wait), "
        "offset L = D + I − S; requests per talk; mean source duration S. Compare conditions within a "
        "backend: voice, frontend and hardware differ between backends.", table, sigs, digits={"requests_per_talk": 1},
        number="Table 1")


def eta_table(run: RunData) -> ReportTable:
    """Table 2: the run's η table as saved (seconds), rows in condition order."""
    eta = sort_rows(run.eta.frame.assign(_i=range(len(run.eta.frame))), run, ["condition"])
    sigs = [run.eta.signatures[i] for i in eta["_i"]]
    conf = _confidence(run)
    notes = small_panel_notes(run.eta.frame, run.per_talk.frame)
    frame = eta.drop(columns=["_i", "signature"], errors="ignore")
    if notes:  # direction counts beside η, before the interval they outweigh
        frame = counts_first(frame)
    out = ReportTable.signed(
        "table02_eta", "Grouping changes the between-translator completion gap",
        f"δ = L({run.a}) − L({run.f}) in seconds, negative when {run.a} finishes earlier; "
        f"η(w) = δ(w) − δ(0) against {run.reference}; duration part + idle part = η. Means weight talks "
        f"equally; {conf}intervals from the paired talk bootstrap within each panel; η<0 / η>0 count talks.",
        frame, sigs, number="Table 2")
    out.notes = notes
    return out


def per_talk_table(run: RunData) -> ReportTable:
    """Tables 4–5: per-talk δ, η and its parts (seconds), with each talk's source duration S."""
    pt = run.per_talk.frame.assign(_i=range(len(run.per_talk.frame)))
    src = run.summary.frame.groupby("talk_id")["source_s"].first()
    pt.insert(pt.columns.get_loc("condition") + 1, "source_s", pt["talk_id"].map(src))
    pt = sort_rows(pt, run, ["condition", "talk_id"])
    sigs = [run.per_talk.signatures[i] for i in pt["_i"]]
    return ReportTable.signed(
        "table04_per_talk", "Per-talk completion gaps and their change",
        f"Seconds. δ = L({run.a}) − L({run.f}); η = δ(w) − δ(0); the duration and idle parts sum to η. "
        "Every talk is kept, including exceptions.", pt.drop(columns=["_i", "signature"], errors="ignore"), sigs,
        number="Tables 4–5")


def rules_table(run: RunData) -> ReportTable:
    """Table 8: δ(0), δ(p) and η(p) of every rule (seconds), with one η column per
    sensitivity replay (``eta_s[NAME]``, its signatures kept per row)."""
    keys = panels(run.eta.frame) + ["condition"]
    eta = run.eta.frame.assign(_i=range(len(run.eta.frame)))
    table = eta[keys + ["delta_ref_s", "delta_s", "eta_s", "_i"]]
    extra = {}
    for name, v in run.variants.items():
        col = f"eta_s[{name}]"
        vf = v.frame.assign(**{f"_sig[{name}]": range(len(v.frame))})[keys + ["eta_s", f"_sig[{name}]"]]
        table = table.merge(vf.rename(columns={"eta_s": col}), on=keys, how="left", validate="one_to_one")
        extra[name] = v
    table = sort_rows(table, run, ["condition"])
    sigs = [run.eta.signatures[i] for i in table["_i"]]
    spans = []
    for _, g in table.groupby(panels(table), sort=False) if panels(table) else [((), table)]:
        spans.append(f"{float(g['delta_s'].max() - g['delta_s'].min()):.3f} s")
    out = ReportTable.signed(
        "table08_rules", "Every grouping rule side by side",
        f"Seconds. η(p) = δ(p) − δ(0) against {run.reference}; compare two buffered rules by the difference of "
        f"their δ(p) (Table 9), not of their η. Span of mean δ(p) over these rules: {', '.join(spans)} (per panel). "
        "The η columns of the sensitivity replays keep text, grouping and samples fixed and change only release, "
        "service or the reading of silent parts (silent=hold: a part without audio holds the clock).",
        table.drop(columns=["_i"] + [f"_sig[{n}]" for n in extra]), sigs, number="Table 8")
    out.lines = [f"primary: {line}" for line in out.lines]
    out.notes = small_panel_notes(run.eta.frame, brief=True)
    for name, v in extra.items():
        vs = [v.signatures[int(i)] if not pd.isna(i) else "" for i in table[f"_sig[{name}]"]]
        out.lines += [f"{name}: {line}" for line in signature_lines([s for s in vs if s != ""])]
        out.extra_signatures[name] = row_strings(vs)
    return out


def interaction_table(run: RunData) -> ReportTable | None:
    """Cross-backend interaction η(B1) − η(B2) (Truong & Le (2026), Appendix C.4) when the run has two or more
    backends: every pair in order of appearance, with the η table's bootstrap settings."""
    pt = run.per_talk.frame
    if "backend" not in pt or pt["backend"].nunique() < 2:
        return None
    backends = list(dict.fromkeys(pt["backend"]))
    sig = next((s for s in run.eta.signatures if isinstance(s, dict) and "draws" in s), None)
    boot = Bootstrap() if sig is None else Bootstrap.from_signature(sig)
    frames, sigs, excluded = [], [], 0
    for i, b1 in enumerate(backends):
        for b2 in backends[i + 1:]:
            res = interaction(pt.assign(condition=pt["condition"].map(canonical_condition)), run.per_talk.signatures,
                              b1, b2, boot=boot, allow_incomplete=True, source=str(run.per_talk.path))
            frames.append(res.table)
            sigs += res.signatures
            excluded += len(res.excluded)
    table = sort_rows(pd.concat(frames, ignore_index=True), run, ["condition"])
    setting = ("" if sig is not None else " The η table records no bootstrap settings, so the defaults are used "
               f"({boot.draws} draws, seed {boot.seed}, {boot.method}).")
    note = f" {excluded} talk(s) not under both backends are left out." if excluded else ""
    return ReportTable.signed(
        "table07_interaction", "Cross-backend interaction η(B1) − η(B2)",
        "Seconds. Per talk and condition, η under backend B1 minus η under B2 (the paper's \"Piper minus XTTS\"), "
        "then the equal-talk mean with a paired talk-bootstrap interval (one index matrix over the talks both "
        "backends hold) and the talks with a negative / positive interaction; the duration and idle parts are the "
        "same differences of η's parts. Voice, frontend, implementation and device differ between backends."
        + setting + note, table, [sigs[i] for i in table.index],
        labels={"backend1": "B1", "backend2": "B2", "eta1_s": "η(B1) (s)", "eta2_s": "η(B2) (s)",
                "interaction_s": "η(B1)−η(B2) (s)", "n_negative": "<0", "n_zero": "=0", "n_positive": ">0"})


def contrast_table(run: RunData) -> ReportTable | None:
    """Table 9: the buffered-policy contrasts δ(P1) − δ(P2) in seconds; None without any."""
    if run.contrasts is None or run.contrasts.frame.empty:
        return None
    c = run.contrasts
    conf = _confidence(run)
    out = ReportTable.signed(
        "table09_contrasts", "Buffered-policy contrasts δ(P1) − δ(P2)",
        f"Seconds. Compared directly, with the same paired talk bootstrap ({conf}intervals); the counts are "
        "talks with a negative / positive difference.", c.frame.drop(columns="signature"), c.signatures,
        labels={"n_negative": "diff<0", "n_zero": "diff=0", "n_positive": "diff>0"}, number="Table 9")
    out.notes = small_panel_notes(c.frame, name="p1", symbol="diff")
    return out


def optional_table(run: RunData, key: str) -> ReportTable | None:
    """A table another command wrote into the run folder, shown as it is."""
    spec = {
        "eta_edges": ("table10_edges", "Grouping effects after request-edge silence removal", "Table 10",
                      "Seconds, per VAD threshold. Readiness is held fixed; only sample durations change, so this "
                      "is a retrospective sensitivity analysis. The primary analysis uses untrimmed audio."),
        "edges_nonspeech": ("table16_nonspeech", "Audio-duration reduction partitioned by speech activity",
                            "Table 16", "Seconds; the share divides summed non-speech reduction by summed total "
                            "reduction. Detector-classified speech does not establish preserved content."),
        "content": ("table13a_content", "Content diagnostics per condition: recognized against intended words",
                    None, "Rates are equal-talk means, counts pooled. Deletions are recognition mismatches, not "
                    "verified omissions."),
        "content_pairs": ("table13_content_change", "Change in recognized-against-intended edits between "
                          "conditions", "Table 13", "Per backend and system, from the first condition of the "
                          "pair to the second. Deletions are recognition mismatches, not verified omissions."),
        "word_timing": ("table17_word_timing", "Added delay of recognized words in playback time", "Table 17",
                        "Seconds; words accepted in every compared condition; intervals resample talks and leave "
                        "out recognition and timestamp error."),
    }[key]
    t: Signed | None = run.optional.get(key)
    if t is None:
        return None
    frame = t.frame.drop(columns="signature", errors="ignore")
    digits = {c: 2 for c in frame.columns if "pct" in c or "share" in c or "rate" in c}
    out = ReportTable.signed(spec[0], spec[1], spec[3], frame, t.signatures, digits=digits, number=spec[2])
    if key == "eta_edges":
        out.notes = small_panel_notes(frame, brief=True)
    return out


def trace_table(run: RunData) -> ReportTable | None:
    """Table 11: update statistics pooled per system (words per update, % of updates of at
    most two words and ending a sentence, updates after the source end); None without traces."""
    if run.traces is None:
        return None
    rows = []
    for system, g in run.traces.groupby("system", sort=False):
        words = np.array([word_count(t) for t in g["text"]])
        streams = g.groupby("talk_id", sort=False)
        rows.append({
            "system": system, "streams": streams.ngroups, "updates": len(g),
            "words": sum(word_count(join_texts(list(s["text"]), s["glue"].to_numpy())) for _, s in streams),
            "median_words": float(np.median(words)), "p90_words": float(np.percentile(words, 90)),
            "pct_le2_words": 100.0 * float(np.mean(words <= 2)),
            "pct_terminal_punct": 100.0 * float(np.mean([ends_terminal(t) for t in g["text"]])),
            "after_source_end": int((g["time_s"] > g["source_s"]).sum()),
        })
    table = sort_rows(pd.DataFrame(rows), run, ["system"])
    sig = base_signature(**run.trace_signature)
    return ReportTable.signed(
        "table11_traces", "Text updates: lengths and punctuation",
        "Pooled over the talks of each system. Words are whitespace words (punctuation-only tokens count); an "
        "update can become several requests; terminal punctuation (a sentence end as the punct rule sees it) "
        "does not label a prosodic boundary.", table, [sig] * len(table),
        digits={"median_words": 1, "p90_words": 1, "pct_le2_words": 2, "pct_terminal_punct": 2}, number="Table 11")


def requests_table(run: RunData) -> ReportTable:
    """Table 12: requests (and failures), groups, % of groups per trigger and the median
    audio of successful requests (seconds), per system and condition."""
    man = run.manifest.frame.assign(_sig=range(len(run.manifest.frame)))
    keys = panels(man) + ["system", "condition"]
    ok = man[man["error"] == ""]
    g = man.groupby(keys, sort=False)
    table = g.agg(requests=("seq", "size"), _sig=("_sig", "first")).reset_index()
    failed = (man["error"] != "").groupby([man[k] for k in keys], sort=False).sum()
    if failed.any():
        table["failed"] = failed.to_numpy()
    table["median_request_audio_s"] = ok.groupby(keys, sort=False)["audio_s"].median().reindex(
        pd.MultiIndex.from_frame(table[keys])).to_numpy()
    if {"group", "trigger"} <= set(man.columns):
        groups = man.drop_duplicates(keys + ["talk_id", "group"])
        table["groups"] = groups.groupby(keys, sort=False).size().reindex(
            pd.MultiIndex.from_frame(table[keys])).to_numpy()
        shares = pd.crosstab([groups[k] for k in keys], groups["trigger"], normalize="index") * 100
        for trig in TRIGGERS:
            if trig in shares:
                table[f"pct_{trig}"] = shares[trig].reindex(pd.MultiIndex.from_frame(table[keys])).to_numpy()
    table = sort_rows(table, run, ["system", "condition"])
    sigs = [extend(run.manifest.signatures[i], {"table": "requests"}) for i in table["_sig"]]
    digits = {c: 2 for c in table.columns if c.startswith("pct_")}
    labels = {f"pct_{t}": f"{t} (%)" for t in TRIGGERS}
    labels["median_request_audio_s"] = "median request audio (s)"
    return ReportTable.signed(
        "table12_requests", "Requests and groups per condition",
        "Requests summed over talks (a request reused from another condition counts once per use; the input-limit "
        "splitter can cut one group into several requests); groups and the share of groups released by each "
        "trigger; median audio duration of successful requests.", table.drop(columns="_sig"), sigs,
        digits=digits, labels=labels, number="Table 12")


def overview_table(run: RunData) -> ReportTable:
    """The run's settings and counts from ``run.json`` (audio in seconds); for step-by-step
    tables, their overview."""
    if run.stepwise:
        return stepwise_overview(run)
    rec, exp = run.run_record, run.settings
    boot = exp.bootstrap
    s = run.summary.frame
    items = [
        ("experiment", exp.name), ("translators", f"A = {run.a}, F = {run.f} (δ = L(A) − L(F))"),
        ("rules", ", ".join(condition_order(run))), ("reference", canonical_condition(run.reference)),
        ("backend", exp.backend), ("realizations", exp.realizations),
        ("talks", s["talk_id"].nunique()), ("outputs", len(s)),
        ("requests", _count(rec, "requests")), ("synthesized / already in store / failed",
                                                f"{rec.count('synthesized')} / {rec.count('already_in_store')} / "
                                                f"{rec.count('failed')}"),
        ("reused rows", _count(rec, "reused_rows")), ("audio (s)", f"{float(_count(rec, 'audio_s', np.nan)):.3f}"),
        ("excluded outputs", len(rec.excluded_outputs)),
        ("bootstrap", f"{boot.draws} draws, seed {boot.seed}, quantile {boot.method}, confidence {boot.confidence}, "
                      f"generator {boot.rng}, talks {boot.talk_order}"),
        ("sensitivity replays", ", ".join(exp.variant_texts) or "none"),
        *machine_items(run),
    ]
    frame = pd.DataFrame({"item": [k for k, _ in items], "value": [str(v) for _, v in items]})
    sig = merge(rec.signature, base_signature(table="run"))
    return ReportTable.signed("table00_run", "The run", f"Settings and counts from {run.folder.name}/run.json.",
                              frame, [sig] * len(frame))


def _count(rec, key: str, missing: Any = "") -> Any:
    """A count of ``run.json`` (``missing`` when it lacks it)."""
    value = rec.count(key)
    return missing if value is None else value


def _confidence(run: RunData) -> str:
    """``95 % `` (with its space), or nothing when no structured signature says."""
    conf = run.confidence
    return "" if conf is None else f"{100 * conf:g} % "


def all_tables(run: RunData) -> list[ReportTable]:
    """Every table the run supports, in report order (absent inputs leave theirs out)."""
    tables = [overview_table(run), inputs_table(run), playback_table(run), speech_latency_table(run),
              text_latency_table(run), eta_table(run), realization_table(run), fit_check_table(run),
              talk_realizations_table(run), per_talk_table(run), interaction_table(run),
              rules_table(run), loop_table(run), spoken_report_table(run), contrast_table(run),
              optional_table(run, "eta_edges"), trace_table(run), requests_table(run),
              optional_table(run, "edges_nonspeech"), optional_table(run, "content"),
              optional_table(run, "content_pairs"), optional_table(run, "word_timing"), player_table(run),
              *live_tables(run), quality_table(run)]
    return [t for t in tables if t is not None]
