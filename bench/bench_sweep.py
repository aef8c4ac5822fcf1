"""Modelled sweeps: a 40-point sweep against one plain replay of the same run.

Printed as ratios against a baseline measured in the same run (one plain replay of the
run's manifest and η on it, as ``simulplay replay`` + ``simulplay eta`` do), plus the
absolute seconds the issue's goals name. Run:

    .venv/bin/python bench/bench_sweep.py [DEMO_RUN_DIR]

1. The demo (3 talks × 2 systems, when a demo run folder is given: ``simulplay demo
   --out-dir DIR``): the 40-point sweep in the library (grouping, models, replay, η) and
   the whole ``sweep_run`` (Piper's phonemes, the self-check, tables and one figure per
   family written).
2. A synthetic 27-talk panel of about 13,000 updates per system, with a manifest under
   ``immediate`` and ``timer:w=2`` whose durations and service times follow a linear
   formula with noise (no synthesis): the same 40-point sweep on the text terms, then on
   the phoneme terms with Piper's phonemizer (every distinct request text of the grid
   phonemized once), and the process's peak memory.
"""

from __future__ import annotations

import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simulplay.analysis.bootstrap import Bootstrap  # noqa: E402
from simulplay.analysis.sweep import replay_eta, run_sweep  # noqa: E402
from simulplay.grouping import parse_rule, requests_frame  # noqa: E402
from simulplay.grouping.grid import parse_grids  # noqa: E402
from simulplay.manifest.validate import validate_manifest  # noqa: E402
from simulplay.traces.model import Stream  # noqa: E402

GRID = ["timer:w=0.5..8:0.5", "words:n=2..16", "punct:cap=0.5..4.5:0.5"]  # 16 + 15 + 9 = 40 points
VOCAB = ("the city road crossing cars moved fast because nobody planned for people walking, and then "
         "we changed it. Today children walk to school! Is that not what streets are for? Bread needs "
         "time; yeast eats sugar and breathes out gas.").split()
RATE = 22_050


def best_of(fn, rounds: int = 3) -> float:
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def synthetic_streams(n_talks: int = 27, updates: int = 480, seed: int = 20261203) -> list[Stream]:
    """Two translators per talk: ``eager`` (an update every second, 1–4 words) and
    ``batched`` (every 1–3 s, 1–8 words); about ``updates`` updates per stream."""
    rng = np.random.default_rng(seed)
    out = []
    for t in range(n_talks):
        for system, gap, size in (("eager", (1, 2), 4), ("batched", (1, 4), 8)):
            steps = rng.integers(*gap, updates).astype(float)
            times = np.cumsum(steps) + 2.0
            texts = tuple(" ".join(rng.choice(VOCAB, int(rng.integers(1, size + 1)))) for _ in range(updates))
            out.append(Stream(f"talk{t:02d}", system, float(updates * 1.5 + 10), times, texts,
                              np.zeros(updates, bool)))
    source = {}
    for s in out:  # one source duration per talk, after its last update
        source[s.talk_id] = max(source.get(s.talk_id, 0.0), float(s.times[-1]) + 5.0)
    return [Stream(s.talk_id, s.system, source[s.talk_id], s.times, s.texts, s.glue) for s in out]


def synthetic_manifest(streams: list[Stream], seed: int = 7) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    req = requests_frame(streams, [parse_rule("immediate"), parse_rule("timer:w=2")])
    chars = req["text"].str.len().to_numpy(float)
    audio = np.maximum(0.05, 0.25 + 0.062 * chars + rng.normal(0, 0.08, len(req)))
    n = np.rint(audio * RATE).astype(np.int64)
    return validate_manifest(req.assign(
        backend="synthetic", realization="0", n_samples=n, sample_rate=RATE, audio_s=n / RATE,
        service_s=np.maximum(0.0, 0.1 + 0.18 * audio + rng.normal(0, 0.02, len(req))), error=""), "synthetic")


def panel(label: str, streams, manifest, boot: Bootstrap, phonemize=None, rounds: int = 2) -> float:
    grids = parse_grids(GRID)
    kw = dict(a="eager", f="batched", reference="immediate", boot=boot)
    base = best_of(lambda: replay_eta(manifest, **kw))
    sweep = best_of(lambda: run_sweep(streams, manifest, grids, **kw), rounds=rounds)
    n_updates = sum(len(s) for s in streams) // 2
    print(f"{label}: {len({s.talk_id for s in streams})} talks, about {n_updates:,} updates per system, "
          f"{len(manifest):,} measured requests")
    print(f"  baseline: one replay + η of the run's manifest   {base:8.3f} s")
    print(f"  40-point modelled sweep, text terms (library)    {sweep:8.3f} s  = {sweep / base:6.1f} × baseline")
    if phonemize is not None:
        # a fresh phonemizer each round: nothing remembered from the round before
        t = time.perf_counter()
        res = run_sweep(streams, manifest, grids, phonemize=phonemize(), **kw)
        ph = time.perf_counter() - t
        print(f"  40-point modelled sweep, phoneme terms (library) {ph:8.3f} s  = {ph / base:6.1f} × baseline "
              f"({res.models[0].durations.describe()[:60]}…)")
    return base


def piper():
    """A fresh Piper phonemizer (nothing remembered from an earlier sweep)."""
    from simulplay.backends import parse_backend

    return parse_backend("piper").create().phonemizer()


def main() -> None:
    boot = Bootstrap()
    if len(sys.argv) > 1:
        from simulplay.workflows.sweep import read_run, sweep_run

        run = read_run(sys.argv[1])
        panel("demo", run.streams, run.manifest, run.boot, phonemize=piper)
        base = best_of(lambda: replay_eta(run.manifest, a=run.exp["a"], f=run.exp["f"],
                                          reference=run.exp["reference"], boot=run.boot))
        with tempfile.TemporaryDirectory() as tmp:
            whole = best_of(lambda: sweep_run(run.folder, GRID, out=Path(tmp)), rounds=2)
        print(f"  whole sweep_run (phonemes, check, files, figures) {whole:7.3f} s  = {whole / base:6.1f} × baseline")
    streams = synthetic_streams()
    manifest = synthetic_manifest(streams)
    panel("synthetic panel", streams, manifest, boot, phonemize=piper)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"  peak memory of this process (ru_maxrss)          {peak:8.0f} MB")


if __name__ == "__main__":
    main()
