"""Edge-silence replay: first sweep (VAD inference) against a cached sweep, demo-sized.

Uses the demo's manifest and store (``simulplay-demo/`` after ``make demo``, or
``--demo-dir DIR``); without one it synthesizes the demo first (a few minutes). The first
sweep runs in a fresh cache folder (the store's audio is linked, not copied). Printed as
ratios against baselines measured in the same run. Run:
    .venv/bin/python bench/bench_edges.py [--demo-dir DIR]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simulplay.manifest import read_manifest  # noqa: E402
from simulplay.store.store import AudioStore  # noqa: E402
from simulplay.vad import SileroVad  # noqa: E402
from simulplay.workflows.edges import edge_replay  # noqa: E402

THRESHOLDS = (0.3, 0.5, 0.7)


def demo_folder(arg: str | None, tmp: Path) -> Path:
    if arg:
        return Path(arg)
    if (ROOT / "simulplay-demo" / "manifest.parquet").exists():
        return ROOT / "simulplay-demo"
    from importlib.resources import files

    from simulplay.backends import parse_backend
    from simulplay.workflows.experiment import load_experiment
    from simulplay.workflows.pipeline import run_experiment

    print("no simulplay-demo/ folder: synthesizing the demo first (a few minutes)")
    exp = load_experiment(Path(str(files("simulplay").joinpath("data/demo.toml"))))
    out = tmp / "demo"
    threads = min(4, os.cpu_count() or 1)
    exp = dataclasses.replace(exp, backends=(parse_backend(f"piper:intra_op_threads={threads}"),), out=out,
                              store=out / "store", variants=(), edges=())
    run_experiment(exp)
    return out


def fresh_cache(store_dir: Path, tmp: Path, name: str) -> AudioStore:
    """A store folder sharing the demo's audio but with no cached probabilities."""
    root = tmp / name
    root.mkdir()
    (root / "audio").symlink_to((store_dir / "audio").resolve(), target_is_directory=True)
    return AudioStore(root)


def sweep(manifest, store, thresholds, variant="onnx"):
    t0 = time.perf_counter()
    res = edge_replay(manifest, store, thresholds, vad=SileroVad(variant))
    return time.perf_counter() - t0, res.stats


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--demo-dir", help="a folder written by `simulplay demo` (manifest.parquet, store/)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        demo = demo_folder(args.demo_dir, tmp)
        manifest, _ = read_manifest(demo / "manifest.parquet")
        store = fresh_cache(demo / "store", tmp, "onnx")
        first, stats = sweep(manifest, store, THRESHOLDS)
        cached = statistics.median(sweep(manifest, store, (0.4, 0.6, 0.8))[0] for _ in range(3))
        seq_first, seq_stats = sweep(manifest, fresh_cache(demo / "store", tmp, "sequence"), THRESHOLDS, "sequence")
    print(f"demo manifest: {len(manifest)} requests, {stats.inferred} distinct waveforms, {stats.audio_s:.0f} s of "
          f"audio")
    print(f"first sweep (onnx, 3 thresholds): {first:.2f} s, of which inference {stats.inference_s:.2f} s "
          f"(RTF {stats.inference_s / stats.audio_s:.4f})")
    print(f"cached sweep (3 other thresholds, no inference): {cached:.2f} s → first/cached ratio {first / cached:.1f}×")
    print(f"variant sequence first sweep: {seq_first:.2f} s (inference {seq_stats.inference_s:.2f} s) → "
          f"onnx/sequence ratio {first / seq_first:.2f}")


if __name__ == "__main__":
    main()
