"""Validation of the shared-server replay against live runs on real Piper (issue 36, item 4).

For K = 1 and 2 workers of `simulplay serve --backend piper:durations=fixed`:

1. the isolated service times, against a K = 1 server: `simulplay synth` through
   `http:base_url=…` (one request at a time; the default, ``--isolated synth``) or
   `simulplay live --concurrent 1` (one output at a time; ``--isolated live``). The demo
   talks' trace is first scaled by 1/S (times and source length), so every run below plays
   it at speed 1 and all share one time base;
2. the load curve of the K-worker server on the same request texts (`simulplay load
   --concurrency 1..K --requests-from` the isolated live manifest);
3. the live run with every output at once against the K-worker server;
4. the replays of the isolated manifest: plain (every output its own synthesizer, the
   isolated model) and `--servers K --share panel --load-curve` (the shared model);
5. per output ΔL = L(replay) − L(live) (L: the end offset, `offset_s`), p50/p95 of |ΔL|
   over the outputs, for both models.

    python bench/validate_shared_replay.py [--speed 1.5] [--talks a,b] [--rule immediate] [--out DIR]

Prints one line per K and model and writes validation.csv (per output) into DIR.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simulplay.core.keys import OUTPUT_KEYS  # noqa: E402
from simulplay.live.launcher import served  # noqa: E402

PIPER = "piper:durations=fixed,intra_op_threads=1"
TRACE = ROOT / "traces" / "sample_traces.jsonl"


def sp(*args) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    res = subprocess.run([sys.executable, "-m", "simulplay", *map(str, args)], capture_output=True, text=True, env=env)
    if res.returncode not in (0, 1):
        raise SystemExit(f"simulplay {' '.join(map(str, args[:2]))} failed ({res.returncode}): {res.stderr[-2000:]}")
    return res


def live(url: str, out: Path, trace: Path, rule: str, concurrent: int | None = None) -> Path:
    extra = ["--concurrent", concurrent] if concurrent else []
    sp("live", trace, "--rule", rule, "--backend", f"http:base_url={url}", "--out", out, *extra)
    return out


def scaled_trace(out: Path, speed: float, talks: list[str]) -> Path:
    df = pd.read_json(TRACE, lines=True)
    if talks:
        df = df[df["talk_id"].isin(talks)]
    df["source_s"] = df["source_s"] / speed
    df["updates"] = [[{**u, "time_s": u["time_s"] / speed} for u in ups] for ups in df["updates"]]
    path = out / "trace.jsonl"
    df.to_json(path, orient="records", lines=True, force_ascii=False)
    return path


def offsets(table: Path, release: bool) -> pd.DataFrame:
    df = pd.read_parquet(table)
    if release:
        df = df[(df["release"] == "request") & df["complete"]]
    return df.astype({k: str for k in OUTPUT_KEYS}).set_index(list(OUTPUT_KEYS))["offset_s"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--speed", type=float, default=1.5)
    ap.add_argument("--rule", default="immediate")
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--talks", default="", help="comma-separated talk ids (default: the three demo talks)")
    ap.add_argument("--isolated", choices=("synth", "live"), default="synth")
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    out = a.out or Path(tempfile.mkdtemp(prefix="validate-shared-"))
    out.mkdir(parents=True, exist_ok=True)
    talks = [t for t in a.talks.split(",") if t]
    trace = scaled_trace(out, a.speed, talks)
    with served(PIPER, out / "server_iso.log", args=("--quiet", "--workers", "1")) as (url, _):
        if a.isolated == "live":
            iso_manifest = live(url, out / "isolated", trace, a.rule, concurrent=1) / "live.parquet"
        else:
            iso_manifest = out / "isolated.parquet"
            sp("synth", trace, "--rule", a.rule, "--backend", f"http:base_url={url}", "--store", out / "store",
               "--out", iso_manifest)
    rows = []
    for k in (int(x) for x in a.workers.split(",")):
        with served(PIPER, out / f"server_k{k}.log", args=("--quiet", "--workers", str(k))) as (url, _):
            curve = out / f"curve_k{k}.csv"
            sp("load", "--backend", f"http:base_url={url}", "--concurrency", ",".join(map(str, range(1, k + 1))),
               "--requests", 8 * k, "--requests-from", iso_manifest, "--out", curve)
            run = live(url, out / f"live_k{k}", trace, a.rule)
        got = offsets(run / "player.parquet", release=True)
        models = {"isolated": [], "shared": ["--servers", k, "--share", "panel", "--load-curve", curve]}
        for name, flags in models.items():
            summary = out / f"replay_{name}_k{k}.parquet"
            sp("replay", iso_manifest, *flags, "--out", summary)
            d = (offsets(summary, release=False) - got).dropna()
            rows += [{"workers": k, "model": name, "output": "/".join(i), "L_live_s": got[i], "dL_s": v}
                     for i, v in d.items()]
            ad = d.abs().to_numpy()
            print(f"K={k} {name:8s}: {len(d)} outputs, |ΔL| p50 {np.percentile(ad, 50):.3f} s, "
                  f"p95 {np.percentile(ad, 95):.3f} s, max {ad.max():.3f} s, mean ΔL {d.mean():+.3f} s "
                  f"(mean live L {got.mean():.2f} s)")
    pd.DataFrame(rows).to_csv(out / "validation.csv", index=False)
    print(f"written to {out}")


if __name__ == "__main__":
    main()
