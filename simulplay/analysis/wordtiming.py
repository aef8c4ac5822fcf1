"""Word timing in playback coordinates (Truong & Le (2026), Appendix E): when does a recognizable
intended word finish playing after its text became available?

* **Availability.** The manifest keeps request texts but not update times, so
  availability comes from the trace (``--trace``): each intended whitespace word
  inherits the latest availability (``time_s``) of its characters in the stream's
  joined text. The output's intended text (its requests joined) must equal that text.
* **Units.** A word's unit is its normalized token (lowercase; Unicode letters, numbers
  and ASCII apostrophes; see :func:`simulplay.analysis.content.normalize_token`);
  punctuation-only words have no unit and are never timed, but count in the
  denominator. Recognized words become units the same way.
* **Matching.** :func:`simulplay.analysis.alignment.unambiguous_matches`: a word is
  accepted only when every optimal unit-cost alignment gives it the same exact match.
* **Valid times.** A matched recognized word needs finite times with start < end inside
  its recognition piece; otherwise the word stays unknown (``invalid_time``), never zero.
* **Playback.** Compact time ``u`` (the recognizer's word end, window offset added) in
  played part ``j`` maps to ``p_j + (u − q_j)``: ``q_j`` the part's start in the compact
  waveform (from sample counts), ``p_j`` its playback start from the replay (request
  release, measured service). An end exactly at a join belongs to the preceding part.
* **Added delay** ``ℓ = playback end − availability`` (seconds).
* **Common subset.** Per panel, system and talk, the words accepted in every condition;
  per talk the change of the median and 90th percentile of ℓ from the reference
  condition, then equal-talk means with the paired talk bootstrap (one index matrix per
  panel and system, shared by all conditions and both quantiles) and the number of
  talks with a lower median (Table 17 shape). Differences of quantiles, not quantiles of
  paired differences. Defaults: seed 20261005 and NumPy's ``linear`` (Truong & Le
  (2026), Appendix E.3); the within-talk quantiles need a NumPy method, so an order-statistic
  convention (:mod:`simulplay.analysis.bootstrap`) is refused here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from simulplay.analysis.alignment import ACCEPTED, unambiguous_matches
from simulplay.analysis.bootstrap import WORD_TIMING_METHOD, WORD_TIMING_SEED, Bootstrap
from simulplay.analysis.content import complete_outputs, normalize_token
from simulplay.core.errors import IncompleteError, InputError
from simulplay.core.keys import OUTPUT_KEYS, PANEL_KEYS, RUN_PANEL_KEYS, present
from simulplay.core.signature import base_signature, merge
from simulplay.core.timebase import part_dur_ns, to_ns
from simulplay.grouping import canonical_condition
from simulplay.traces.model import Stream

WORD_COLUMNS = ("word_index", "word", "unit", "available_s", "status", "recognized_index", "compact_end_s",
                "play_end_s", "added_delay_s", "common")
TABLE_COLUMNS = ("condition", "reference", "n_talks", "n_common_words", "mean_coverage_pct", "delta_median_s",
                 "median_ci_low_s", "median_ci_high_s", "delta_p90_s", "p90_ci_low_s", "p90_ci_high_s",
                 "n_lower_median")


def word_availability(stream: Stream) -> tuple[list[str], np.ndarray]:
    """Whitespace words of the stream's joined text and each one's latest character time (s)."""
    joined = stream.joined
    char_time = np.empty(len(joined), np.float64)
    pos = 0
    for i, (text, glue) in enumerate(zip(stream.texts, stream.glue)):
        if i and not glue:
            char_time[pos] = stream.times[i]  # the joining space (never inside a word)
            pos += 1
        char_time[pos:pos + len(text)] = stream.times[i]
        pos += len(text)
    spans = [(m.start(), m.end()) for m in re.finditer(r"\S+", joined)]
    words = [joined[a:b] for a, b in spans]
    avail = np.array([char_time[a:b].max() for a, b in spans], np.float64)
    return words, avail


def to_playback(u: np.ndarray, q: np.ndarray, d: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Playback times of compact coordinates ``u`` (s): part ``j`` (compact start ``q_j``,
    duration ``d_j``, playback start ``p_j``; played parts in order) maps ``u`` to
    ``p_j + (u − q_j)``. ``u`` belongs to the last part with ``q_j < u`` (an end at a join
    belongs to the preceding part); ``u ≤ 0`` or no parts give NaN."""
    u = np.asarray(u, np.float64)
    out = np.full(u.shape, np.nan)
    if len(q) == 0:
        return out
    j = np.searchsorted(q, u, side="left") - 1
    ok = (j >= 0) & np.isfinite(u)
    jj = np.clip(j, 0, len(q) - 1)
    out[ok] = p[jj[ok]] + (u[ok] - q[jj[ok]])
    return out


