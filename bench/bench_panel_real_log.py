"""`simulplay replay` and `simulplay eta` as whole commands on a panel shaped like a real log.

The panel: one generated 27-talk SeamlessStreamAtt-shaped simulstream log
(tests/support/simulstream_logs.py, talks of 5.3 to 13 minutes, 2.45 words/s, seeded), imported under both
clocks — the source clock as system ``eager``, the computation-aware clock as ``batched`` —
and grouped under bench_panel_commands' five rules: about 67,000 requests whose texts have the
real log's shape (66,676 requests, median 34 characters, up to 194; the real log: 67,418,
median 34, up to 235), unlike bench_panel_commands'
synthetic panel. Audio and service times are drawn as there (no synthesis). Each command runs
in a fresh process; best of seven wall times and CPU times (user + system: the steadier figure
on a shared machine), peak memory, and the ratios to the baseline (a fresh interpreter that
imports pandas and pyarrow and reads the manifest). Goal (issue 36): ≤ 1 s each.

Run: .venv/bin/python bench/bench_panel_real_log.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_panel_commands import RULES  # noqa: E402
from bench.bench_sweep import RATE  # noqa: E402
from simulplay.core.tables import write_table  # noqa: E402
from simulplay.grouping import parse_rule, requests_frame  # noqa: E402
from simulplay.manifest.validate import validate_manifest  # noqa: E402
from simulplay.traces import streams_from_frame  # noqa: E402
from simulplay.traces.importers.simulstream import import_simulstream  # noqa: E402
from tests.support.simulstream_logs import seamless_log  # noqa: E402

TALKS = 27


def write_panel(folder: Path) -> tuple[Path, int, int, np.ndarray]:
    seconds = np.random.default_rng(27).uniform(320, 775, TALKS).round(3).tolist()
    log = seamless_log(folder / "log.jsonl", seconds, words_per_s=2.45)
    streams = []
    for system, clock in (("eager", "source"), ("batched", "computation-aware")):
        streams += streams_from_frame(import_simulstream(log.path, system=system, clock=clock).frame)
    req = requests_frame(streams, [parse_rule(r) for r in RULES])
    rng = np.random.default_rng(11)
    chars = req["text"].str.len().to_numpy(float)
    audio = np.maximum(0.05, 0.25 + 0.062 * chars + rng.normal(0, 0.08, len(req)))
    n = np.rint(audio * RATE).astype(np.int64)
    man = validate_manifest(req.assign(
        backend="synthetic", realization="0", n_samples=n, sample_rate=RATE, audio_s=n / RATE,
        service_s=np.maximum(0.0, 0.1 + 0.18 * audio + rng.normal(0, 0.02, len(req))), error=""), "bench")
    path = folder / "manifest.parquet"
    write_table(man, path, {"table": "manifest", "backend": "synthetic"}, kind="manifest")
    return path, len(man), man.groupby(["talk_id", "system", "condition"]).ngroups, chars


def timed(cmd: list[str]) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (user + system) and peak memory (MB) of one fresh process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    err = proc.stderr.read().decode()
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{err}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def best(cmd: list[str], rounds: int = 7) -> tuple[float, float, float]:
    """The least wall and CPU seconds of ``rounds`` runs, and the largest peak memory."""
    runs = [timed(cmd) for _ in range(rounds)]
    return min(r[0] for r in runs), min(r[1] for r in runs), max(r[2] for r in runs)


def main() -> None:
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        manifest, n_requests, n_outputs, chars = write_panel(folder)
        summary = folder / "summary.parquet"
        subprocess.run([py, "-m", "simulplay", "replay", str(manifest), "--out", str(summary)], check=True,
                       capture_output=True)
        print(f"panel: a {TALKS}-talk simulstream log under both clocks, {len(RULES)} rules: {n_requests:,} "
              f"requests, {n_outputs} outputs; text characters median {np.median(chars):.0f}, max {chars.max():.0f}")
        base = best([py, "-c", f"import pandas, pyarrow.parquet as pq; pq.read_table({str(manifest)!r}).to_pandas()"])
        print(f"  baseline: interpreter + pandas + pyarrow, read the manifest  {base[0]:6.3f} s  cpu {base[1]:6.3f} s  "
              f"{base[2]:5.0f} MB")
        for name, cmd in (
            ("replay", ["replay", str(manifest), "--out", str(folder / "s.parquet")]),
            ("eta", ["eta", str(summary), "--a", "eager", "--f", "batched", "--reference", "immediate",
                     "--out", str(folder / "eta.csv")]),
        ):
            wall, cpu, mem = best([py, "-m", "simulplay", *cmd])
            print(f"  simulplay {name:<6} {wall:6.3f} s  cpu {cpu:6.3f} s  {mem:5.0f} MB  = {wall / base[0]:5.2f} × "
                  f"baseline (cpu {cpu / base[1]:5.2f} ×; goal ≤ 1 s)")


if __name__ == "__main__":
    main()
