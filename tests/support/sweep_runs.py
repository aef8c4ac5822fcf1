"""A small run folder for the sweep without synthesis: traces, a manifest whose audio and
service seconds follow a seeded linear formula with noise, and run.json as `simulplay run`
writes it (the parts a sweep reads)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from simulplay.grouping import parse_rule, requests_frame
from simulplay.signature import base_signature
from simulplay.tables import write_table
from simulplay.traces import write_trace
from simulplay.traces.model import frame_from_streams
from tests.support.factories import WORDS, stream

RATE = 22_050


def sweep_streams(n_talks: int = 4, n_updates: int = 30, seed: int = 11) -> list:
    """Two translators per talk: A (an update every 1–2 s, 1–3 words) and F (every 1–4 s,
    1–6 words); a full stop ends every fifth update; source 10 s after the last update."""
    rng = np.random.default_rng(seed)
    out = []
    for t in range(n_talks):
        for system, (gap, size) in {"A": (3, 3), "F": (5, 6)}.items():
            times = np.cumsum(rng.integers(1, gap, n_updates)).astype(float)
            texts = [" ".join(rng.choice(WORDS, int(rng.integers(1, size + 1)))) + ("." if i % 5 == 4 else "")
                     for i in range(n_updates)]
            out.append(stream(times, texts, talk_id=f"talk{t}", system=system, source_s=times[-1] + 10.0))
    source = {}
    for s in out:
        source[s.talk_id] = max(source.get(s.talk_id, 0.0), s.source_s)
    return [stream(s.times, s.texts, talk_id=s.talk_id, system=s.system, source_s=source[s.talk_id]) for s in out]


def synthetic_run(folder: Path, *, rules=("immediate", "timer:w=2", "timer:w=4"), n_talks: int = 4,
                  backend: str = "piper:intra_op_threads=1", noise_s: float = 0.03, seed: int = 11,
                  realizations: int = 1) -> Path:
    """A run folder in ``folder`` (created): ``run.json``, ``manifest.parquet`` and the
    trace it names. Audio: 0.2 s + 0.06 s per character + 0.15 s per comma or full stop
    + N(0, noise_s), drawn anew for each realization; service: 0.05 s + 0.2 × audio."""
    folder.mkdir(parents=True, exist_ok=True)
    streams = sweep_streams(n_talks, seed=seed)
    trace = folder / "trace.jsonl"
    write_trace(frame_from_streams(streams), trace, {"table": "trace"})
    rng = np.random.default_rng(seed)
    req = requests_frame(streams, [parse_rule(r) for r in rules])
    text = req["text"]
    parts = []
    for r in range(realizations):
        audio = 0.2 + 0.06 * text.str.len() + 0.15 * text.str.count(r"[.,]") + rng.normal(0, noise_s, len(req))
        n = np.rint(np.maximum(audio, 0.05) * RATE).astype(np.int64)
        parts.append(req.assign(backend="synthetic", realization=str(r), n_samples=n, sample_rate=RATE,
                                audio_s=n / RATE, service_s=0.05 + 0.2 * n / RATE, error="", audio_key=""))
    man = pd.concat(parts, ignore_index=True)
    sig = base_signature(backend="synthetic", splitter="none")
    write_table(man, folder / "manifest.parquet", [{**sig, "rule": c} for c in man["condition"]], kind="manifest",
                extra_meta={"signature": sig})
    exp = {"name": "sweep-test", "traces": [str(trace)], "a": "A", "f": "F", "rules": list(rules),
           "reference": rules[0], "backend": backend, "out": str(folder), "store": str(folder / "store"),
           "realizations": realizations, "order": "counterbalanced", "max_chars": None, "draws": 2000, "seed": 1032026,
           "quantile_method": "order:floor((n+1)a)", "confidence": 0.95, "silent_parts": "skip"}
    (folder / "run.json").write_text(json.dumps({"experiment": exp}, indent=2), encoding="utf-8")
    return folder
