"""`simulplay replay` and `simulplay eta` as whole commands on a 27-talk panel of real shape.

The panel: 27 talks, two translators of about 13,450 updates each (bench_sweep's generator),
five rules (immediate, timer:w=2, timer:w=4, punct, words:n=4) — about 67,000 requests and
270 outputs — in a hand-written manifest (audio and service times drawn, no synthesis).
Each command runs in a fresh process, as a user runs it; the baseline, measured in the same
run, is the floor every command pays: a fresh interpreter that imports pandas and pyarrow and
reads the manifest. Printed: best of five wall times, peak memory (the child's ru_maxrss),
and the ratio to the baseline.

Run: .venv/bin/python bench/bench_panel_commands.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_sweep import RATE, synthetic_streams  # noqa: E402
from simulplay.core.tables import write_table  # noqa: E402
from simulplay.grouping import parse_rule, requests_frame  # noqa: E402
from simulplay.manifest.validate import validate_manifest  # noqa: E402

RULES = ("immediate", "timer:w=2", "timer:w=4", "punct", "words:n=4")


def write_panel(folder: Path) -> tuple[Path, int, int]:
    streams = synthetic_streams(27, 498)
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
    outputs = man.groupby(["talk_id", "system", "condition"]).ngroups
    return path, len(man), outputs


def timed(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds and peak memory (MB) of one fresh process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    err = proc.stderr.read().decode()
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{err}")
    return wall, usage.ru_maxrss / 1024


def best(cmd: list[str], rounds: int = 5) -> tuple[float, float]:
    runs = [timed(cmd) for _ in range(rounds)]
    return min(r[0] for r in runs), max(r[1] for r in runs)


def main() -> None:
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        manifest, n_requests, n_outputs = write_panel(folder)
        summary = folder / "summary.parquet"
        subprocess.run([py, "-m", "simulplay", "replay", str(manifest), "--out", str(summary)], check=True,
                       capture_output=True)
        print(f"panel: 27 talks, 2 systems, {len(RULES)} rules: {n_requests:,} requests, {n_outputs} outputs")
        base = best([py, "-c", f"import pandas, pyarrow.parquet as pq; pq.read_table({str(manifest)!r}).to_pandas()"])
        print(f"  baseline: interpreter + pandas + pyarrow, read the manifest  {base[0]:6.3f} s  {base[1]:5.0f} MB")
        for name, cmd in (
            ("replay", ["replay", str(manifest), "--out", str(folder / "s.parquet")]),
            ("eta", ["eta", str(summary), "--a", "eager", "--f", "batched", "--reference", "immediate",
                     "--out", str(folder / "eta.csv")]),
        ):
            wall, mem = best([py, "-m", "simulplay", *cmd])
            print(f"  simulplay {name:<6} {wall:6.3f} s  {mem:5.0f} MB  = {wall / base[0]:5.2f} × baseline "
                  f"(goal ≤ 1 s)")


if __name__ == "__main__":
    main()
