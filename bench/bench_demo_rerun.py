"""The demo's first run against its reruns (everything reused), as whole processes.

The first `simulplay demo` synthesizes everything; each rerun finds every request in the
store and reuses sweep/, explore/ and report/ (their inputs unchanged). Printed: the first
run's wall time (goal ≤ 3 minutes on a quiet machine), the reruns' median and range (goal
≤ 5 s), their ratio to the first run, and a baseline measured in the same run: a fresh
interpreter that imports pandas, pyarrow and rich (the floor of any command that prints a
table).

Run: .venv/bin/python bench/bench_demo_rerun.py [--reruns 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timed(cmd: list[str]) -> tuple[float, str]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr}")
    return wall, proc.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reruns", type=int, default=5)
    args = ap.parse_args()
    py = sys.executable
    base = min(timed([py, "-c", "import pandas, pyarrow.parquet, rich.console"])[0] for _ in range(3))
    with tempfile.TemporaryDirectory() as tmp:
        demo = [py, "-m", "simulplay", "demo", "--out-dir", str(Path(tmp) / "demo")]
        first, _ = timed(demo)
        reruns, out = [], ""
        for _ in range(args.reruns):
            wall, out = timed(demo)
            reruns.append(wall)
    reused = next((line for line in out.splitlines() if line.startswith("reused ")), "reused nothing")
    med = statistics.median(reruns)
    print(f"baseline: interpreter + pandas + pyarrow + rich  {base:6.2f} s")
    print(f"first run (synthesis of everything)            {first:6.1f} s (goal ≤ 180 s quiet)")
    print(f"rerun, median of {len(reruns)}                          {med:6.2f} s  (range {min(reruns):.2f}–"
          f"{max(reruns):.2f} s; goal ≤ 5 s) = {med / first:.3f} × the first run, {med / base:.1f} × the baseline")
    print(f"  {reused}")


if __name__ == "__main__":
    main()
