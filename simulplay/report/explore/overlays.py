"""What the explorer's lanes show beside the replays: a live run's virtual player (a "live"
lane under each predicted lane) and the joins ``simulplay quality`` measured (marks on the
predicted lanes). Both JSON-ready, added to each talk's data file; nanoseconds as in
:mod:`.talks`.

**Live lanes.** A ``simulplay live`` run folder holds ``timeline.parquet`` (each part the
virtual player played, per release), ``player.parquet`` (per output: L, first playback,
stalls) and ``requests.parquet`` (each request's lateness). A live output matches the
explorer's outputs of the same talk, system and condition (every panel; the live run's own
backend is its server's). Its times are seconds since the output's time 0 in the live run's
time base (the trace's divided by ``--speed``), so the explorer's source duration S must be
the live run's: otherwise the lanes would not share an axis, and the live run is refused.
Under each variant the live lane shows the release the variant replays (request, or chunk
under ``release=chunk``), and ``dL`` = L predicted by that variant − L lived (seconds). A
stall is a wait after the first part longer than 10 ms, as the live player counts it.
Shape, per talk::

    "live": {"source", "signature", "releases": {variant key: "request" | "chunk"},
             "outputs": [{release: {"seq", "chunk" (−1: a whole request), "arrival", "play",
                          "end", "wait" (ns), "late" (send lateness of the part's request,
                          ns; None: not sent), "stall" (part indices), "summary": {...},
                          "dL": {variant key: s}}} | null (per output)]}

**Joins.** The joins table ``simulplay quality`` writes beside its per-output table
(``OUT.joins``): one row per join of an output's listener audio under request release with
the measured clock (the primary replay), with the requests on either side and the level
step. Shape, per talk::

    "joins": {"source", "signature", "variant": "primary",
              "outputs": [{"seq_before", "seq", "at" (ns), "step_db", "level_before_db",
                           "level_after_db", "pause_s", "discontinuity_db"} | null]}
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simulplay.core.errors import InputError
from simulplay.core.keys import OUTPUT_ID, OUTPUT_KEYS, present
from simulplay.core.timebase import to_ns
from simulplay.formats.keyed import read_keyed_table
from simulplay.formats.live import LIVE_ACCEPTED, LIVE_MANIFEST, PLAYER, READ_BY_THE_EXPLORER, REQUESTS, TIMELINE
from simulplay.grouping import canonical_condition
from simulplay.report.explore.panel import json_value
from simulplay.report.explore.variants import Variant, shown_all
from simulplay.report.read_run import RunData

#: The live player's stall: a wait after the first part longer than this (seconds).
MIN_STALL_S = 0.010
#: Two source durations agree within this (seconds): the live run and the explorer share a time base.
SAME_S = 1e-6
LIVE_SUMMARY = ("first_play_s", "end_s", "offset_s", "idle_s", "audio_s", "stall_count", "stall_total_s",
                "stall_longest_s", "n_failed", "complete")
JOIN_SHOWN = ("step_db", "level_before_db", "level_after_db", "pause_s", "discontinuity_db")

def _text_keys(df: pd.DataFrame) -> pd.DataFrame:
    out = df.copy()
    for k in present(OUTPUT_ID, out):
        out[k] = out[k].astype(str)
    out["condition"] = out["condition"].map(canonical_condition)
    return out


def _table(path: Path, required: Sequence[str], what: str, accepted: str) -> tuple[pd.DataFrame, list[Any]]:
    df, sigs = read_keyed_table(path, required, what, accepted)
    return _text_keys(df), sigs


def _none(v: float) -> float | None:
    return float(v) if np.isfinite(v) else None


@dataclass
class LiveRun:
    """A live run's timeline, player and request tables (keys as text, conditions canonical)."""

    folder: Path
    timeline: pd.DataFrame
    player: pd.DataFrame
    requests: pd.DataFrame
    signature: str

    @classmethod
    def read(cls, path: str | Path) -> LiveRun:
        """A live run folder, or its ``timeline.parquet`` (the other two beside it)."""
        p = Path(path)
        folder = p.parent if p.suffix == ".parquet" else p
        if not folder.is_dir():
            raise InputError.at(p, "does not exist", field="--live", accepted=LIVE_ACCEPTED)
        frames = {name: _table(folder / name, cols, f"live {name.split('.')[0]} table", LIVE_ACCEPTED)
                  for name, cols in READ_BY_THE_EXPLORER.items()}
        sigs = shown_all(frames[TIMELINE][1][:1])
        return cls(folder, frames[TIMELINE][0], frames[PLAYER][0], frames[REQUESTS][0],
                   sigs[0] if sigs else "")


