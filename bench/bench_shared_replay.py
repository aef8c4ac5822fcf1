"""`simulplay replay --servers 4` as a whole process against the plain `simulplay replay`.

The panel is bench_panel_commands' (27 talks, two translators, five rules: about 67,000
requests and 270 outputs, audio and service drawn). The shared replay puts every output of a
condition in one share group (``--share panel``: 54 outputs per group, a group per rule, so
every request passes through the event loop) on K = 4 workers, once with slowdown 1 and once
with a load curve (1: 0.5 s, 2: 0.6 s, 4: 0.9 s). Each command runs in a fresh process, best of
five wall times; printed with the ratio to the plain replay measured in the same run, and the
clock alone (in process, best of five). Goal: the shared replay ≤ 2 s as a whole process.

Run: .venv/bin/python bench/bench_shared_replay.py
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_panel_commands import best, write_panel  # noqa: E402


def clock_alone(manifest: Path) -> float:
    """Best of five in-process seconds of the shared-server clock (K = 4, share = panel)."""
    from simulplay.core.timebase import to_ns
    from simulplay.manifest import read_manifest
    from simulplay.sim.servers import Servers

    df, _ = read_manifest(manifest)
    codes = df.groupby(["talk_id", "system", "condition", "backend", "realization"], sort=False).ngroup().to_numpy()
    dispatch, service = to_ns(df["dispatch_s"].to_numpy(float)), to_ns(df["service_s"].to_numpy(float))
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        clock = Servers(4, "panel").clock(df, codes, dispatch, service)
        times.append(time.perf_counter() - t0)
    print(f"  mean queue per request at K = 4: {np.mean(clock.queue) / 1e9:.3f} s")
    return min(times)


def main() -> None:
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        manifest, n_requests, n_outputs = write_panel(folder)
        curve = folder / "curve.csv"
        curve.write_text("concurrency,service_p50_s\n1,0.5\n2,0.6\n4,0.9\n")
        out = str(folder / "summary.parquet")
        print(f"panel: {n_requests:,} requests, {n_outputs} outputs; share=panel (one group per rule), K = 4")
        plain = best([py, "-m", "simulplay", "replay", str(manifest), "--out", out])
        print(f"  replay (plain)                        {plain[0]:6.3f} s  {plain[1]:5.0f} MB")
        for name, extra in (("replay --servers 4", []), ("replay --servers 4 --load-curve", ["--load-curve",
                                                                                           str(curve)])):
            t = best([py, "-m", "simulplay", "replay", str(manifest), "--out", out, "--servers", "4", *extra])
            print(f"  {name:36s}  {t[0]:6.3f} s  {t[1]:5.0f} MB  ×{t[0] / plain[0]:.2f} of plain")
        print(f"  the clock alone, in process           {clock_alone(manifest):6.3f} s")


if __name__ == "__main__":
    main()
