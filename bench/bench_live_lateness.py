"""Client lateness of `simulplay live` with many outputs at once against a fast fake server.

27 outputs (the demo's 27-talk panel shape) play at once; each releases a request every
0.05 to 0.4 s (seeded) for ``--seconds``; the server (the tests' scripted server, in its own
process so it takes no time from the client's loop) answers at once with 0.1 s of audio in
one chunk. Client lateness = sent − due per request (simulplay.live.client). The baseline,
measured in the same run, is asyncio's sleep alone: the same 27 schedules of wake-ups with
no HTTP at all (and, as a second floor, the client's own wake-up, ``sleep_until``, alone).
Printed per run: p50/p99/max in ms and the ratio live/baseline; then the p99's min and median
over ``--repeats`` runs (the machine is shared: one run says little). The server process is
not pinned: it and the client share the machine's cores with whatever else runs (the load
average is printed).
``--server serve``: `simulplay serve`'s own server instead, over a tone backend that answers
the same way (bench/serve_child.py); the server's CPU time per request is printed. Run:
    .venv/bin/python bench/bench_live_lateness.py [--outputs 27] [--seconds 10] [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.serve_child import serve_simulplay  # noqa: E402
from simulplay.live.client import Endpoint, Record, run_sessions, sleep_until  # noqa: E402
from tests.live.fake_server import MODEL, ScriptedServer  # noqa: E402


def serve(port_queue, stop) -> None:
    with ScriptedServer({}, default=[("audio", 2400)]) as server:
        port_queue.put(server.server_address[1])
        stop.wait(600)


def start_server(ctx, kind: str, workers: int = 1):
    """The server process: the tests' scripted server, or `simulplay serve`'s (bench/serve_child.py)."""
    ports, stop = ctx.Queue(), ctx.Event()
    if kind == "serve":
        proc = ctx.Process(target=serve_simulplay, args=(ports, workers, MODEL), daemon=True)
    else:
        proc = ctx.Process(target=serve, args=(ports, stop), daemon=True)
    proc.start()
    return proc, ports, stop


def cpu_s(pid: int) -> float:
    """CPU seconds (user + system, all threads) the process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def stop_server(proc, stop) -> None:
    stop.set()
    proc.terminate()
    proc.join(10)


def schedules(n: int, seconds: float, seed: int = 35) -> list[list[float]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        t, times = 0.1, []
        while t < seconds:
            times.append(t)
            t += rng.uniform(0.05, 0.4)
        out.append(times)
    return out


async def baseline(plan: list[list[float]]) -> list[float]:
    late: list[float] = []

    async def one(times: list[float]) -> None:
        t0 = time.perf_counter() + 0.05
        for t in times:
            wait = t0 + t - time.perf_counter()
            if wait > 0:
                await asyncio.sleep(wait)
            late.append(time.perf_counter() - t0 - t)

    await asyncio.gather(*(one(times) for times in plan))
    return late


async def baseline_until(plan: list[list[float]]) -> list[float]:
    """The same wake-ups through the client's own primitive (timer, then yield)."""
    late: list[float] = []

    async def one(times: list[float]) -> None:
        t0 = time.perf_counter() + 0.05
        for t in times:
            await sleep_until(t0 + t)
            late.append(time.perf_counter() - t0 - t)

    await asyncio.gather(*(one(times) for times in plan))
    return late


def p99(values) -> float:
    return float(np.percentile(np.asarray(values) * 1e3, 99))


def percentiles(values) -> str:
    v = np.asarray(values) * 1e3
    p50, p99 = np.percentile(v, 50), np.percentile(v, 99)
    return f"p50 {p50:6.2f} ms  p99 {p99:6.2f} ms  max {v.max():6.2f} ms  (n={len(v)})"


def spread(name: str, values: list[float]) -> str:
    return f"{name}: min {min(values):.2f}, median {statistics.median(values):.2f}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--outputs", type=int, default=27)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--repeats", type=int, default=3, help="runs of baseline and client, alternating")
    ap.add_argument("--server", choices=("scripted", "serve"), default="scripted",
                    help="the tests' scripted server, or `simulplay serve`'s server over a fast tone backend")
    args = ap.parse_args()
    plan = schedules(args.outputs, args.seconds)
    ctx = mp.get_context("spawn")
    proc, ports, stop = start_server(ctx, args.server)
    p99s: dict[str, list[float]] = {"baseline": [], "sleep_until": [], "live": []}
    try:
        port = ports.get(timeout=60)
        endpoint = Endpoint(url=f"http://127.0.0.1:{port}/v1/audio/speech", model=MODEL, timeout=10.0)
        for rep in range(args.repeats):
            base = asyncio.run(baseline(plan))
            until = asyncio.run(baseline_until(plan))
            sessions = [[Record(i, k, t, f"text {i} {k}") for k, t in enumerate(times)] for i, times in enumerate(plan)]
            cpu0 = cpu_s(proc.pid)
            asyncio.run(run_sessions(endpoint, sessions))
            server_ms = (cpu_s(proc.pid) - cpu0) * 1e3
            records = [r for s in sessions for r in s]
            failed = sum(1 for r in records if not r.ok)
            late = [r.sent_s - r.due_s for r in records]
            print(f"run {rep + 1}: {args.outputs} outputs, {len(records)} requests over {args.seconds:g} s, "
                  f"{failed} failed, load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
            print(f"  baseline (asyncio.sleep alone):  {percentiles(base)}")
            print(f"  sleep_until alone (no HTTP):     {percentiles(until)}")
            print(f"  live client (sent − due):        {percentiles(late)}")
            print(f"  server CPU: {server_ms / len(records):.3f} ms per request")
            print(f"  ratio live/baseline: p50 {np.percentile(late, 50) / np.percentile(base, 50):.2f}, "
                  f"p99 {np.percentile(late, 99) / np.percentile(base, 99):.2f}")
            for k, v in (("baseline", base), ("sleep_until", until), ("live", late)):
                p99s[k].append(p99(v))
    finally:
        stop_server(proc, stop)
    print(f"p99 over {args.repeats} runs (ms): " + "; ".join(spread(k, v) for k, v in p99s.items()))
    ratios = [a / b for a, b in zip(p99s["live"], p99s["baseline"])]
    print(spread("ratio live/baseline p99", ratios))


if __name__ == "__main__":
    main()
