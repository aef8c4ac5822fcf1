"""One talk's data for the explorer's timeline: requests, and per variant each output's
service times, part durations, summary and signature; JSON-ready, written as one
lazy-loaded file.

Times are whole nanoseconds from source start (int64, exact below 2⁵³ ns, 104 days):
the page divides by 10⁹ and gets the float the replay's tables hold. To keep a panel of
tens of thousands of requests small, the page recomputes each output's clock from the
replay's own recurrences in exact integers — a request starts at ``max(dispatch,
previous request's readiness)`` (a missing dispatch counts as 0, as in replay) and is
ready ``service`` later; a chunk is ready at its request's start plus its offset; a part
plays at ``max(readiness, previous part's end)`` and ends ``dur`` later (parts without
audio play only under ``hold``) — and this module checks, output by output, that they
give the replay's numbers: where they would not (a manifest that recorded readiness
instead of clocking it), the numbers are written out (``ready``, ``play``).

Shape (``o`` indexes ``outputs``)::

    {"talk": id, "outputs": [{"system", "condition", "backend"?, "realization"?, "source_s"}],
     "requests": [{"seq", "text", "trigger", "dispatch", "dur", "audio", "n", "rate",
                   "queued"?, "in_flight"?}] (per o),
     "triggers": [names the requests' "trigger" index],
     "updates": {system: {"t": [s], "text": [...]}},
     "variants": {key: {"silent", "signatures": [...], "outputs": [{"service", "parts": {"count"?,
                  "off"?, "dur"?, "s0"?, "s1"?, "play"?}, "ready"?, "summary": {...}, "sig": i} | null]}},
     "audio_keys": [store keys the requests' "audio" index],
     "hyp"?: {system: {"t0", "t1", "text"}}, "commits"?: [{"t", "text", "req"} | null] (per o)}

Per variant and output: ``service`` per request (ns); under chunk release ``count`` (chunks
per request) and ``off`` (each chunk's readiness after its request's start); ``dur`` when
a part's duration is not its request's (chunks, edge trimming); ``s0``/``s1`` the samples
of its request's audio a part plays when it is not the whole request. A request's
``audio`` is the index of its store key in ``audio_keys`` (-1: no audio), ``n`` its
sample count and ``rate`` the output's one sample rate in Hz (0: none, or mixed). A
closed-loop output (its condition a policy that reads the listener's queue) whose manifest
recorded what the policy saw adds, per request, ``queued`` (the queued audio q(t) at its
dispatch, ns) and ``in_flight`` (requests in flight then); an open-loop output has neither.
A talk with a revising stream adds its hypothesis over time and each of its outputs' commits
and the requests they became (seconds; :mod:`.revisions`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from simulplay.core.keys import OUTPUT_ID, present
from simulplay.core.timebase import to_ns
from simulplay.formats.summary import SUMMARY_COLUMNS
from simulplay.grouping import canonical_condition
from simulplay.grouping.policy import closed_loop_condition
from simulplay.report.explore.revisions import revising_streams, revision_payload
from simulplay.report.explore.variants import Variant, shown_all

OutputKey = tuple[str, ...]


def output_index(df: pd.DataFrame, keys: Sequence[str]) -> dict[OutputKey, np.ndarray]:
    """Row positions of each output of ``df`` (keys as text), in the table's order."""
    found: dict[OutputKey, list[int]] = {}
    for i, key in enumerate(zip(*(df[k].astype(str).tolist() for k in keys))):
        found.setdefault(key, []).append(i)
    return {k: np.array(v, dtype=np.int64) for k, v in found.items()}


def ns_array(seconds: Any) -> tuple[np.ndarray, np.ndarray]:
    """Float seconds as whole nanoseconds (int64), and which were given (not NaN)."""
    s = np.asarray(seconds, float)
    ok = np.isfinite(s)
    return to_ns(np.where(ok, s, 0.0)), ok


def ns_list(ns: np.ndarray, ok: np.ndarray | None = None) -> list[int | None]:
    """Nanoseconds as a JSON list (``None`` where not given: a silent part's play)."""
    if ok is None or ok.all():
        return ns.tolist()
    return [int(v) if k else None for v, k in zip(ns.tolist(), ok.tolist())]


