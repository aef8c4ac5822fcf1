"""η point values recomputed from a playback summary, to tell which given η, per-talk and
contrast tables come from it, and the replay settings a structured signature names.

Point values are the means, duration and idle parts and direction counts (seconds and
talks), compared to 1 ns; bootstrap intervals are not redrawn (``draws=1``).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import permutations
from typing import Any

import numpy as np
import pandas as pd

from simulplay.analysis.bootstrap import Bootstrap
from simulplay.analysis.eta import EtaResult, compute_eta
from simulplay.core.errors import IncompleteError, InputError
from simulplay.grouping import canonical_condition
from simulplay.report.inputs import TableFile
from simulplay.report.read_run import keys_as_text

TOL = 1e-9
PANEL = ("backend", "realization")
ETA_POINTS = ("n_talks", "delta_ref_s", "delta_s", "eta_s", "n_negative", "n_positive", "duration_part_s",
              "idle_part_s")
TALK_POINTS = ("delta_ref_s", "delta_s", "eta_s", "duration_part_s", "idle_part_s")
CONTRAST_POINTS = ("n_talks", "delta_p1_s", "delta_p2_s", "diff_s", "n_negative", "n_positive", "duration_part_s",
                   "idle_part_s")


def canonical(df: pd.DataFrame) -> pd.DataFrame:
    """Conditions as canonical rule strings (``punct`` → ``punct:cap=2,min_words=3``)."""
    return df.assign(condition=df["condition"].map(canonical_condition)) if "condition" in df else df


def primary_replay(sig: Any) -> bool | None:
    """Whether a structured signature is the primary replay's (``None``: not structured)."""
    if not isinstance(sig, dict):
        return None
    return (sig.get("release", "request") == "request" and sig.get("service", "measured") == "measured"
            and sig.get("trim", "none") == "none" and sig.get("silent", "skip") == "skip" and "threshold" not in sig)


def replay_label(sig: dict[str, Any]) -> str:
    """``release-chunk``, ``service-zero``, ``service-scale-2``: the label a sensitivity
    replay's η column gets (as `simulplay run` names its files)."""
    parts = []
    if sig.get("release", "request") != "request":
        parts.append(f"release={sig['release']}")
    if sig.get("service", "measured") != "measured":
        parts.append(f"service={sig['service']}")
    if sig.get("trim", "none") != "none":
        parts.append(f"trim={sig['trim']}")
    if sig.get("silent", "skip") != "skip":
        parts.append(f"silent={sig['silent']}")
    return "+".join(parts).replace("=", "-")


class Rebuild:
    """η point values recomputed from the primary summary, per (A, F, reference, contrasts)."""

    def __init__(self, summary: pd.DataFrame):
        self.summary = summary
        self._cache: dict[tuple, EtaResult | None] = {}

    def __call__(self, names: tuple[str, str, str], pairs: tuple = ()) -> EtaResult | None:
        key = (*names, pairs)
        if key not in self._cache:
            a, f, ref = names
            try:
                self._cache[key] = compute_eta(self.summary, a=a, f=f, reference=ref, boot=Bootstrap(draws=1, seed=0),
                                               contrasts=list(pairs), allow_incomplete=True)
            except (InputError, IncompleteError):
                self._cache[key] = None
        return self._cache[key]


def points_mismatch(given: pd.DataFrame, rebuilt: pd.DataFrame, keys: Sequence[str], cols: Sequence[str], *,
                     subset: bool = False) -> str | None:
    """The first row where ``given`` differs from ``rebuilt`` (``None`` when they agree)."""
    keys = [k for k in keys if k in rebuilt.columns]
    if set(keys + list(cols)) - set(given.columns):
        return "its columns differ"
    g = canonical(keys_as_text(given)) if "condition" in given else keys_as_text(given)
    both = g[keys + list(cols)].merge(keys_as_text(rebuilt)[keys + list(cols)], on=keys, how="left" if subset else
                                      "outer", suffixes=("", "_rebuilt"), indicator=True)
    bad = np.array(both["_merge"] != "both")
    for c in cols:
        x, y = both[c].to_numpy(float), both[f"{c}_rebuilt"].to_numpy(float)
        bad |= ~((np.isnan(x) & np.isnan(y)) | (np.abs(x - y) <= TOL))
    if not bad.any():
        return None
    row = both[bad].iloc[0]
    label = ", ".join(f"{k}={row[k]}" for k in keys)
    if row["_merge"] != "both":
        return (f"row ({label}) is not in what the summary gives" if row["_merge"] == "left_only"
                else f"row ({label}) of what the summary gives is missing")
    c = next(c for c in cols if not abs(float(row[c]) - float(row[f"{c}_rebuilt"])) <= TOL)
    return f"row ({label}): {c} {row[c]} vs {row[f'{c}_rebuilt']} from the summary"


def names_of(t: TableFile) -> set[tuple[str, str, str]] | None:
    """(A, F, reference) from structured signatures; ``None`` when some row has none."""
    if not all(isinstance(s, dict) and {"a", "f", "reference"} <= s.keys() for s in t.signatures):
        return None
    return {(s["a"], s["f"], canonical_condition(s["reference"])) for s in t.signatures}


def infer_names(t: TableFile, rebuild: Rebuild) -> list[tuple[str, str, str]]:
    """For an η table without structured names: the reference is the one summary condition
    it lacks; A, F every ordered pair of systems whose gaps reproduce it."""
    s = rebuild.summary
    refs = set(s["condition"]) - set(canonical(t.frame)["condition"])
    if len(refs) != 1:
        return []
    ref = refs.pop()
    found = []
    for a, f in permutations(dict.fromkeys(s["system"]), 2):
        res = rebuild((a, f, ref))
        if res is not None and points_mismatch(t.frame, res.table, PANEL + ("condition",), ETA_POINTS) is None:
            found.append((a, f, ref))
    return found
