"""Import time and peak memory of `import-simulstream` on a 27-talk, 4.7-hour log.

The log is generated (tests/support/simulstream_logs.py: SeamlessStreamAtt-shaped, one-second
packets, German SentencePiece pieces with lone ``▁``). Each measurement runs in a fresh
child process; time is the median of ``--repeat`` runs after imports, peak memory the
child's ``ru_maxrss``. Printed as ratios against baselines measured in the same run:
``json.loads`` of every line, and simulstream 1.0.0's own ``LogReader`` (final text and
per-word delays) on the same log. Run:
    .venv/bin/python bench/bench_import.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.simulstream_logs import seamless_log  # noqa: E402

TOTAL_S = 4.7 * 3600
N_TALKS = 27

CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
mode, log, out = sys.argv[2], sys.argv[3], sys.argv[4]
if mode == "simulstream":
    from types import SimpleNamespace
    from simulstream.metrics.readers import LogReader
elif mode != "json":
    from simulplay.traces import write_trace
    from simulplay.traces.importers import import_simulstream
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
if mode == "json":
    with open(log, encoding="utf-8") as f:
        n = len([json.loads(line) for line in f if line.strip()])
elif mode == "simulstream":
    config = SimpleNamespace(detokenizer_type="simuleval", latency_unit="spm")
    n = len(LogReader(config, log, latency_unit="word").final_outputs_and_latencies())
else:
    clock, write = mode.split("+") if "+" in mode else (mode, "")
    res = import_simulstream(log, system="S", clock=clock)
    if write:
        write_trace(res.frame, out, res.signature)
    n = len(res.frame)
elapsed = time.perf_counter() - t0
print(json.dumps({"s": elapsed, "n": n, "before_kb": before,
                  "peak_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""

MODES = ("json", "simulstream", "source", "computation-aware", "source+parquet")


def talk_seconds(seed: int = 27) -> list[float]:
    """27 talk durations summing to 4.7 h, each ending in a fractional packet."""
    rng = random.Random(seed)
    raw = [rng.uniform(180, 1300) for _ in range(N_TALKS)]
    scale = TOTAL_S / sum(raw)
    out = [round(r * scale, 6) for r in raw]
    out[-1] = round(TOTAL_S - sum(out[:-1]), 6)
    return out


def measure(mode: str, log: Path, out: Path, repeat: int) -> dict:
    runs = []
    for _ in range(repeat):
        proc = subprocess.run([sys.executable, "-c", CHILD, str(ROOT), mode, str(log), str(out)],
                              capture_output=True, text=True, check=True)
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    return {"s": statistics.median(r["s"] for r in runs), "n": runs[0]["n"],
            "peak_mib": max(r["peak_kb"] for r in runs) / 1024, "before_mib": max(r["before_kb"] for r in runs) / 1024}


def cli_seconds(log: Path, out: Path, clock: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "simulplay", "import-simulstream", str(log), "--system", "S", "--clock",
                    clock, "--out", str(out)], capture_output=True, text=True, check=True, cwd=ROOT)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (median time)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        log = seamless_log(tmp / "metrics.jsonl", talk_seconds())
        size = log.path.stat().st_size / 2**20
        res = {m: measure(m, log.path, tmp / "trace.parquet", args.repeat) for m in MODES}
        cli = {c: cli_seconds(log.path, tmp / f"{c}.parquet", c) for c in ("source", "computation-aware")}
    print(f"log: {N_TALKS} talks, {TOTAL_S / 3600:.1f} h, {log.packets} packets, {size:.1f} MiB")
    base, ref = res["json"], res["simulstream"]
    print(f"baseline json.loads of every line: {base['s']:.2f} s, peak RSS {base['peak_mib']:.0f} MiB")
    print(f"simulstream 1.0.0 LogReader (final text + word delays): {ref['s']:.2f} s "
          f"({ref['s'] / base['s']:.1f}× json.loads), peak RSS {ref['peak_mib']:.0f} MiB")
    for m in MODES[2:]:
        r = res[m]
        print(f"import-simulstream --clock {m}: {r['s']:.2f} s → {r['s'] / base['s']:.1f}× json.loads, "
              f"{ref['s'] / r['s']:.1f}× faster than simulstream's reader; {r['n']} updates; peak RSS "
              f"{r['peak_mib']:.0f} MiB "
              f"({r['peak_mib'] - r['before_mib']:.0f} MiB above the {r['before_mib']:.0f} MiB after imports)")
    for c, s in cli.items():
        print(f"whole command (interpreter start, import, Parquet, table) --clock {c}: {s:.2f} s")


if __name__ == "__main__":
    main()
