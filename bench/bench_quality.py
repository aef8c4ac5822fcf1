"""`simulplay quality`'s scorers: seconds per minute of audio for each metric, on real Piper speech.

Synthesizes about a minute of Piper speech (twelve sentences, one request each, back to back),
then times, per metric, its first call (model loading and first-use compilation included) and
its warm cost per minute of audio: DNSMOS (whole 9.01 s windows; each request on its own, as
`quality` scores requests; only the first window, as the demo scores an output), the GE2E embedding of the
whole audio plus one per request (what `quality` computes for an output), and the joins of
the listener audio. Printed as seconds per minute of audio and as ratios against a baseline
measured in the same run: decoding the same audio from FLAC in memory. Run:
    .venv/bin/python bench/bench_quality.py
"""

from __future__ import annotations

import io
import sys
import time
from pathlib import Path

import numpy as np
import soundfile as sf

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simulplay.backends import parse_backend  # noqa: E402
from simulplay.scorers import dnsmos, joins, similarity  # noqa: E402

SENTENCES = [
    "When I moved to this city ten years ago, I could not cross the main road near my house.",
    "There was no crossing for almost a kilometre, and the cars moved fast because the road was wide.",
    "Today there are three crossings, a bus lane and trees on both sides of the street.",
    "Nobody expected the change to come so quickly, but the neighbours asked for it every year.",
    "The school at the corner now has a quiet street in front of its main entrance.",
    "Children walk to class on their own, and their parents no longer drive them every morning.",
    "The shops along the road have more customers than before, not fewer, as many had feared.",
    "On weekends the street is closed to cars, and it fills with markets, music and bicycles.",
    "Last winter the river froze over for the first time in a decade, and the town went skating.",
    "The city measured the air along the road, and it is cleaner than it has been for years.",
    "Other cities have sent their planners to see what changed, and what it cost to change it.",
    "The answer is less than one new interchange, and the work took only two summers.",
]


def timed(fn, repeat: int = 1) -> float:
    t = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - t) / repeat


def main() -> None:
    backend = parse_backend("piper:intra_op_threads=1").create()
    backend.load()
    pieces = [np.concatenate(list(backend.stream(s))).astype(np.int16) for s in SENTENCES]
    rate = int(backend.sample_rate)
    backend.close()
    audio = np.concatenate(pieces)
    minutes = len(audio) / rate / 60
    counts = np.array([len(p) for p in pieces])
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    buf = io.BytesIO()
    sf.write(buf, audio, rate, format="FLAC", subtype="PCM_16")
    data = buf.getvalue()
    base = timed(lambda: sf.read(io.BytesIO(data), dtype="int16"), 5) / minutes

    first_dnsmos = timed(lambda: dnsmos.score(pieces[0], rate))
    warm_dnsmos = timed(lambda: dnsmos.score(audio, rate)) / minutes
    per_request = timed(lambda: [dnsmos.score(x, rate) for x in pieces]) / minutes
    first_window = timed(lambda: dnsmos.score(audio, rate, max_windows=1), 3)
    first_sim = timed(lambda: similarity.embed(pieces[0], rate))
    warm_sim = timed(lambda: [similarity.embed(x, rate) for x in [audio, *pieces]]) / minutes
    warm_joins = timed(lambda: joins.joins(audio, starts, counts, rate), 5) / minutes

    print(f"{len(audio) / rate:.1f} s of Piper speech in {len(pieces)} requests ({rate} Hz)")
    print(f"baseline: FLAC decode {base:.4f} s per minute of audio")
    for name, first, warm in (("dnsmos", first_dnsmos, warm_dnsmos),
                              ("dnsmos, each request", first_dnsmos, per_request),
                              ("similarity", first_sim, warm_sim), ("joins", 0.0, warm_joins)):
        print(f"{name:20s}: {warm:7.3f} s per minute of audio ({warm / base:8.0f}× the baseline); "
              f"first call {first:.2f} s")
    print(f"dnsmos, first window only (the demo, per output of 9.01 s or more): {first_window:.3f} s per output")


if __name__ == "__main__":
    main()
