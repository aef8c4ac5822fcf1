"""Regenerate the bundled sample traces: `python -m traces.generate [OUT]` from the
repository root.

Two simulated streaming translators read the same talk text in one-second source
packets and commit whole words:

* ``eager`` emits many short updates (most packets commit 1–4 words);
* ``batched`` emits fewer, longer updates and, like a fixed-history baseline, sometimes
  repeats a few words at a commit boundary, so its text is longer.

Update sizes follow a skewed distribution tuned to streaming-translator statistics
(median ≈ 3 words, ≈ 35–45 % of updates with ≤ 2 words); each update is available at the
first packet after its last word was spoken plus a commitment lag. The output is
deterministic (seeded) and written to ``traces/sample_traces.jsonl`` (or to ``OUT``), the one
copy: the build ships this folder as the package ``simulplay.sample_traces``, which the demo reads.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np

from .texts import TALKS

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "sample_traces.jsonl"
SOURCE_S = {"walkable-city": 128.4, "night-sky": 125.9, "bread-science": 122.7}
SYSTEMS = {
    # name: (update sizes, their weights, lag range in seconds, repeat probability)
    "eager": ([1, 2, 3, 4, 5, 6, 8], [0.12, 0.30, 0.24, 0.15, 0.09, 0.06, 0.04], (1.5, 3.0), 0.0),
    "batched": ([1, 2, 3, 4, 6, 9, 12, 15], [0.20, 0.27, 0.13, 0.07, 0.09, 0.09, 0.10, 0.05], (2.0, 4.5), 0.08),
}


def stream(words: list[str], source_s: float, system: str, rng: np.random.Generator) -> list[dict]:
    sizes, weights, (lag_lo, lag_hi), repeat = SYSTEMS[system]
    spoken = np.linspace(0.8, source_s - 1.5, len(words))  # when each source word is heard
    updates, k, prev_t = [], 0, 0
    while k < len(words):
        n = min(int(rng.choice(sizes, p=weights)), len(words) - k)
        chunk = words[k:k + n]
        if repeat and k and rng.random() < repeat:  # a boundary repetition
            chunk = words[max(0, k - int(rng.integers(1, 4))):k] + chunk
        t = math.ceil(spoken[k + n - 1] + rng.uniform(lag_lo, lag_hi))
        t = max(t, prev_t + 1)  # one update per one-second packet
        updates.append({"time_s": float(t), "text": " ".join(chunk)})
        prev_t, k = t, k + n
    return updates


def main(out: Path = DEFAULT_OUT) -> None:
    rng = np.random.default_rng(20261130)
    lines = []
    for talk, text in TALKS.items():
        for system in SYSTEMS:
            lines.append({"talk_id": talk, "system": system, "source_s": SOURCE_S[talk],
                          "updates": stream(text.split(), SOURCE_S[talk], system, rng)})
    out.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT)