def _number(v: Any) -> float | int | None:
    if v is None or v is pd.NA:
        return None
    f = float(v)
    return None if not np.isfinite(f) else (int(f) if isinstance(v, (int, np.integer)) else f)


class _Columns:
    """One variant's tables as arrays, indexed by output (built once for every talk)."""

    def __init__(self, v: Variant, keys: list[str]):
        p = v.parts
        self.parts = output_index(p, keys)
        self.ready = ns_array(p["ready_s"])[0]
        self.play, self.played = ns_array(p["play_s"])
        self.dur = ns_array(p["audio_s"])[0]
        self.chunk = p["chunk"].to_numpy(np.int64) if "chunk" in p else None
        self.s0 = v.samples["sample_start"].to_numpy(np.int64) if v.samples is not None else None
        self.s1 = v.samples["sample_stop"].to_numpy(np.int64) if v.samples is not None else None
        self.summary = output_index(v.summary, keys)
        cols = [c for c in SUMMARY_COLUMNS if c in v.summary]
        self.rows = [{c: _number(r[c]) for c in cols} for r in v.summary[cols].to_dict("records")]
        self.shown = shown_all(v.signatures)
        self.clock = output_index(v.clock, keys)
        self.service = v.clock["service_ns"].to_numpy(np.int64)
        self.start = v.clock["start_ns"].to_numpy(np.int64)
        self.clock_ready = v.clock["ready_ns"].to_numpy(np.int64)
        self.clocked = v.clock["clock_ready_ns"].to_numpy(np.int64) == self.clock_ready
        self.clock_seq = v.clock["seq"].to_numpy(np.int64)
        self.part_seq = p["seq"].to_numpy(np.int64)
        self.silent = v.silent

    def output(self, key: OutputKey, request_dur: list[int]) -> dict[str, Any] | None:
        """The variant's entry for one output (module docstring); ``None`` when absent."""
        s = self.summary.get(key)
        if s is None:
            return None
        pos = self.parts.get(key, np.zeros(0, int))
        cpos = self.clock.get(key, np.zeros(0, int))
        ready = self.clock_ready[cpos]
        entry: dict[str, Any] = {"service": self.service[cpos].tolist()}
        if not self.clocked[cpos].all():
            entry["ready"] = ready.tolist()
        parts: dict[str, Any] = {}
        dur = self.dur[pos]
        if self.chunk is not None:  # parts in request order, each request's chunks in order
            counts = pd.Series(self.part_seq[pos]).value_counts()
            count = counts.reindex(self.clock_seq[cpos], fill_value=0).to_numpy()
            parts["count"] = count.tolist()
            parts["off"] = (self.ready[pos] - np.repeat(self.start[cpos], count)).tolist()
        elif not np.array_equal(self.ready[pos], ready):
            parts["ready"] = self.ready[pos].tolist()  # not the request's: written out
        if self.chunk is not None or dur.tolist() != request_dur:
            parts["dur"] = dur.tolist()
        if self.s0 is not None:
            parts["s0"], parts["s1"] = self.s0[pos].tolist(), self.s1[pos].tolist()
        if not self._recurrence_holds(pos):
            parts["play"] = ns_list(self.play[pos], self.played[pos])
        entry |= {"parts": parts, "summary": self.rows[int(s[0])], "sig": self.shown[int(s[0])]}
        return entry

    def _recurrence_holds(self, pos: np.ndarray) -> bool:
        """Whether ``play = max(ready, previous end)``, ``end = play + dur`` over the parts
        that play (with audio; every part under ``hold``) gives the replay's play times."""
        ready, dur, play, played = self.ready[pos], self.dur[pos], self.play[pos], self.played[pos]
        plays = dur > 0 if self.silent == "skip" else np.ones(len(pos), bool)
        if not np.array_equal(plays, played):
            return False
        end = 0
        for r, d, p in zip(ready[plays].tolist(), dur[plays].tolist(), play[plays].tolist()):
            if p != max(r, end):
                return False
            end = p + d
        return True