def find_live(run: RunData, given: str | Path | None) -> tuple[Path | None, bool]:
    """The live run to show (and whether it was given): ``--live``; else a run folder's
    ``live/`` (``simulplay demo --live``); else the folder of step-by-step tables whose
    manifest is a live manifest (``live.parquet`` beside ``timeline.parquet``)."""
    if given is not None:
        return Path(given), True
    if not run.stepwise and (run.folder / "live" / TIMELINE).is_file():
        return run.folder / "live", False
    man = Path(run.manifest.path)
    if man.name == LIVE_MANIFEST and (man.parent / TIMELINE).is_file():
        return man.parent, False
    return None, False


class LiveLanes:
    """Each explorer output's live lane, per release (built once for every talk)."""

    def __init__(self, live: LiveRun, variants: Sequence[Variant], outputs: pd.DataFrame, *, strict: bool):
        """``outputs``: the explorer's outputs (keys as text, ``source_s``); ``strict``: a
        live run whose source durations differ is refused (else :attr:`problem` says so)."""
        self.live = live
        self.releases = {v.key: "chunk" if "chunk" in v.parts.columns else "request" for v in variants}
        self.problem = ""
        key = list(OUTPUT_KEYS)
        self.player = {(*k[:3], k[3]): r for k, r in zip(live.player[[*key, "release"]].itertuples(index=False),
                                                         live.player.to_dict("records"))}
        self.parts = {k: g for k, g in live.timeline.groupby([*key, "release"], sort=False)}
        self.late = {k: dict(zip(g["seq"].astype(int), g["send_late_s"].astype(float)))
                     for k, g in live.requests.groupby(key, sort=False)}
        mine = _text_keys(outputs)
        self.matched = 0
        for row in mine.to_dict("records"):
            got = self.player.get((row["talk_id"], row["system"], row["condition"], "request"))
            if got is None:
                continue
            self.matched += 1
            if abs(float(got["source_s"]) - float(row["source_s"])) > SAME_S:
                message = (f"source duration S of talk {row['talk_id']}, system {row['system']}, condition "
                           f"{row['condition']} is {float(got['source_s']):g} s live and {float(row['source_s']):g} s "
                           "in the explorer's run: their time bases differ")
                if strict:
                    raise InputError.at(live.folder / PLAYER, message, field="source_s",
                                        accepted="a live run of the same trace at --speed 1, or the replay of the "
                                                 "live run's own manifest (live.parquet)")
                self.problem = f"Live lanes left out: in {live.folder / 'player.parquet'} the {message}."
                return
        if not self.matched:
            if strict:
                raise InputError.at(live.folder / PLAYER, "has no output (talk, system, condition) of "
                                    "the explorer's run", field="--live",
                                    accepted="a live run of the same traces and rules")
            self.problem = f"Live lanes left out: no output of {live.folder} is in the explorer's run."

    @property
    def shown(self) -> bool:
        return not self.problem

    def payload(self, talk: str, data: dict[str, Any]) -> dict[str, Any]:
        """The ``live`` entry of one talk's data (``data``: its payload from :mod:`.talks`)."""
        outputs = []
        for o, out in enumerate(data["outputs"]):
            key = (talk, str(out["system"]), out["condition"])
            entry = {rel: self._entry(key, rel, o, data) for rel in ("request", "chunk")
                     if (*key, rel) in self.player}
            outputs.append(entry or None)
        return {"source": str(self.live.folder), "signature": self.live.signature, "releases": self.releases,
                "outputs": outputs}

    def _entry(self, key: tuple[str, str, str], release: str, o: int, data: dict[str, Any]) -> dict[str, Any]:
        g = self.parts.get((*key, release), self.live.timeline.iloc[:0])
        late = self.late.get(key, {})
        wait = g["wait_s"].to_numpy(float)
        summary = self.player[(*key, release)]
        live_l = float(summary["offset_s"])
        d_l = {}
        for vkey, rel in self.releases.items():
            vo = data["variants"][vkey]["outputs"][o]
            if rel == release and vo is not None and vo["summary"].get("offset_s") is not None:
                d_l[vkey] = _none(float(vo["summary"]["offset_s"]) - live_l)
        return {"seq": g["seq"].astype(int).tolist(), "chunk": g["chunk"].astype(int).tolist(),
                **{name: to_ns(g[f"{name}_s"].to_numpy(float)).tolist() for name in ("arrival", "play", "end", "wait")},
                "late": [None if not np.isfinite(v := late.get(s, np.nan)) else int(to_ns(v))
                         for s in g["seq"].astype(int).tolist()],
                "stall": [j for j in range(1, len(wait)) if wait[j] > MIN_STALL_S],
                "summary": {c: json_value(summary.get(c)) for c in LIVE_SUMMARY if c in summary},
                "dL": d_l}


