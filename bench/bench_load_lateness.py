"""Client lateness of `simulplay load` with 64 concurrent streams against a fast fake server.

The server (the tests' scripted server, in its own process so that it takes no time from the
client's loop) answers at once with 0.1 s of audio in one chunk. Two runs of the load client
(simulplay.loadtest.run.measure, the client `simulplay live` uses):

* open loop: 64 Poisson arrival streams of ``--rate`` requests per second each for
  ``--seconds``; lateness = sent − arrival. The baseline, measured in the same run, is
  asyncio's sleep alone on the same arrival times, with no HTTP at all;
* closed loop: 64 clients, ``--requests`` requests; lateness = sent − the end of the client's
  previous request (the loop's own turnaround; no sleep, so no baseline).

Printed per run: p50/p99/max in ms and the open loop's ratio to the baseline; then the p99's
min and median over ``--repeats`` runs (the machine is shared; the load average is printed).
The goal (issue 36): p99 ≤ 5 ms.
``--server serve``: `simulplay serve`'s own server instead, over a tone backend that answers
the same way (bench/serve_child.py); the server's CPU time per request is printed. Run:
    .venv/bin/python bench/bench_load_lateness.py [--streams 64] [--rate 2] [--seconds 10] [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_live_lateness import cpu_s, start_server, stop_server  # noqa: E402  (the same fast servers in their own process)
from simulplay.live.client import Endpoint  # noqa: E402
from simulplay.loadtest.run import LoadPlan, arrivals, measure  # noqa: E402
from tests.live.fake_server import MODEL  # noqa: E402


async def baseline(times: np.ndarray) -> list[float]:
    t0 = time.perf_counter() + 0.05
    late: list[float] = []

    async def one(t: float) -> None:
        wait = t0 + t - time.perf_counter()
        if wait > 0:
            await asyncio.sleep(wait)
        late.append(time.perf_counter() - t0 - t)

    await asyncio.gather(*(one(float(t)) for t in times))
    return late


def percentiles(v_s) -> str:
    v = np.asarray(v_s, float) * 1e3
    return (f"p50 {np.percentile(v, 50):6.2f} ms  p99 {np.percentile(v, 99):6.2f} ms  max {v.max():6.2f} ms  "
            f"(n={len(v)})")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--streams", type=int, default=64)
    ap.add_argument("--rate", type=float, default=2.0, help="requests per second per stream (open loop)")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--requests", type=int, default=640, help="closed-loop requests")
    ap.add_argument("--repeats", type=int, default=3, help="runs of baseline, open and closed loop")
    ap.add_argument("--server", choices=("scripted", "serve"), default="scripted",
                    help="the tests' scripted server, or `simulplay serve`'s server over a fast tone backend")
    ap.add_argument("--workers", type=int, default=1, help="K of `simulplay serve --workers` (--server serve)")
    args = ap.parse_args()
    c = args.streams
    open_plan = LoadPlan((c,), duration_s=args.seconds, rate=args.rate, seed=0, timeout=10.0)
    times, _ = arrivals(c, open_plan, np.random.default_rng(0))
    ctx = mp.get_context("spawn")
    proc, ports, stop = start_server(ctx, args.server, args.workers)
    p99s: dict[str, list[float]] = {"baseline": [], "open": [], "closed": [], "closed after first": [],
                                    "open audio/s": [], "closed audio/s": []}
    try:
        port = ports.get(timeout=60)
        endpoint = Endpoint(url=f"http://127.0.0.1:{port}/v1/audio/speech", model=MODEL, timeout=10.0)
        texts = [f"text {i}" for i in range(100)]
        for rep in range(args.repeats):
            base = asyncio.run(baseline(times))
            cpu0 = cpu_s(proc.pid)
            t_open, r_open = asyncio.run(measure(endpoint, texts, open_plan))
            cpu1 = cpu_s(proc.pid)
            closed = LoadPlan((c,), requests=args.requests, timeout=10.0)
            t_closed, r_closed = asyncio.run(measure(endpoint, texts, closed))
            cpu = {"open": cpu1 - cpu0, "closed": cpu_s(proc.pid) - cpu1}
            print(f"run {rep + 1}: load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
            for name, t, r in (("open", t_open, r_open), ("closed", t_closed, r_closed)):
                timed = r[~r["warm"]]
                print(f"  {name} loop, {c} streams: {len(timed)} requests, {int(t['failed'].sum())} failed, "
                      f"TTFA p50 {t['ttfa_p50_s'].iloc[0] * 1e3:.1f} ms, "
                      f"service p50 {t['service_p50_s'].iloc[0] * 1e3:.1f} ms, "
                      f"audio per second {t['audio_per_s'].iloc[0]:.1f} s/s, "
                      f"server CPU {cpu[name] * 1e3 / len(r):.3f} ms per request")
                p99s[f"{name} audio/s"].append(float(t["audio_per_s"].iloc[0]))
                print(f"    load client (sent − due):       {percentiles(timed['late_s'])}")
                errors = r[r["error"].astype(bool)]["error"] if "error" in r else []
                for message in sorted(set(errors))[:3]:
                    print(f"    failed: {message}")
                p99s[name].append(float(np.percentile(timed["late_s"], 99) * 1e3))
                if name == "closed":  # the first wave: c sends queued behind each other's synchronous start
                    later = timed[timed.duplicated("client")]
                    print(f"    after each client's first:      {percentiles(later['late_s'])}")
                    p99s["closed after first"].append(float(np.percentile(later["late_s"], 99) * 1e3))
            late = r_open[~r_open["warm"]]["late_s"].to_numpy()
            print(f"  baseline (asyncio.sleep alone): {percentiles(base)}")
            print(f"  open loop ratio load/baseline: p50 {np.percentile(late, 50) / np.percentile(base, 50):.2f}, "
                  f"p99 {np.percentile(late, 99) / np.percentile(base, 99):.2f}")
            p99s["baseline"].append(float(np.percentile(base, 99) * 1e3))
    finally:
        stop_server(proc, stop)
    print(f"p99 over {args.repeats} runs (ms): " + "; ".join(
        f"{k}: min {min(v):.2f}, median {statistics.median(v):.2f}" for k, v in p99s.items()))
    ratios = [a / b for a, b in zip(p99s["open"], p99s["baseline"])]
    print(f"ratio open/baseline p99: min {min(ratios):.2f}, median {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main()