class TalkData:
    """Builds every talk's payload from the variants (indexes built once for all talks)."""

    def __init__(self, manifest: pd.DataFrame, variants: Sequence[Variant], traces: pd.DataFrame | None):
        self.keys = present(OUTPUT_ID, variants[0].summary)
        m = manifest.reset_index(drop=True)
        self.requests = output_index(m, self.keys)
        self.text = m["text"].astype(str).to_numpy() if "text" in m else np.full(len(m), "")
        trigger = m["trigger"].astype(str) if "trigger" in m else pd.Series([""] * len(m))
        self.trigger_codes, self.trigger_names = pd.factorize(trigger)
        self.dispatch = ns_array(m["dispatch_s"])
        self.seq = m["seq"].to_numpy(np.int64)
        self.loop = None
        if {"queued_s", "in_flight"} <= set(m.columns):
            closed = m["condition"].astype(str).map(closed_loop_condition).to_numpy(bool)
            self.loop = (closed, ns_array(m["queued_s"]), m["in_flight"].astype("Int64"))
        self.with_audio = {"audio_key", "n_samples", "sample_rate"} <= set(m.columns)
        if self.with_audio:
            self.n = m["n_samples"].fillna(0).to_numpy(np.int64)
            self.rate = m["sample_rate"].fillna(0).to_numpy(np.int64)
            self.audio_key = np.where(self.n > 0, m["audio_key"].fillna("").astype(str).to_numpy(), "")
        self.outputs = variants[0].summary.astype({k: str for k in self.keys})
        self.by_talk = self.outputs.groupby("talk_id", sort=False).indices
        self.variants = variants
        self.columns = [_Columns(v, self.keys) for v in variants]
        self.traces = traces
        self.revising = revising_streams(traces)

    def talks(self) -> list[str]:
        """The talks in the order of the primary summary."""
        return list(self.by_talk)

    def payload(self, talk: str) -> dict[str, Any]:
        """Everything the timeline of ``talk`` shows (module docstring)."""
        rows = self.outputs.iloc[self.by_talk[talk]]
        okeys = [tuple(r) for r in rows[self.keys].itertuples(index=False)]
        outputs = [{**{k: r[k] for k in self.keys if k != "talk_id"}, "condition": canonical_condition(r["condition"]),
                    "source_s": float(r["source_s"])} for r in rows.to_dict("records")]
        audio_keys: dict[str, int] = {}
        requests = [self._requests(k, audio_keys) for k in okeys]
        variants = {}
        for v, c in zip(self.variants, self.columns):
            entries = [c.output(k, r["dur"]) for k, r in zip(okeys, requests)]
            sigs: dict[str, int] = {}
            for e in entries:
                if e is not None:
                    e["sig"] = sigs.setdefault(e["sig"], len(sigs))
            variants[v.key] = {"silent": v.silent, "signatures": list(sigs), "outputs": entries}
        return {"talk": talk, "outputs": outputs, "requests": requests, "triggers": list(self.trigger_names),
                "updates": self._updates(talk), "variants": variants, "audio_keys": list(audio_keys),
                **revision_payload(self.revising, talk, outputs, requests)}

    def _requests(self, key: OutputKey, audio_keys: dict[str, int]) -> dict[str, Any]:
        pos = self.requests.get(key, np.zeros(0, int))
        primary = self.columns[0]
        ppos = primary.parts.get(key, np.zeros(0, int))
        out = {"seq": self.seq[pos].tolist(), "text": self.text[pos].tolist(),
               "trigger": self.trigger_codes[pos].tolist(),
               "dispatch": ns_list(self.dispatch[0][pos], self.dispatch[1][pos]), "dur": primary.dur[ppos].tolist()}
        if self.loop is not None and self.loop[0][pos].any():
            _, (queued, given), in_flight = self.loop
            out |= {"queued": ns_list(queued[pos], given[pos]),
                    "in_flight": [None if pd.isna(v) else int(v) for v in in_flight.iloc[pos]]}
        if self.with_audio:
            n = self.n[pos]
            rates = set(self.rate[pos][n > 0].tolist())
            out |= {"audio": [audio_keys.setdefault(k, len(audio_keys)) if k else -1
                              for k in self.audio_key[pos].tolist()],
                    "n": n.tolist(), "rate": rates.pop() if len(rates) == 1 else 0}
        return out

    def _updates(self, talk: str) -> dict[str, Any]:
        t = self.traces
        if t is None:
            return {}
        mine = t[t["talk_id"].astype(str) == talk]
        return {str(system): {"t": g["time_s"].astype(float).tolist(), "text": g["text"].astype(str).tolist()}
                for system, g in mine.groupby("system", sort=False)}