JOINS_ACCEPTED = "the joins table `simulplay quality --metrics …,joins --out OUT` writes (OUT.joins), or OUT"


class JoinMarks:
    """Each output's joins from a ``simulplay quality`` joins table."""

    def __init__(self, path: str | Path, outputs: pd.DataFrame, keys: Sequence[str]):
        """``path``: the joins table, or the per-output table it lies beside; ``outputs``:
        the explorer's outputs with ``keys``."""
        p = Path(path)
        if ".joins" not in p.name:
            p = p.with_name(f"{p.stem}.joins{p.suffix}")
        df, sigs = _table(p, ("seq_before", "seq", "at_s", *JOIN_SHOWN), "quality joins table", JOINS_ACCEPTED)
        self.path = p
        self.keys = [k for k in keys if k in df.columns]
        self.signature = shown_all(sigs[:1])[0] if sigs else ""
        self.by_output = {(k if isinstance(k, tuple) else (k,)): g for k, g in df.groupby(self.keys, sort=False)} \
            if len(df) else {}
        known = {tuple(r) for r in _text_keys(outputs)[self.keys].itertuples(index=False)}
        self.left_out = sum(len(g) for k, g in self.by_output.items() if k not in known)

    @property
    def note(self) -> str:
        if not self.left_out:
            return ""
        return f"Joins: {self.left_out} row(s) of {self.path} name outputs that are not in the explorer's run."

    def payload(self, talk: str, data: dict[str, Any]) -> dict[str, Any]:
        """The ``joins`` entry of one talk's data (``data``: its payload from :mod:`.talks`)."""
        outputs = []
        for out in data["outputs"]:
            ident = {"talk_id": talk, **{k: str(v) for k, v in out.items()}}
            g = self.by_output.get(tuple(ident.get(k) for k in self.keys))
            if g is None or not len(g):
                outputs.append(None)
                continue
            outputs.append({"seq_before": g["seq_before"].astype(int).tolist(), "seq": g["seq"].astype(int).tolist(),
                            "at": to_ns(g["at_s"].to_numpy(float)).tolist(),
                            **{c: [_none(v) for v in g[c].astype(float).tolist()] for c in JOIN_SHOWN}})
        return {"source": str(self.path), "signature": self.signature, "variant": "primary", "outputs": outputs}
