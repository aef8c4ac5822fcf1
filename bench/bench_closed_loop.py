"""Grouping that listens: the policy engine, closed-loop synthesis and closed-loop sweeps.

1. **engine** — the discrete-event engine alone on a synthetic 27-talk panel (54 streams of
   480 updates, bench_sweep.py's shape) with stored durations (a dict by text, as a store
   serves a resumed or re-decided run): ``backlog`` and ``pacer`` under the measured clock
   and under zero service (a replay variant decided again), requests made and seconds.
2. **synth** — closed-loop ``synth`` (``backlog``, real Piper ``durations=fixed``, one
   thread) of the sample traces' first ``--streams`` streams, then open-loop ``synth
   --requests`` of exactly the requests it made into a fresh store: wall seconds per request
   both ways, and what the driver spends outside synthesis (wall − Σ service) per request.
3. **redecide** — a replay variant decided again: the synthetic panel's manifest under
   ``immediate``, ``timer:w=2``, ``timer:w=4``, ``punct`` and ``backlog`` (71,093 requests;
   ``backlog``'s run in the engine on the stored formula), replayed with ``service=zero``:
   ``backlog`` decided again (a) with every duration stored (the formula as a store that
   holds every text, :func:`simulplay.durationmodel.redecide.redecide`'s ``lookup``), and (b)
   as ``replay`` does it, from the durations the manifest holds by text and the duration
   model (fitted on the open-loop requests) for the texts it lacks; seconds against the
   plain replay of the recorded groups.
4. **sweep** — with a demo run folder (``simulplay demo --out-dir DIR``): the whole
   ``simulplay sweep DIR --rule 'backlog:below=0.1..4:0.1'`` command (40 closed-loop points).

Run:
    .venv/bin/python bench/bench_closed_loop.py [--parts engine,synth,redecide,sweep] [--demo DIR] [--streams 2]
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as the command line runs (simulplay/cli/__init__.py)
import subprocess
import sys
import tempfile
import time
from importlib.resources import files
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_sweep import RATE, synthetic_streams  # noqa: E402
from simulplay.grouping import Served, parse_rule, run_policy  # noqa: E402
from simulplay.traces import read_traces, streams_from_frame  # noqa: E402

PIPER = "piper:intra_op_threads=1,durations=fixed"


def stored(text: str, zero: bool = False) -> Served:
    """A stored request's service and samples: a fixed linear formula of its length."""
    audio = 0.25 + 0.062 * len(text)
    return Served(0.0 if zero else 0.1 + 0.18 * audio, n_samples=int(audio * RATE), sample_rate=RATE)


def engine() -> None:
    streams = synthetic_streams()
    cache: dict[tuple[str, bool], Served] = {}

    def provider(zero: bool):
        def served(req):
            key = (req.text, zero)
            if key not in cache:
                cache[key] = stored(req.text, zero)
            return cache[key]
        return served

    print(f"engine: {len(streams)} streams, {sum(len(s) for s in streams):,} updates")
    for rule in ("immediate", "backlog", "pacer"):
        for zero in (False, True):
            t = time.perf_counter()
            n = sum(len(run_policy(s, parse_rule(rule), provider(zero)).requests) for s in streams)
            dt = time.perf_counter() - t
            print(f"  {rule:10s} {'zero service' if zero else 'measured':13s} {n:7,d} requests {dt:7.2f} s "
                  f"({dt / n * 1e6:6.1f} µs a request)")


def synth(n_streams: int) -> None:
    from simulplay.backends import parse_backend
    from simulplay.grouping.requests_file import read_requests
    from simulplay.store.store import AudioStore
    from simulplay.synthesis.run import synthesize_requests, synthesize_to_manifest

    streams = streams_from_frame(read_traces([files("simulplay.sample_traces").joinpath("sample_traces.jsonl")]))
    streams = streams[:n_streams]
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        t = time.perf_counter()
        closed = synthesize_to_manifest(streams, [parse_rule("backlog")], parse_backend(PIPER), AudioStore(d / "a"),
                                        d / "closed.parquet", contention_sample=0)
        t_closed = time.perf_counter() - t
        m = closed.manifest
        req = m[["talk_id", "system", "condition", "seq", "dispatch_s", "text", "glue", "source_s"]]
        req.to_parquet(d / "req.parquet")
        t = time.perf_counter()
        opened = synthesize_requests(read_requests(d / "req.parquet"), parse_backend(PIPER), AudioStore(d / "b"),
                                     d / "open.parquet", contention_sample=0)
        t_open = time.perf_counter() - t
        n = len(m)
        for label, wall, man in (("closed loop", t_closed, m), ("open loop  ", t_open, opened.manifest)):
            service = float(man["service_s"].sum())
            print(f"  {label}: {n} requests, {wall:7.2f} s wall ({wall / n * 1e3:7.1f} ms a request), Σ service "
                  f"{service:6.2f} s, outside synthesis {(wall - service) / n * 1e3:6.1f} ms a request")
        print(f"  closed / open wall per request: {t_closed / t_open:5.3f}")
        assert list(opened.manifest["text"]) == list(m["text"])


