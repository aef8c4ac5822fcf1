"""Text latency beside speech completion: the tables, from OmniSTEval's scores and a replay.

A translator's text latency is scored by OmniSTEval 0.1.10 (long-form: LongYAAL, LongAL,
LongLAAL after resegmenting the stream onto the reference segments; see
:mod:`simulplay.workflows.textlatency`), per talk and system, in **milliseconds** on the
source clock (``ca_`` columns: on the computation-aware clock of a second trace). Speech
completion comes from a playback summary, in **seconds**: first playback ``p₁`` and the
final offset ``L``. Nothing here reads files or calls OmniSTEval.

* Each unit (whitespace word, or character other than whitespace with ``unit="char"``) of
  a stream's joined text is emitted at the latest availability of its characters: the
  update that completed it (``time_s × 1000`` ms).
* The per-output table has one row per (talk, system, condition[, backend][, realization])
  of the summary: the talk's and system's text scores (the same under every condition: the
  text never changes) beside that output's ``first_play_s`` and ``offset_s``.
* The comparison table has, per condition (and panel), one row per measure: equal-talk
  means of A and of F over the talks with both, ``mean_a_minus_f`` and the talks where A's
  value is lower / higher. The ``offset_s`` row's difference is δ = L(A) − L(F), the text
  rows say whether A produced its text earlier.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from simulplay.traces.model import Stream

UNITS = ("word", "char")
#: OmniSTEval's long-form keys → our columns (ms), source clock then computation-aware clock.
SCORE_KEYS = {"long_yaal": "long_yaal_ms", "long_al": "long_al_ms", "long_laal": "long_laal_ms"}
CA_SCORE_KEYS = {f"ca_{k}": f"ca_{v}" for k, v in SCORE_KEYS.items()}
TEXT_COLUMNS = tuple(SCORE_KEYS.values()) + tuple(CA_SCORE_KEYS.values())
COUNT_COLUMNS = ("n_segments", "n_empty_segments", "n_units", "n_units_late", "n_units_late_ca")
SPEECH_COLUMNS = ("first_play_s", "offset_s", "source_s")
PER_OUTPUT_COLUMNS = TEXT_COLUMNS + COUNT_COLUMNS + SPEECH_COLUMNS
MEASURES = TEXT_COLUMNS + ("first_play_s", "offset_s")
COMPARE_COLUMNS = ("measure", "n_talks", "mean_a", "mean_f", "mean_a_minus_f", "n_a_lower", "n_a_higher")


def unit_emissions(stream: Stream, unit: str = "word") -> tuple[list[str], list[float]]:
    """The stream's units and each one's emission time in ms (its latest character's update)."""
    joined = stream.joined
    char_time = np.empty(len(joined), np.float64)
    pos = 0
    for i, (text, glue) in enumerate(zip(stream.texts, stream.glue)):
        if i and not glue:
            char_time[pos] = stream.times[i]  # the joining space: never inside a unit
            pos += 1
        char_time[pos:pos + len(text)] = stream.times[i]
        pos += len(text)
    pattern = r"\S+" if unit == "word" else r"\S"
    spans = [(m.start(), m.end()) for m in re.finditer(pattern, joined)]
    return [joined[a:b] for a, b in spans], [float(char_time[a:b].max()) * 1000 for a, b in spans]


def hypothesis_line(wav: str, units: Sequence[str], cu_ms: Sequence[float], ca_ms: Sequence[float] | None,
                    unit: str) -> dict[str, Any]:
    """One OmniSTEval hypothesis JSONL line: the joined units (words with a space, characters
    without) and their emission times in ms on each clock (``cu_ms`` → ``delays``; ``ca_ms``
    → ``elapsed`` when given)."""
    line: dict[str, Any] = {"source": wav, "prediction": (" " if unit == "word" else "").join(units),
                            "delays": list(cu_ms)}
    if ca_ms is not None:
        line["elapsed"] = list(ca_ms)
    return line


def per_output_table(scores: Mapping[tuple[str, str], Mapping[str, Any]], summary: pd.DataFrame,
                     keys: Sequence[str]) -> pd.DataFrame:
    """One row per summary output: its (talk, system) text scores and counts beside its
    first playback and offset (seconds). ``scores[(talk, system)]`` holds TEXT_COLUMNS and
    COUNT_COLUMNS."""
    rows = []
    for r in summary.to_dict("records"):
        s = scores[(r["talk_id"], r["system"])]
        rows.append({**{k: r[k] for k in keys}, **{c: s.get(c, np.nan) for c in TEXT_COLUMNS + COUNT_COLUMNS},
                     **{c: r[c] for c in SPEECH_COLUMNS}})
    table = pd.DataFrame(rows, columns=list(keys) + list(PER_OUTPUT_COLUMNS))
    for c in COUNT_COLUMNS:
        table[c] = table[c].astype("Int64")
    return table


def compare_table(per_output: pd.DataFrame, a: str, f: str, group_keys: Sequence[str]) -> pd.DataFrame:
    """Per group (panel keys and condition) and measure: A and F side by side over the talks
    with both values (equal-talk means), their difference and direction counts."""
    rows = []
    for key, g in per_output.groupby(list(group_keys), sort=False):
        key = key if isinstance(key, tuple) else (key,)
        pair = g[g["system"] == a].set_index("talk_id").join(g[g["system"] == f].set_index("talk_id"),
                                                             how="inner", lsuffix="_a", rsuffix="_f")
        for m in MEASURES:
            both = pair[[f"{m}_a", f"{m}_f"]].astype(float).dropna()
            va, vf = both[f"{m}_a"].to_numpy(), both[f"{m}_f"].to_numpy()
            n = len(both)
            rows.append({**dict(zip(group_keys, key)), "measure": m, "n_talks": n,
                         "mean_a": float(va.mean()) if n else np.nan, "mean_f": float(vf.mean()) if n else np.nan,
                         "mean_a_minus_f": float((va - vf).mean()) if n else np.nan,
                         "n_a_lower": int((va < vf).sum()), "n_a_higher": int((va > vf).sum())})
    return pd.DataFrame(rows, columns=list(group_keys) + list(COMPARE_COLUMNS))
