"""Piper path overhead, store overhead, and peak memory on a 20-minute talk.

Printed as ratios against baselines measured in the same run. Run:
    .venv/bin/python bench/bench_synthesis.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simulplay.backends import parse_backend  # noqa: E402
from simulplay.store.store import AudioStore  # noqa: E402
from simulplay.traces import read_trace  # noqa: E402

THREADS = 2


def requests(n: int = 60) -> list[str]:
    df = read_trace(ROOT / "traces" / "sample_traces.jsonl")
    return list(df["text"].iloc[:n])


def plain_loop(voice, syn_config, texts) -> tuple[float, float]:
    start, audio = time.perf_counter(), 0
    for text in texts:
        for chunk in voice.synthesize(text, syn_config):
            audio += len(chunk.audio_int16_array)
    return audio / 22_050, time.perf_counter() - start


def simulplay_path(backend, texts, store_dir: Path, with_store: bool) -> tuple[float, float]:
    from simulplay.synthesis.request import synthesize_request

    store = AudioStore(store_dir) if with_store else None
    start, audio = time.perf_counter(), 0.0
    for text in texts:
        samples, service, chunks = synthesize_request(backend, text)
        if store is not None:
            key = store.put_audio(samples, backend.sample_rate)
            store.put_record(f"k{time.perf_counter_ns()}", {"audio_key": key, "service_s": service, "chunks": chunks})
        audio += len(samples) / backend.sample_rate
    return audio, time.perf_counter() - start


def throughput(rounds: int = 3) -> dict:
    backend = parse_backend(f"piper:intra_op_threads={THREADS}").create()
    backend.load()
    backend.warmup()
    texts = requests()
    plain, ours, stored = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds):  # interleaved so that drifts in machine speed hit all three alike
            a, t = plain_loop(backend.voice, backend.syn_config, texts)
            plain.append(a / t)
            a, t = simulplay_path(backend, texts, Path(tmp) / f"s{r}", with_store=False)
            ours.append(a / t)
            a, t = simulplay_path(backend, texts, Path(tmp) / f"s{r}", with_store=True)
            stored.append(a / t)
    p, o, s = np.median(plain), np.median(ours), np.median(stored)
    return {"plain_audio_s_per_s": p, "simulplay_audio_s_per_s": o, "with_store_audio_s_per_s": s,
            "ratio": o / p, "ratio_with_store": s / p}


def store_overhead(n: int = 200) -> dict:
    rng = np.random.default_rng(0)
    samples = [(rng.standard_normal(int(rng.uniform(1, 4) * 22_050)) * 3000).astype(np.int16) for _ in range(n)]
    with tempfile.TemporaryDirectory() as tmp:
        store = AudioStore(tmp)
        start = time.perf_counter()
        for i, s in enumerate(samples):
            key = store.put_audio(s, 22_050)
            record = {"audio_key": key, "n_samples": len(s), "sample_rate": 22_050, "service_s": 0.1,
                      "chunks": [[0.1, len(s)]], "audio_check": store.audio_check(key, len(s), 22_050)}
            store.put_record(f"r{i}", record)
        per = (time.perf_counter() - start) / n
        check = {True: [], False: []}  # full decode (store verify, stores without audio_check) vs the reuse check
        for full in (True, False, False, True, True, False):
            start = time.perf_counter()
            assert all(store.record_problem(f"r{i}", full=full) is None for i in range(n))
            check[full].append((time.perf_counter() - start) / n)
    mean_audio = float(np.mean([len(s) for s in samples])) / 22_050
    return {"store_ms_per_request": per * 1000, "mean_request_audio_s": mean_audio,
            "decode_check_ms": float(np.median(check[True])) * 1000,
            "reuse_check_ms": float(np.median(check[False])) * 1000}


RSS_CHILD = r"""
import json, resource, sys, numpy as np
sys.path.insert(0, sys.argv[1])
from simulplay.backends import parse_backend
from simulplay.store.store import AudioStore
from simulplay.synthesis.plan import plan_requests
from simulplay.synthesis.run import run_synthesis
from simulplay.grouping import parse_rule
from simulplay.traces.model import Stream
words = open(sys.argv[1] + "/traces/texts.py").read().split()
words = [w for w in words if w.isalpha()]
n_updates = int(sys.argv[3])
texts = tuple(" ".join(words[(3 * i) % (len(words) - 3):(3 * i) % (len(words) - 3) + 3]) for i in range(n_updates))
s = Stream("long", "A", n_updates * 1.0, np.arange(n_updates, dtype=float), texts, np.zeros(n_updates, bool))
config = parse_backend("piper:intra_op_threads=2,reuse=never")
plan = plan_requests([s], [parse_rule("immediate")], config.create()).frame
stats = run_synthesis(plan, config, AudioStore(sys.argv[2]))  # loads its own backend, as `synth` does
print(json.dumps({"peak_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  "audio_s": stats.audio_s, "requests": stats.synthesized}))
"""


def peak_rss() -> dict:
    out = {}
    for minutes in (2, 20):
        with tempfile.TemporaryDirectory() as tmp:
            n = minutes * 60  # one 3-word update per second ≈ the audio of a talk of that length
            proc = subprocess.run([sys.executable, "-c", RSS_CHILD, str(ROOT), tmp, str(n)], capture_output=True,
                                  text=True, check=True)
            out[minutes] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def main() -> None:
    t = throughput()
    print(f"Piper path: plain PiperVoice.synthesize loop {t['plain_audio_s_per_s']:.1f} audio-s/s, simulplay "
          f"{t['simulplay_audio_s_per_s']:.1f} → ratio {t['ratio']:.3f} (goal ≥ 0.97); with FLAC store writes "
          f"{t['ratio_with_store']:.3f}")
    s = store_overhead()
    print(f"store overhead: {s['store_ms_per_request']:.2f} ms per request (FLAC + record, "
          f"{s['mean_request_audio_s']:.1f} s of audio each)")
    print(f"reuse check per stored request: {s['reuse_check_ms']:.3f} ms with audio_check vs "
          f"{s['decode_check_ms']:.3f} ms decoding (store verify) → "
          f"{s['reuse_check_ms'] / s['decode_check_ms']:.3f} of the decode's time")
    r = peak_rss()
    for minutes, v in r.items():
        print(f"peak RSS synthesizing a {minutes}-minute talk ({v['requests']} requests, {v['audio_s']:.0f} s audio): "
              f"{v['peak_kb'] / 1024:.0f} MiB")
    ratio = r[20]["peak_kb"] / r[2]["peak_kb"]
    print(f"20-minute / 2-minute peak RSS ratio: {ratio:.3f} (flat: audio streams to disk)")


if __name__ == "__main__":
    main()
