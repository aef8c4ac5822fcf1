"""Grouping that listens: the policy engine, closed-loop synthesis and closed-loop sweeps.

1. **engine** — the discrete-event engine alone on a synthetic 27-talk panel (54 streams of
   480 updates, bench_sweep.py's shape) with stored durations (a dict by text, as a store
   serves a resumed or re-decided run): ``backlog`` and ``pacer`` under the measured clock
   and under zero service (a replay variant decided again), requests made and seconds.
2. **synth** — closed-loop ``synth`` (``backlog``, real Piper ``durations=fixed``, one
   thread) of the sample traces' first ``--streams`` streams, then open-loop ``synth
   --requests`` of exactly the requests it made into a fresh store: wall seconds per request
   both ways, and what the driver spends outside synthesis (wall − Σ service) per request.
3. **sweep** — with a demo run folder (``simulplay demo --out-dir DIR``): the whole
   ``simulplay sweep DIR --rule 'backlog:below=0.1..4:0.1'`` command (40 closed-loop points).

Run:
    .venv/bin/python bench/bench_closed_loop.py [--parts engine,synth,sweep] [--demo DIR] [--streams 2]
"""

from __future__ import annotations

import argparse
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
    ap.add_argument("--parts", default="engine,synth,sweep")
    ap.add_argument("--demo", type=Path)
    ap.add_argument("--streams", type=int, default=2)
    args = ap.parse_args()
    parts = args.parts.split(",")
    if "engine" in parts:
        engine()
    if "synth" in parts:
        print(f"synth: backlog on {args.streams} sample streams, {PIPER}")
        synth(args.streams)
    if "sweep" in parts and args.demo is not None:
        sweep(args.demo)


if __name__ == "__main__":
    main()