def valid_times(start: np.ndarray, end: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Finite, start < end, inside the recognition piece ``[lo, hi]`` (compact seconds)."""
    with np.errstate(invalid="ignore"):
        return np.isfinite(start) & np.isfinite(end) & (start < end) & (start >= lo) & (end <= hi)


def output_words(intended: str, available_s: np.ndarray, transcript: dict[str, Any], q: np.ndarray,
                 d: np.ndarray, p: np.ndarray) -> pd.DataFrame:
    """One row per intended whitespace word of one output (see the module for the rules):
    ``available_s`` per word (seconds from source start), the transcript's word and piece
    times (compact seconds) and the played parts' ``q``, ``d``, ``p`` of :func:`to_playback`;
    ``play_end_s`` and ``added_delay_s`` in seconds, NaN for a word not timed."""
    words = intended.split()
    units = [normalize_token(w) for w in words]
    rec = [normalize_token(str(w)) for w in transcript["word"]]
    has_unit = np.array([bool(x) for x in units], bool)
    rec_idx = np.array([i for i, x in enumerate(rec) if x], np.int64)
    match, status = unambiguous_matches([x for x in units if x], [rec[i] for i in rec_idx])
    n = len(words)
    st = np.array(["punctuation"] * n, dtype=object)
    recognized = np.full(n, -1, np.int64)
    st[has_unit] = status
    if len(rec_idx):
        recognized[has_unit] = np.where(match >= 0, rec_idx[np.maximum(match, 0)], -1)
    piece = np.asarray(transcript["word_piece"], np.int64)
    lo = np.asarray(transcript["piece_start_s"], np.float64)[piece]
    hi = np.asarray(transcript["piece_end_s"], np.float64)[piece]
    ws, we = np.asarray(transcript["word_start_s"], np.float64), np.asarray(transcript["word_end_s"], np.float64)
    ok_time = valid_times(ws, we, lo, hi)
    compact_end = np.full(n, np.nan)
    sel = recognized >= 0
    bad = sel.copy()
    bad[sel] = ~ok_time[recognized[sel]]
    st[bad] = "invalid_time"
    timed = sel & ~bad
    compact_end[timed] = we[recognized[timed]]
    play_end = to_playback(compact_end, q, d, p)
    return pd.DataFrame({"word_index": np.arange(n), "word": words, "unit": units, "available_s": available_s,
                         "status": st, "recognized_index": recognized, "compact_end_s": compact_end,
                         "play_end_s": play_end, "added_delay_s": play_end - available_s,
                         "common": np.zeros(n, bool)})


@dataclass
class TimingResult:
    """Per-word timing (seconds; NaN where a word is not timed), the per-talk quantile
    changes and the Table 17 summary (seconds, bootstrap intervals), each with one
    signature per row; ``excluded`` names the outputs left out (``allow_incomplete``)."""

    words: pd.DataFrame
    word_signatures: list[dict[str, Any]]
    per_talk: pd.DataFrame
    per_talk_signatures: list[dict[str, Any]]
    table: pd.DataFrame
    table_signatures: list[dict[str, Any]]
    excluded: list[str] = field(default_factory=list)


def timing_bootstrap(draws: int = 10_000, confidence: float = 0.95) -> Bootstrap:
    """The word-timing bootstrap with the settings Truong & Le (2026) state for Table 17: seed
    20261005 and NumPy's linear quantiles (its generator is not stated; this is NumPy's)."""
    return Bootstrap(draws=draws, seed=WORD_TIMING_SEED, method=WORD_TIMING_METHOD, confidence=confidence)


def check_timing_bootstrap(boot: Bootstrap, where: str = "--quantile-method") -> None:
    """Word timing takes within-talk quantiles, which need a NumPy quantile method."""
    if boot.is_order_statistic:
        raise InputError.at(where, f"'{boot.method}' is an order-statistic convention for interval ends; word "
                            "timing also takes within-talk medians and 90th percentiles",
                            accepted="a NumPy quantile method, e.g. linear (Truong & Le (2026), Table 17)")


def word_timing(transcripts: pd.DataFrame, signatures: Sequence[dict[str, Any]], parts: pd.DataFrame,
                streams: Sequence[Stream], *, reference: str, boot: Bootstrap | None = None,
                allow_incomplete: bool = False, source: str = "transcripts") -> TimingResult:
    """Per-word timing, per-talk quantile changes and the Table 17 summary (seconds).

    ``parts``: the replay's part table (request release) of the transcripts' manifest;
    ``streams``: the traces the manifest was synthesized from.
    """
    boot = boot or timing_bootstrap()
    check_timing_bootstrap(boot)
    df = transcripts.reset_index(drop=True).assign(_sig=range(len(transcripts)))
    df["condition"] = df["condition"].map(canonical_condition)
    reference = canonical_condition(reference)
    conds = list(dict.fromkeys(df["condition"]))
    if reference not in conds:
        raise InputError.at(source, f"no condition '{reference}'", field="--reference", accepted=", ".join(conds))
    df, excluded = complete_outputs(df, allow_incomplete, source)
    by_stream = {(s.talk_id, s.system): word_availability(s) for s in streams}
    keys = [*OUTPUT_KEYS, *present(RUN_PANEL_KEYS, df.columns)]
    part_groups = {k if isinstance(k, tuple) else (k,): g for k, g in parts.groupby(keys, sort=False)}
    frames = []
    for r in df.to_dict("records"):
        key = tuple(r[k] for k in keys)
        label = "(" + ", ".join(f"{k}={v}" for k, v in zip(keys, key)) + ")"
        avail = _availability(by_stream, r, label, source)
        q, d, p = _parts(part_groups.get(key), r, label, source)
        w = output_words(str(r["intended"]), avail, r, q, d, p)
        frames.append(w.assign(**{k: r[k] for k in keys}, _sig=r["_sig"]))
    words = pd.concat(frames, ignore_index=True)
    words, dropped = _mark_common(words, keys, conds, allow_incomplete, source)
    excluded += dropped
    n_excl = len(excluded) if allow_incomplete else None
    per_talk, table, t_sigs, s_sigs = _summaries(words, keys, reference, boot, signatures, n_excl)
    word_sigs = [_sig(signatures[i], "word-timing-words", c, n_excl)
                 for i, c in zip(words["_sig"], words["condition"])]
    words = words[[*keys, *WORD_COLUMNS]]
    return TimingResult(words, word_sigs, per_talk, t_sigs, table, s_sigs, excluded)


def _sig(upstream, table, rule, n_excluded, **extra):
    return merge(upstream, {"table": table, "rule": rule, "release": "request", "service": "measured", **extra},
                 base_signature(excluded=n_excluded))


def _availability(by_stream, r, label, source) -> np.ndarray:
    key = (r["talk_id"], r["system"])
    if key not in by_stream:
        raise InputError.at(source, f"no trace stream for talk {key[0]}, system {key[1]} of output {label}",
                            field="--trace", accepted="the traces the manifest was synthesized from")
    words, avail = by_stream[key]
    intended = str(r["intended"]).split()
    if words != intended:
        k = next((i for i, (x, y) in enumerate(zip(words, intended)) if x != y), min(len(words), len(intended)))
        raise InputError.at(source, f"intended text of output {label} differs from the trace's joined text at word "
                            f"{k + 1} ({len(intended)} vs {len(words)} words)", field="--trace",
                            accepted="the traces the manifest was synthesized from")
    return avail


def _parts(g, r, label, source):
    """Played parts: compact starts (from sample counts), durations and playback starts."""
    n = np.asarray(r["request_n_samples"], np.int64)
    seqs = np.asarray(r["request_seq"], np.int64)
    rate = int(r["sample_rate"])
    if g is None:
        raise InputError.at(source, f"output {label} is not in the manifest's replay", field="--manifest",
                            accepted="the manifest the transcripts were made from")
    g = g.set_index("seq")
    played = n > 0
    if not set(seqs[played]) <= set(g.index) or (played.any() and rate <= 0):
        raise InputError.at(source, f"output {label}: its requests differ from the manifest's", field="--manifest",
                            accepted="the manifest the transcripts were made from")
    d = n[played] / rate if played.any() else np.zeros(0)
    # replay's durations in whole ns, from the same running sample totals: equal exactly
    replayed = to_ns(g.loc[seqs[played], "audio_s"].to_numpy(float))
    if not np.array_equal(replayed, part_dur_ns(np.zeros(int(played.sum()), np.int64), n[played],
                                                np.full(int(played.sum()), max(rate, 1)))):
        raise InputError.at(source, f"output {label}: request durations differ from the manifest's",
                            field="--manifest", accepted="the manifest the transcripts were made from")
    q = np.concatenate([[0], np.cumsum(n[played])[:-1]]) / rate if played.any() else np.zeros(0)
    return q, d, g.loc[seqs[played], "play_s"].to_numpy(float)


def _mark_common(words, keys, conds, allow_incomplete, source):
    """``common``: accepted in every condition of its panel, system and talk."""
    group = [k for k in keys if k != "condition"]
    panel = present(RUN_PANEL_KEYS, group)
    n_cond = words.groupby(group, sort=False)["condition"].transform("nunique")
    # the conditions of each panel (a backend may have been run under fewer rules than another)
    panel_conds = (words.groupby(panel, sort=False)["condition"].transform("nunique") if panel
                   else pd.Series(len(conds), index=words.index))
    full = n_cond == panel_conds
    missing = words.loc[~full, group].drop_duplicates()
    labels = ["(" + ", ".join(f"{k}={v}" for k, v in row.items()) + "): not every condition is complete"
              for row in missing.to_dict("records")]
    if labels and not allow_incomplete:
        raise IncompleteError(f"{source}: {len(labels)} talk(s) lack a complete transcript for some condition: "
                              f"{labels[0]} (pass --allow-incomplete to exclude them and count them)")
    words = words[full].reset_index(drop=True)
    accepted = (words["status"] == ACCEPTED) & words["added_delay_s"].notna()
    n_acc = accepted.groupby([words[k] for k in group + ["word_index"]], sort=False).transform("sum")
    words["common"] = accepted & (n_acc == panel_conds[full].to_numpy())
    return words, labels


def _summaries(words, keys, reference, boot, signatures, n_excl):
    panel = [k for k in PANEL_KEYS if k in keys] + ["system"]
    talk_rows, talk_sigs, rows, sigs = [], [], [], []
    for pkey, g in words.groupby(panel, sort=False):
        pk = dict(zip(panel, pkey if isinstance(pkey, tuple) else (pkey,)))
        per = _per_talk(g, reference, boot.method)
        talks = sorted(per.loc[per["n_common"] > 0, "talk_id"].unique())
        idx = boot.indices(len(talks)) if talks else None
        sig0 = signatures[int(g["_sig"].iloc[0])]
        for t in per.to_dict("records"):
            talk_rows.append({**pk, **t})
            talk_sigs.append(_sig(sig0, "word-timing-per-talk", t["condition"], n_excl, reference=reference,
                                  quantile=boot.method))
        for cond in [c for c in dict.fromkeys(g["condition"]) if c != reference]:
            c = per[(per["condition"] == cond) & per["talk_id"].isin(talks)].set_index("talk_id").loc[talks]
            dm, d9 = c["delta_median_s"].to_numpy(float), c["delta_p90_s"].to_numpy(float)
            lo_m, hi_m = boot.interval(dm, idx) if talks else (np.nan, np.nan)
            lo_9, hi_9 = boot.interval(d9, idx) if talks else (np.nan, np.nan)
            cov = per[per["condition"] == cond]["coverage_pct"]
            rows.append({**pk, "condition": cond, "reference": reference, "n_talks": len(talks),
                         "n_common_words": int(c["n_common"].sum()), "mean_coverage_pct": float(cov.mean()),
                         "delta_median_s": float(dm.mean()) if talks else np.nan, "median_ci_low_s": lo_m,
                         "median_ci_high_s": hi_m, "delta_p90_s": float(d9.mean()) if talks else np.nan,
                         "p90_ci_low_s": lo_9, "p90_ci_high_s": hi_9, "n_lower_median": int((boot.ties(dm) < 0).sum())})
            sigs.append(_sig(sig0, "word-timing", cond, n_excl, reference=reference, **boot.signature()))
    table = pd.DataFrame(rows, columns=[*panel, *TABLE_COLUMNS])
    return pd.DataFrame(talk_rows), table, talk_sigs, sigs


def _per_talk(g: pd.DataFrame, reference: str, method: str) -> pd.DataFrame:
    """Per talk and condition: coverage, median and p90 of ℓ on the common subset, and
    their change from the reference condition (differences of quantiles)."""
    rows = []
    for (talk, cond), w in g.groupby(["talk_id", "condition"], sort=False):
        delay = w.loc[w["common"], "added_delay_s"].to_numpy(float)
        med, p90 = (np.quantile(delay, [0.5, 0.9], method=method) if len(delay) else (np.nan, np.nan))
        rows.append({"talk_id": talk, "condition": cond, "n_words": len(w),
                     "n_accepted": int((w["status"] == ACCEPTED).sum()), "n_common": len(delay),
                     "coverage_pct": 100.0 * len(delay) / len(w) if len(w) else np.nan,
                     "median_s": float(med), "p90_s": float(p90)})
    per = pd.DataFrame(rows)
    ref = per[per["condition"] == reference].set_index("talk_id")
    per["delta_median_s"] = per["median_s"] - per["talk_id"].map(ref["median_s"])
    per["delta_p90_s"] = per["p90_s"] - per["talk_id"].map(ref["p90_s"])
    return per
