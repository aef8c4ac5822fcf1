"""Content diagnostics: recognition overhead and the unambiguous-alignment cost.

Printed as ratios against baselines measured in the same run. Run:
    .venv/bin/python bench/bench_content.py

1. simulplay's windowed recognition (capacity checks, word times moved to compact time)
   vs plain faster-whisper ``transcribe`` calls with the same settings on the same
   15-second windows of the same Piper audio (tiny.en, CPU): throughput ratio.
2. ``unambiguous_matches`` (every optimal alignment, forward + backward tables) vs
   rapidfuzz's ``Levenshtein.opcodes`` (one optimal alignment, C++) on a 2,000-word
   output with about 10 % edits: time ratio, and the table's memory.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simulplay.analysis.alignment import unambiguous_matches  # noqa: E402
from simulplay.backends import parse_backend  # noqa: E402
from simulplay.recognizers import parse_recognizer  # noqa: E402
from simulplay.recognizers.base import to_16k  # noqa: E402
from simulplay.recognizers.windows import WindowRule, plan_windows, transcribe_waveform  # noqa: E402
from simulplay.synthesis.request import synthesize_request  # noqa: E402
from simulplay.traces import read_trace  # noqa: E402

THREADS = 2


def audio_16k(seconds: float = 60.0) -> np.ndarray:
    backend = parse_backend(f"piper:intra_op_threads={THREADS}").create()
    backend.load()
    parts, total = [], 0
    for text in read_trace(ROOT / "traces" / "sample_traces.jsonl")["text"]:
        samples, _, _ = synthesize_request(backend, text)
        parts.append(samples)
        total += len(samples)
        if total >= seconds * backend.sample_rate:
            break
    return to_16k(np.concatenate(parts), backend.sample_rate)


def recognition(rounds: int = 4) -> None:
    from faster_whisper import WhisperModel

    audio = audio_16k()
    rec = parse_recognizer(f"whisper:cpu_threads={THREADS}").create()
    rec.load()
    model = WhisperModel(str(rec.config.model_path()), device="cpu", compute_type="float32", cpu_threads=THREADS)
    rule = WindowRule(15.0)
    def run_ours():
        transcribe_waveform(rec, audio, "en", rule)

    def run_plain():
        for a, b in plan_windows(len(audio), rule):
            segments, _ = model.transcribe(audio[a:b], language="en", beam_size=5, temperature=0.0,
                                           condition_on_previous_text=False, word_timestamps=True,
                                           no_speech_threshold=None)
            list(segments)

    ours, plain = [], []
    for r in range(rounds):  # alternate which goes first
        for fn, times in ((run_ours, ours), (run_plain, plain))[:: 1 if r % 2 == 0 else -1]:
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
    dur = len(audio) / 16_000
    print(f"recognition of {dur:.1f} s (tiny.en, {THREADS} threads): simulplay {min(ours):.2f} s, "
          f"plain faster-whisper {min(plain):.2f} s → throughput ratio {min(plain) / min(ours):.3f} (goal ≥ 0.95)")


def alignment(n: int = 2000) -> None:
    from rapidfuzz.distance import Levenshtein

    rng = np.random.default_rng(0)
    vocab = [f"w{i}" for i in range(400)]
    ref = list(rng.choice(vocab, n))
    hyp = []
    for w in ref:
        r = rng.random()
        if r < 0.04:
            continue  # deletion
        hyp.append(str(rng.choice(vocab)) if r < 0.08 else w)
        if r > 0.98:
            hyp.append(str(rng.choice(vocab)))  # insertion
    t = time.perf_counter()
    Levenshtein.opcodes(ref, hyp)
    base = time.perf_counter() - t
    t = time.perf_counter()
    _, status = unambiguous_matches(ref, hyp)
    ours = time.perf_counter() - t
    table_mb = (n + 1) * (len(hyp) + 1) * 2 / 2**20
    print(f"alignment of {n} × {len(hyp)} words: every optimal path {ours:.3f} s vs one path (rapidfuzz) "
          f"{base:.4f} s → ratio {ours / base:.0f}×; backward table {table_mb:.1f} MiB (int16); "
          f"accepted {status.count('accepted')}")


if __name__ == "__main__":
    alignment()
    recognition()