def panel_manifest(streams) -> pd.DataFrame:
    """The synthetic panel's manifest: open-loop rules grouped, ``backlog`` run in the engine,
    every request's service and samples from :func:`stored` (the measured clock)."""
    from simulplay.grouping import requests_frame
    from simulplay.manifest.validate import validate_manifest

    opens = ["immediate", "timer:w=2", "timer:w=4", "punct:cap=2,min_words=3"]
    req = requests_frame(streams, [parse_rule(r) for r in opens])
    served = [stored(t) for t in req["text"]]
    frames = [req.assign(service_s=[x.service_s for x in served], n_samples=[x.n_samples for x in served])]
    rule = parse_rule("backlog")
    for s in streams:
        res = run_policy(s, rule, stored_provider)
        frames.append(pd.DataFrame({
            "talk_id": s.talk_id, "system": s.system, "condition": rule.canonical(),
            "seq": [r.seq for r in res.requests], "dispatch_s": [r.dispatch_s for r in res.requests],
            "trigger": [r.trigger for r in res.requests], "n_updates": [r.last - r.first + 1 for r in res.requests],
            "text": [r.text for r in res.requests], "glue": [r.glue for r in res.requests],
            "group": [r.group for r in res.requests], "source_s": s.source_s,
            "service_s": [stored(r.text).service_s for r in res.requests],
            "n_samples": [stored(r.text).n_samples for r in res.requests],
            "queued_s": [r.queued_ns / 1e9 for r in res.requests], "in_flight": [r.in_flight for r in res.requests]}))
    m = pd.concat(frames, ignore_index=True).assign(sample_rate=RATE, backend="synthetic", realization=0)
    m["audio_s"] = m["n_samples"] / RATE
    return validate_manifest(m, "synthetic panel")


def stored_provider(req) -> Served:
    return stored(req.text)


def redecide_part() -> None:
    from simulplay.durationmodel.redecide import redecide
    from simulplay.durationmodel.replay_again import replay_deciding
    from simulplay.sim.replay import replay
    from simulplay.sim.variants import RequestRelease, Zero

    streams = synthetic_streams()
    m = panel_manifest(streams)
    closed = int((m["condition"] == parse_rule("backlog").canonical()).sum())
    print(f"redecide: {len(streams)} streams, {len(m):,} requests ({closed:,} of them backlog's), load "
          f"{os.getloadavg()[0]:.1f}")
    t = time.perf_counter()
    replay(m, service=Zero())
    plain = time.perf_counter() - t
    def lookup(panel, text):
        x = stored(text)
        return x.service_s, x.n_samples, RATE, x.n_samples / RATE

    print(f"  plain replay of the recorded groups (service zero): {plain:6.2f} s")
    for label, given in (("(a) every duration stored", lookup), ("(b) the manifest's, the model for the rest", None)):
        t = time.perf_counter()
        d = redecide(m, streams, Zero(), lookup=given)
        rep = replay(d.manifest, service=d.service)
        whole = time.perf_counter() - t
        n, k = sum(v[0] for v in d.outputs.values()), sum(v[1] for v in d.outputs.values())
        print(f"  {label}: decided again and replayed {whole:6.2f} s ({n:,} requests decided, {k:,} modelled; "
              f"{len(rep.summary)} outputs)")
    t = time.perf_counter()
    replay_deciding(m, service=Zero(), release=RequestRelease(), silent="skip", streams=streams)
    print(f"  (b) again, the duration model fitted once more: {time.perf_counter() - t:6.2f} s")


def sweep(demo: Path) -> None:
    with tempfile.TemporaryDirectory() as d:
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "simulplay", "sweep", str(demo), "--rule", "backlog:below=0.1..4:0.1",
                        "--out", str(Path(d) / "sweep"), "--quiet"], check=True, capture_output=True)
        dt = time.perf_counter() - t
        table = pd.read_csv(Path(d) / "sweep" / "sweep.csv")
    print(f"sweep: {len(table)} closed-loop points of the demo, whole command {dt:6.2f} s; modelled η from "
          f"{np.nanmin(table['modelled_eta_s']):+.3f} to {np.nanmax(table['modelled_eta_s']):+.3f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parts", default="engine,synth,redecide,sweep")
    ap.add_argument("--demo", type=Path)
    ap.add_argument("--streams", type=int, default=2)
    args = ap.parse_args()
    parts = args.parts.split(",")
    if "engine" in parts:
        engine()
    if "synth" in parts:
        print(f"synth: backlog on {args.streams} sample streams, {PIPER}")
        synth(args.streams)
    if "redecide" in parts:
        redecide_part()
    if "sweep" in parts and args.demo is not None:
        sweep(args.demo)


if __name__ == "__main__":
    main()
