"""Throughput of N worker processes over 1 on the same requests, and service-time inflation.

Run: .venv/bin/python bench/bench_executors.py   (N = number of CPU cores, 2 here)
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simulplay.backends import parse_backend  # noqa: E402
from simulplay.grouping import parse_rule  # noqa: E402
from simulplay.store.store import AudioStore  # noqa: E402
from simulplay.synthesis.executors import parse_executor  # noqa: E402
from simulplay.synthesis.plan import plan_requests  # noqa: E402
from simulplay.synthesis.run import run_synthesis  # noqa: E402
from simulplay.traces import read_trace, streams_from_frame  # noqa: E402


def timed_run(plan, config, executor: str) -> tuple[float, float, dict[str, float]]:
    """Wall time including worker start-up, the span between the first and the last stored
    request (start-up excluded), and each request's service time."""
    with tempfile.TemporaryDirectory() as tmp:
        store = AudioStore(tmp)
        start = time.perf_counter()
        run_synthesis(plan, config, store, executor=parse_executor(executor), contention_sample=0)
        wall = time.perf_counter() - start
        records = {k: store.get_record(k) for k in plan["key"].unique()}
    created = sorted(r["created"] for r in records.values())
    return wall, created[-1] - created[0], {k: r["service_s"] for k, r in records.items()}


def main() -> None:
    n = os.cpu_count() or 2
    config = parse_backend("piper:intra_op_threads=1,reuse=never")
    streams = streams_from_frame(read_trace(ROOT / "traces" / "sample_traces.jsonl"))
    plan = plan_requests(streams, [parse_rule("immediate")], config.create()).frame
    one, one_span, serial_service = timed_run(plan, config, "process:1")
    many, many_span, parallel_service = timed_run(plan, config, f"process:{n}")
    inflation = statistics.median(parallel_service[k] / serial_service[k] for k in serial_service)
    print(f"{plan['key'].nunique()} Piper requests (1 intra-op thread each): 1 worker {one:.1f} s, {n} workers "
          f"{many:.1f} s including worker start-up → throughput ×{one / many:.2f}; first to last request "
          f"{one_span:.1f} s vs {many_span:.1f} s → ×{one_span / many_span:.2f} (goal ≥ {0.85 * n:.2f})")
    print(f"median per-request service time with {n} workers / with 1 worker: {inflation:.3f}")


if __name__ == "__main__":
    main()
