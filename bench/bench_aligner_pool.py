"""OmniSTEval's aligner (the step of `simulplay textlatency` that maps talks over a process pool)
under each way of running it, on the 27-talk shape and on a small one.

OmniSTEval 0.1.10 opens ``multiprocessing.Pool()``: fork, one worker per CPU. simulplay lends it
``simulplay.core.pools.pool`` instead (forkserver workers, none for one talk), because a forked worker
of a threaded process can hang. The shapes:

- **panel**: 27 talks of one system, 4.7 hours (durations as bench_import.py draws them), about
  2.3 words a second, each hypothesis the reference with a fifth of its words replaced;
- **small**: two talks of 40 words, aligned ``--small-repeat`` times in one process (what the
  test suite does: the pool's start-up is all there is).

Printed as ratios against OmniSTEval's own fork pool measured in the same run; the results of
every mode are checked equal to the fork pool's. Run:
    .venv/bin/python bench/bench_aligner_pool.py [--scale 1.0] [--small-repeat 20]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from omnisteval import alignment  # noqa: E402
from omnisteval.alignment import Word, align_words  # noqa: E402

from bench.bench_import import talk_seconds  # noqa: E402
from simulplay.core import pools  # noqa: E402

WORDS_PER_S = 2.3


def talks(n_words: list[int], seed: int = 33) -> tuple[list, list]:
    rng = random.Random(seed)
    vocab = ["".join(rng.choice("abcdefghijklmnopqrstu") for _ in range(rng.randint(2, 10))) for _ in range(4000)]
    refs, hyps, seq = [], [], 0
    for n in n_words:
        ref = []
        for i in range(n):
            ref.append(Word(text=rng.choice(vocab), seq_id=seq + i // 18))
        seq += n // 18 + 1
        hyp = [Word(text=w.text if rng.random() < 0.8 else rng.choice(vocab), emission_cu=0.4 * i)
               for i, w in enumerate(ref)]
        refs.append(ref)
        hyps.append(hyp)
    return refs, hyps


MODES = {
    "fork (OmniSTEval's own)": lambda n: mp.get_context("fork").Pool(),
    "serial": lambda n: pools.SerialPool(),
    "spawn": lambda n: mp.get_context("spawn").Pool(pools.worker_count(n)),
    "simulplay.core.pools": lambda n: pools.pool(pools.worker_count(n)),
}


def measure(refs: list, hyps: list, repeat: int) -> dict[str, tuple[float, list]]:
    out = {}
    for mode, make in MODES.items():
        before = alignment.Pool
        alignment.Pool = lambda make=make: make(len(refs))
        try:
            t0 = time.perf_counter()
            for _ in range(repeat):
                result = align_words(refs, hyps, False)
            out[mode] = (time.perf_counter() - t0, result)
        finally:
            alignment.Pool = before
    return out


def report(title: str, runs: dict[str, tuple[float, list]]) -> None:
    base_s, base = next(iter(runs.values()))
    want = {k: [w.text for w in v] for k, v in base.items()}
    print(f"{title}\n  {'mode':<26}{'seconds':>9}{'× fork':>9}  same result")
    for mode, (s, result) in runs.items():
        same = {k: [w.text for w in v] for k, v in result.items()} == want
        print(f"  {mode:<26}{s:>9.2f}{s / base_s:>9.2f}  {same}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=1.0, help="talk lengths × this (1 = 4.7 hours)")
    ap.add_argument("--small-repeat", type=int, default=20)
    args = ap.parse_args()
    print(f"{pools.worker_count(10**6)} usable CPUs; simulplay.core.pools starts {pools.start_method()} workers")
    words = [max(20, round(s * WORDS_PER_S * args.scale)) for s in talk_seconds()]
    report(f"panel: 27 talks, {sum(words)} words", measure(*talks(words), 1))
    report(f"small: 2 talks of 40 words, × {args.small_repeat}", measure(*talks([40, 40]), args.small_repeat))
