"""Cross-backend interaction (Truong & Le (2026), Appendix C.4, "Piper minus XTTS"): for panels that
hold the same talks and systems under several backends, per talk and condition

    interaction_s(w) = η_s(w; B1) − η_s(w; B2)

with its duration and idle parts (each the same difference of η's parts, so they sum to
it), the equal-talk mean, a paired talk-bootstrap interval and direction counts. The
bootstrap resamples talks with one index matrix per panel (draws × common talks, the
matrix each backend's own η interval uses when both have those talks), shared by every
condition, so a talk's η under both backends stays together in every draw. Other panel
keys (realization, edge threshold) stay panels: backends are compared within each, never
pooled across them. Seconds; means weight talks equally.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from simulplay.analysis.bootstrap import Bootstrap
from simulplay.analysis.paired import paired_row
from simulplay.core.errors import IncompleteError, InputError
from simulplay.core.keys import PANEL_KEYS
from simulplay.core.signature import format_signature

INTERACTION_COLUMNS = ("condition", "backend1", "backend2", "n_talks", "eta1_s", "eta2_s", "interaction_s",
                       "ci_low_s", "ci_high_s", "n_negative", "n_zero", "n_positive", "duration_part_s",
                       "idle_part_s")
PER_TALK_COLUMNS = ("talk_id", "condition", "backend1", "backend2", "eta1_s", "eta2_s", "interaction_s",
                    "duration_part_s", "idle_part_s")
OTHER_PANEL_KEYS = tuple(k for k in PANEL_KEYS if k != "backend")  # within a backend pair


@dataclass
class InteractionResult:
    """Means with intervals (one row per panel and condition) and the per-talk values."""

    table: pd.DataFrame
    signatures: list[dict[str, Any]]
    per_talk: pd.DataFrame
    per_talk_signatures: list[dict[str, Any]]
    excluded: list[str]


def parse_backend_pair(text: str, flag: str = "--interaction") -> tuple[str, str]:
    """``B1,B2``: two different backend labels (as the summary's ``backend`` column spells them)."""
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2 or not all(parts) or parts[0] == parts[1]:
        raise InputError.at(f"{flag} '{text}'", "is not a pair of two different backends",
                            accepted="BACKEND1,BACKEND2 as in the summary's backend column, e.g. "
                            "piper:en_US-joe-medium,xtts:Ana Florence")
    return parts[0], parts[1]


def interaction(per_talk: pd.DataFrame, signatures: Sequence[dict[str, Any]], b1: str, b2: str, *,
                boot: Bootstrap, allow_incomplete: bool = False, source: str = "summary",
                flag: str = "--interaction") -> InteractionResult:
    """η(B1) − η(B2) per talk and condition from a per-talk η table (``compute_eta``'s,
    with a ``backend`` column), within each other panel (realization, threshold)."""
    if "backend" not in per_talk:
        raise InputError.at(source, "has no backend column: one backend only", field=flag,
                            accepted="a summary of outputs synthesized with several backends")
    known = list(dict.fromkeys(per_talk["backend"]))
    for b in (b1, b2):
        if b not in known:
            raise InputError.at(source, f"no backend '{b}'", field=flag, accepted=", ".join(known))
    keys = [k for k in OTHER_PANEL_KEYS if k in per_talk]
    df = per_talk.assign(_sig=range(len(per_talk)))
    rows, sigs, talk_rows, talk_sigs, excluded = [], [], [], [], []
    groups = df.groupby(keys, sort=False) if keys else [((), df)]
    for key, panel in groups:
        pk = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
        one, two = (panel[panel["backend"] == b].set_index(["condition", "talk_id"]) for b in (b1, b2))
        talks, dropped = _common_talks(one, two, b1, b2, pk, allow_incomplete, source)
        common = set(talks)
        talks = boot.order_talks(t for t in panel["talk_id"] if t in common)
        excluded += dropped
        idx = boot.indices(len(talks))
        for cond in dict.fromkeys(one.index.get_level_values("condition")):
            e1, e2 = one.loc[cond].loc[talks], two.loc[cond].loc[talks]
            diff = boot.ties(e1["eta_s"] - e2["eta_s"])
            dur = (e1["duration_part_s"] - e2["duration_part_s"]).to_numpy(float)
            idle = (e1["idle_part_s"] - e2["idle_part_s"]).to_numpy(float)
            sig = _signature(signatures[int(e1["_sig"].iloc[0])], signatures[int(e2["_sig"].iloc[0])], b1, b2,
                             boot, len(dropped) if allow_incomplete else None)
            rows.append({**pk, "condition": cond, "backend1": b1, "backend2": b2, "n_talks": len(talks),
                         "eta1_s": float(e1["eta_s"].mean()), "eta2_s": float(e2["eta_s"].mean()),
                         **paired_row("interaction_s", diff, dur, idle, boot, idx)})
            sigs.append(sig)
            for t, a, b, d, dp, ip in zip(talks, e1["eta_s"], e2["eta_s"], diff, dur, idle):
                talk_rows.append({**pk, "talk_id": t, "condition": cond, "backend1": b1, "backend2": b2,
                                  "eta1_s": float(a), "eta2_s": float(b), "interaction_s": float(d),
                                  "duration_part_s": float(dp), "idle_part_s": float(ip)})
                talk_sigs.append({**sig, "table": "interaction-per-talk"})
    return InteractionResult(pd.DataFrame(rows, columns=[*keys, *INTERACTION_COLUMNS]), sigs,
                             pd.DataFrame(talk_rows, columns=[*keys, *PER_TALK_COLUMNS]), talk_sigs, excluded)


def _common_talks(one: pd.DataFrame, two: pd.DataFrame, b1: str, b2: str, pk: dict, allow_incomplete: bool,
                  source: str) -> tuple[list[str], list[str]]:
    """Talks (sorted; the caller puts them in ``boot.talk_order``) with η under every
    condition of both backends; the others refused (or, when allowed, dropped and named)."""
    where = f" in panel {format_signature(pk)}" if pk else ""
    conds1 = set(one.index.get_level_values("condition"))
    conds2 = set(two.index.get_level_values("condition"))
    if conds1 != conds2:
        raise InputError.at(source, f"backends {b1} and {b2} have different conditions{where} "
                            f"({', '.join(sorted(conds1 ^ conds2))} in one only)", field="--interaction",
                            accepted="the same grouping conditions under both backends")
    have = [{t for t in frame.index.get_level_values("talk_id")
             if all((c, t) in frame.index for c in conds1)} for frame in (one, two)]
    everywhere = set.union(*[set(f.index.get_level_values("talk_id")) for f in (one, two)])
    missing = sorted(everywhere - (have[0] & have[1]))
    labels = [f"talk {t} ({', '.join(b for b, h in ((b1, have[0]), (b2, have[1])) if t not in h)} lacks it)"
              for t in missing]
    if labels and not allow_incomplete:
        raise IncompleteError(f"{source}: {len(labels)} talk(s) are not under both backends{where}: "
                              f"{'; '.join(labels[:5])} (pass --allow-incomplete to compare the common talks "
                              "and count the others)")
    talks = sorted(have[0] & have[1])
    if not talks:
        raise IncompleteError(f"{source}: no talk is under both backends {b1} and {b2}{where}")
    return talks, labels


def _signature(s1: dict[str, Any], s2: dict[str, Any], b1: str, b2: str, boot: Bootstrap,
               excluded: int | None) -> dict[str, Any]:
    """Keys both η signatures share, the differing ones as ``v1 − v2`` (display only), the
    pair, the bootstrap and the exclusions."""
    s1 = s1 if isinstance(s1, dict) else {"eta": s1}
    s2 = s2 if isinstance(s2, dict) else {"eta": s2}
    out: dict[str, Any] = {}
    for k in dict.fromkeys([*s1, *s2]):
        v1, v2 = s1.get(k), s2.get(k)
        out[k] = v1 if v1 == v2 else f"{format_signature({k: v1}).partition(':')[2]} − " \
                                     f"{format_signature({k: v2}).partition(':')[2]}"
    out.update({"table": "interaction", "backend": f"{b1} − {b2}", **boot.signature()})
    if excluded is not None:
        out["excluded"] = excluded
    return out


def combine_interactions(results: Sequence[InteractionResult]) -> InteractionResult | None:
    """Every backend pair's interaction in one result: the tables' rows and signatures one
    pair after another, in the order given (None when there is no pair). The one builder
    of the interaction tables that ``simulplay eta``, ``simulplay run`` and
    ``simulplay.eta`` show and write."""
    if not results:
        return None
    return InteractionResult(pd.concat([r.table for r in results], ignore_index=True),
                             [s for r in results for s in r.signatures],
                             pd.concat([r.per_talk for r in results], ignore_index=True),
                             [s for r in results for s in r.per_talk_signatures],
                             [x for r in results for x in r.excluded])
