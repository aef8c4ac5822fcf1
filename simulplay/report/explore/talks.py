"""One talk's data for the explorer's timeline: requests, and per variant each output's
parts, request clock, summary and signature; JSON-ready, written as one lazy-loaded file.

Times are whole nanoseconds from source start (int64, exact below 2⁵³ ns, 104 days),
the replay's own numbers: the page divides by 10⁹ and gets the float the parts table
holds, and computes a part's end as ``play + dur`` and its idle as
``max(0, ready − previous end)``, the replay's own integer sums. Arrays that repeat the
request's (a request-release part's ``seq`` and ``dur``, its readiness) are left out and
the page takes the request's.

Shape (``o`` indexes ``outputs``)::

    {"talk": id, "outputs": [{"system", "condition", "backend"?, "realization"?, "source_s"}],
     "requests": [{"seq", "text", "trigger", "dispatch", "dur", "audio", "n", "rate"}] (per o),
     "updates": {system: {"t": [s], "text": [...]}},
     "variants": {key: {"signatures": [...], "outputs": [{"parts": {"seq"?, "chunk"?, "ready",
                  "play", "dur"?, "s0"?, "s1"?}, "service", "ready"?, "summary": {...}, "sig": i} | null]}},
     "audio_keys": [store keys the requests' "audio" index]}

A request's ``audio`` is the index of its store key in ``audio_keys`` (-1: no audio), ``n``
its sample count and ``rate`` the output's one sample rate in Hz (0: none, or mixed);
``s0``/``s1`` are the samples of its request's audio a part plays when it is not the whole
request (chunk release, edge trimming).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from simulplay.grouping import canonical_condition
from simulplay.keys import OUTPUT_ID, present
from simulplay.report.explore.variants import Variant, shown_all
from simulplay.sim.replay import SUMMARY_COLUMNS
from simulplay.sim.timebase import to_ns

OutputKey = tuple[str, ...]


def output_index(df: pd.DataFrame, keys: Sequence[str]) -> dict[OutputKey, np.ndarray]:
    """Row positions of each output of ``df`` (keys as text), in the table's order."""
    text = df[list(keys)].astype(str)
    return {k if isinstance(k, tuple) else (k,): v for k, v in text.groupby(list(keys), sort=False).indices.items()}


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
        self.seq = p["seq"].to_numpy(np.int64)
        self.chunk = p["chunk"].to_numpy(np.int64) if "chunk" in p else None
        self.s0 = v.samples["sample_start"].to_numpy(np.int64) if v.samples is not None else None
        self.s1 = v.samples["sample_stop"].to_numpy(np.int64) if v.samples is not None else None
        self.summary = output_index(v.summary, keys)
        cols = [c for c in SUMMARY_COLUMNS if c in v.summary]
        self.rows = [{c: _number(r[c]) for c in cols} for r in v.summary[cols].to_dict("records")]
        self.shown = shown_all(v.signatures)
        self.clock = output_index(v.clock, keys)
        self.service = v.clock["service_ns"].to_numpy(np.int64)
        self.clock_ready = v.clock["ready_ns"].to_numpy(np.int64)


class TalkData:
    """Builds every talk's payload from the variants (indexes built once for all talks)."""

    def __init__(self, manifest: pd.DataFrame, variants: Sequence[Variant], traces: pd.DataFrame | None):
        self.keys = present(OUTPUT_ID, variants[0].summary)
        m = manifest.reset_index(drop=True)
        self.requests = output_index(m, self.keys)
        self.text = m["text"].astype(str).to_numpy() if "text" in m else np.full(len(m), "")
        self.trigger = m["trigger"].astype(str).to_numpy() if "trigger" in m else np.full(len(m), "")
        self.dispatch = ns_array(m["dispatch_s"])
        self.seq = m["seq"].to_numpy(np.int64)
        self.with_audio = {"audio_key", "n_samples", "sample_rate"} <= set(m.columns)
        if self.with_audio:
            self.n = m["n_samples"].fillna(0).to_numpy(np.int64)
            self.rate = m["sample_rate"].fillna(0).to_numpy(np.int64)
            self.audio_key = np.where(self.n > 0, m["audio_key"].fillna("").astype(str).to_numpy(), "")
        primary = variants[0]
        self.outputs = primary.summary.astype({k: str for k in self.keys})
        self.by_talk = self.outputs.groupby("talk_id", sort=False).indices
        self.variants = variants
        self.columns = [_Columns(v, self.keys) for v in variants]
        self.traces = traces

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
        variants = {v.key: self._variant(c, okeys, requests) for v, c in zip(self.variants, self.columns)}
        return {"talk": talk, "outputs": outputs, "requests": requests, "updates": self._updates(talk),
                "variants": variants, "audio_keys": list(audio_keys)}

    def _requests(self, key: OutputKey, audio_keys: dict[str, int]) -> dict[str, Any]:
        pos = self.requests.get(key, np.zeros(0, int))
        primary = self.columns[0]
        ppos = primary.parts.get(key, np.zeros(0, int))
        out = {"seq": self.seq[pos].tolist(), "text": self.text[pos].tolist(), "trigger": self.trigger[pos].tolist(),
               "dispatch": ns_list(self.dispatch[0][pos], self.dispatch[1][pos]), "dur": primary.dur[ppos].tolist()}
        if self.with_audio:
            n = self.n[pos]
            rates = set(self.rate[pos][n > 0].tolist())
            out |= {"audio": [audio_keys.setdefault(k, len(audio_keys)) if k else -1
                              for k in self.audio_key[pos].tolist()],
                    "n": n.tolist(), "rate": rates.pop() if len(rates) == 1 else 0}
        return out

    def _variant(self, c: _Columns, okeys: list[OutputKey], requests: list[dict[str, Any]]) -> dict[str, Any]:
        sigs: dict[str, int] = {}
        out = []
        for key, req in zip(okeys, requests):
            s = c.summary.get(key)
            if s is None:
                out.append(None)
                continue
            pos = c.parts.get(key, np.zeros(0, int))
            parts: dict[str, Any] = {"ready": c.ready[pos].tolist(), "play": ns_list(c.play[pos], c.played[pos])}
            seq = c.seq[pos].tolist()
            if seq != req["seq"]:
                parts["seq"] = seq
            if c.chunk is not None:
                parts["chunk"] = c.chunk[pos].tolist()
            dur = c.dur[pos].tolist()
            if dur != req["dur"] or "seq" in parts:
                parts["dur"] = dur
            if c.s0 is not None:
                parts["s0"], parts["s1"] = c.s0[pos].tolist(), c.s1[pos].tolist()
            cpos = c.clock.get(key, np.zeros(0, int))
            entry = {"parts": parts, "service": c.service[cpos].tolist(), "summary": c.rows[int(s[0])],
                     "sig": sigs.setdefault(c.shown[int(s[0])], len(sigs))}
            ready = c.clock_ready[cpos].tolist()
            if ready != parts["ready"]:
                entry["ready"] = ready
            out.append(entry)
        return {"signatures": list(sigs), "outputs": out}

    def _updates(self, talk: str) -> dict[str, Any]:
        t = self.traces
        if t is None:
            return {}
        mine = t[t["talk_id"].astype(str) == talk]
        return {str(system): {"t": g["time_s"].astype(float).tolist(), "text": g["text"].astype(str).tolist()}
                for system, g in mine.groupby("system", sort=False)}
