"""Content diagnostics: word edits of recognized against intended words (Truong &
Le (2026), Appendix D.2, Tables 13–14 shape).

Intended words are the joined text of an output's requests; recognized words are the
recognizer's transcript of its compact waveform. Two normalizations:

* ``punct`` (punctuation-retaining): lowercase, whitespace tokens, punctuation kept;
* ``normalized``: lowercase each whitespace token, keep Unicode letters (L*), numbers
  (N*) and ASCII apostrophes, drop tokens that become empty.

Edit counts (hits H, substitutions S, deletions D, insertions I) come from jiwer's
minimum-edit alignment; ``N = H + S + D`` intended words and the error rate is
``(S + D + I) / N`` (NaN when N = 0). Rates are equal-talk means of per-output rates;
counts are pooled. **A deletion is a recognition mismatch, not a verified omission**:
every table says so (column ``deletion_mismatches`` and the signature).
Outputs with a failed window are incomplete: scoring refuses them unless allowed, and
then every signature counts the exclusions.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from simulplay.core.errors import IncompleteError, InputError
from simulplay.core.keys import OUTPUT_KEYS, RUN_PANEL_KEYS, present
from simulplay.core.signature import base_signature, merge
from simulplay.grouping import canonical_condition

NORMALIZATIONS = ("punct", "normalized")
DELETION_NOTE = "recognition mismatches, not verified omissions"
COUNT_COLUMNS = ("intended_words", "recognized_words", "hits", "substitutions", "deletion_mismatches", "insertions")


def normalize_token(token: str) -> str:
    """Lowercase; keep Unicode letters, numbers and ASCII apostrophes ('' if none remain)."""
    return "".join(ch for ch in token.lower() if ch == "'" or unicodedata.category(ch)[0] in "LN")


def tokens(text: str, normalization: str) -> list[str]:
    """The scored tokens of a text under ``punct`` or ``normalized``."""
    words = text.lower().split() if normalization == "punct" else [normalize_token(w) for w in text.split()]
    return [w for w in words if w]


def edit_counts(intended: Sequence[str], recognized: Sequence[str]) -> dict[str, Any]:
    """H, S, D, I (jiwer) and the error rate in % of two token lists."""
    import jiwer

    if intended or recognized:
        out = jiwer.process_words(" ".join(intended) or "", " ".join(recognized) or "")
        h, s, d, i = out.hits, out.substitutions, out.deletions, out.insertions
    else:
        h = s = d = i = 0
    n = h + s + d
    return {"intended_words": n, "recognized_words": h + s + i, "hits": h, "substitutions": s,
            "deletion_mismatches": d, "insertions": i,
            "error_rate_pct": 100.0 * (s + d + i) / n if n else float("nan")}


@dataclass
class ContentResult:
    """Edit counts per output and normalization, the per-condition table (pooled counts,
    equal-talk mean and pooled error rates in %) and the condition-pair table, each with
    one signature per row; ``excluded`` names the outputs left out (``allow_incomplete``)."""

    per_output: pd.DataFrame
    per_output_signatures: list[dict[str, Any]]
    table: pd.DataFrame
    table_signatures: list[dict[str, Any]]
    pairs: pd.DataFrame
    pair_signatures: list[dict[str, Any]]
    excluded: list[str] = field(default_factory=list)


def complete_outputs(transcripts: pd.DataFrame, allow_incomplete: bool, source: str) -> tuple[pd.DataFrame, list[str]]:
    """Fail closed on outputs with a failed window, or drop and name them when allowed."""
    keys = _keys(transcripts)
    bad = transcripts[~transcripts["complete"].astype(bool)]
    labels = ["(" + ", ".join(f"{k}={r[k]}" for k in keys) + f"): {r['error']}" for _, r in bad.iterrows()]
    if labels and not allow_incomplete:
        shown = "; ".join(labels[:3]) + (f"; … {len(labels) - 3} more" if len(labels) > 3 else "")
        raise IncompleteError(f"{source}: {len(labels)} incomplete transcript(s): {shown} (rerun `simulplay asr`, "
                              "or pass --allow-incomplete to exclude them and count them)")
    return transcripts[transcripts["complete"].astype(bool)], labels


def score_content(transcripts: pd.DataFrame, signatures: Sequence[dict[str, Any]], *,
                  pairs: Sequence[tuple[str, str]] = (), allow_incomplete: bool = False,
                  source: str = "transcripts") -> ContentResult:
    """Per-output edit counts, the per-condition table and the condition pairs."""
    df = transcripts.reset_index(drop=True).assign(_sig=range(len(transcripts)))
    df["condition"] = df["condition"].map(canonical_condition)
    pairs = [(canonical_condition(a), canonical_condition(b)) for a, b in pairs]
    conds = list(dict.fromkeys(df["condition"]))
    for a, b in pairs:
        for c in (a, b):
            if c not in conds:
                raise InputError.at(source, f"no condition '{c}'", field="--pairs", accepted=", ".join(conds))
    df, excluded = complete_outputs(df, allow_incomplete, source)
    if df.empty:
        raise IncompleteError(f"{source}: no complete transcript to score ({len(excluded)} excluded)")
    n_excluded = len(excluded) if allow_incomplete else None
    keys = _keys(df)
    rows, row_sigs = [], []
    for r in df.to_dict("records"):
        for norm in NORMALIZATIONS:
            counts = edit_counts(tokens(str(r["intended"]), norm), tokens(str(r["recognized"]), norm))
            rows.append({**{k: r[k] for k in keys}, "normalization": norm, **counts, "_sig": r["_sig"]})
            row_sigs.append(_sig(signatures[r["_sig"]], "content-per-output", norm, n_excluded))
    per = pd.DataFrame(rows)
    table, table_sigs = _condition_table(per, signatures, n_excluded)
    pair_table, pair_sigs = _pair_table(per, pairs, signatures, n_excluded)
    return ContentResult(per.drop(columns="_sig"), row_sigs, table, table_sigs, pair_table, pair_sigs, excluded)


def _keys(df: pd.DataFrame) -> list[str]:
    return [*OUTPUT_KEYS, *present(RUN_PANEL_KEYS, df.columns)]


def _groups(df: pd.DataFrame) -> list[str]:
    return [k for k in RUN_PANEL_KEYS if k in df.columns] + ["system"]


def _sig(upstream: dict[str, Any], table: str, norm: str, n_excluded: int | None, **extra) -> dict[str, Any]:
    return merge(upstream, {"table": table, "normalization": norm, "deletions": DELETION_NOTE, **extra},
                 base_signature(excluded=n_excluded))


def _condition_table(per: pd.DataFrame, signatures, n_excluded):
    by = _groups(per) + ["condition", "normalization"]
    rows, sigs = [], []
    for key, g in per.groupby(by, sort=False):
        pooled = {c: int(g[c].sum()) for c in COUNT_COLUMNS}
        n = pooled["intended_words"]
        errors = pooled["substitutions"] + pooled["deletion_mismatches"] + pooled["insertions"]
        rows.append({**dict(zip(by, key)), "n_talks": int(g["talk_id"].nunique()), **pooled,
                     "mean_error_rate_pct": float(np.nanmean(g["error_rate_pct"])) if g["error_rate_pct"].notna().any()
                     else float("nan"),
                     "pooled_error_rate_pct": 100.0 * errors / n if n else float("nan")})
        sigs.append(_sig(signatures[int(g["_sig"].iloc[0])], "content", key[-1], n_excluded, rule=key[-2]))
    return pd.DataFrame(rows), sigs


PAIR_COUNTS = ("hits", "substitutions", "insertions", "deletion_mismatches")


def _pair_table(per: pd.DataFrame, pairs, signatures, n_excluded):
    groups = _groups(per) + ["normalization"]
    rows, sigs = [], []
    for frm, to in pairs:
        for key, g in per.groupby(groups, sort=False):
            a = g[g["condition"] == frm].set_index("talk_id")
            b = g[g["condition"] == to].set_index("talk_id")
            talks = sorted(set(a.index) & set(b.index))
            if not talks:
                continue
            a, b = a.loc[talks], b.loc[talks]
            row = {**dict(zip(groups, key)), "from_condition": frm, "to_condition": to, "n_talks": len(talks),
                   "intended_words_from": int(a["intended_words"].sum()),
                   "intended_words_to": int(b["intended_words"].sum())}
            for c in PAIR_COUNTS:
                row[f"{c}_from"], row[f"{c}_to"] = int(a[c].sum()), int(b[c].sum())
            ra, rb = a["error_rate_pct"].to_numpy(float), b["error_rate_pct"].to_numpy(float)
            row["mean_error_rate_from_pct"] = _nanmean(ra)
            row["mean_error_rate_to_pct"] = _nanmean(rb)
            row["mean_error_rate_change_pct"] = _nanmean(rb - ra)
            row["n_talks_more_deletions"] = int((b["deletion_mismatches"].to_numpy() >
                                                 a["deletion_mismatches"].to_numpy()).sum())
            row["n_talks_higher_rate"] = int((rb > ra).sum())
            rows.append(row)
            sigs.append(_sig(signatures[int(a["_sig"].iloc[0])], "content-pairs", key[-1], n_excluded,
                             rule=f"{frm}->{to}"))
    return pd.DataFrame(rows), sigs


def _nanmean(x: np.ndarray) -> float:
    return float(np.nanmean(x)) if np.isfinite(x).any() else float("nan")
