"""Synthetic run folders for the report tests, built the way `simulplay run` writes them
(replay → η → tables with signatures) from made-up request clocks, without synthesis."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from simulplay.analysis import Bootstrap, compute_eta
from simulplay.core.signature import base_signature
from simulplay.core.tables import write_table
from simulplay.manifest import validate_manifest
from simulplay.sim import replay
from simulplay.sim.variants import parse_service
from simulplay.traces import write_trace

RULES = ["immediate", "timer:w=4", "punct"]
CONDITIONS = ["immediate", "timer:w=4", "punct:cap=2,min_words=3"]
BACKEND = "fake:sine"


def talk_name(t: int, names=None) -> str:
    return names[t] if names else f"talk{t:02d}"


def synthetic_manifest(n_talks: int, seed: int = 7, names=None, backends: tuple[str, ...] = (BACKEND,)) -> pd.DataFrame:
    """Requests of two translators under three conditions; grouping merges requests, so
    grouped outputs have fewer, longer, later requests. ``names``: the talk ids (default
    talk00, talk01, …). Each further backend repeats the same requests with other
    durations and service times."""
    frames = [_one_backend(n_talks, seed, b, 1.0 + 0.4 * i, names) for i, b in enumerate(backends)]
    return pd.concat(frames, ignore_index=True)


def _one_backend(n_talks: int, seed: int, backend: str, slower: float, names=None) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(n_talks):
        source = float(rng.uniform(40, 90))
        for system, n_updates in (("A", 24), ("F", 16)):
            times = np.sort(rng.uniform(1, source, n_updates))
            audio = rng.uniform(0.3, 2.5, n_updates)
            for cond, size in zip(CONDITIONS, (1, 4, 3)):
                for seq, start in enumerate(range(0, n_updates, size)):
                    idx = slice(start, start + size)
                    rows.append({"talk_id": talk_name(t, names), "system": system, "condition": cond,
                                 "backend": backend, "realization": 0, "seq": seq,
                                 "dispatch_s": float(times[idx].max()) + (0 if size == 1 else 0.5),
                                 "service_s": 0.05 * slower * (idx.stop - start),
                                 "audio_s": float(audio[idx].sum() * 0.9 * slower ** (size > 1)),
                                 "source_s": source, "text": "words here.", "trigger": "immediate" if size == 1 else
                                 ("timer" if seq % 3 else "punct"), "group": seq, "error": ""})
    return pd.DataFrame(rows)


def with_audio(man: pd.DataFrame, store: Path, rate: int = 16_000) -> pd.DataFrame:
    """The manifest with stored audio: each request's duration taken to whole samples at
    ``rate`` Hz and a tone of that many samples put into the audio store at ``store``."""
    from simulplay.store.store import AudioStore

    audio = AudioStore(store)
    n = np.rint(man["audio_s"].to_numpy(float) * rate).astype(np.int64)
    keys = [audio.put_audio((np.sin(np.arange(k) * (0.05 + 0.01 * (i % 7))) * 8000).astype(np.int16), rate)
            for i, k in enumerate(n)]
    return man.assign(audio_s=n / rate, n_samples=n, sample_rate=rate, audio_key=keys)


def make_run(folder: Path, n_talks: int, *, draws: int = 300, traces: bool = True, names=None,
             realizations: int = 1, services: tuple[str, ...] = ("zero",), store: Path | None = None,
             backends: tuple[str, ...] = (BACKEND,), manifest: pd.DataFrame | None = None,
             rules: list[str] = RULES) -> Path:
    """Write a run folder as `simulplay run` does: manifest, summary, η (+ per talk,
    contrasts), the service variants (``service=zero``), run.json and the trace file it
    names. Realizations after the first repeat the plan with service times drawn afresh
    (uniform 0.5–1.5 × the first's, seeded); with ``store``, the requests' audio (tones)
    in that audio store, named in run.json. ``manifest`` and ``rules``: another plan than
    the synthetic one (the contrast only when both its rules are among them)."""
    folder.mkdir(parents=True, exist_ok=True)
    man = synthetic_manifest(n_talks, names=names, backends=backends) if manifest is None else manifest
    if store is not None:
        man = with_audio(man, store)
    if realizations > 1:
        rng = np.random.default_rng(11)
        man = pd.concat([man] + [man.assign(realization=r, service_s=man["service_s"] * rng.uniform(0.5, 1.5, len(man)))
                                 for r in range(1, realizations)], ignore_index=True)
    common = base_signature(backend="fake@0/sine/abc", splitter="none", reuse="always")
    write_table(man, folder / "manifest.parquet", [{**common, "rule": c} for c in man["condition"]], kind="manifest",
                extra_meta={"signature": common})
    valid = validate_manifest(man, "manifest.parquet")
    boot = Bootstrap(draws=draws, seed=3, method="linear")  # as run.json below says
    contrasts = [("punct", "timer:w=4")] if {"punct", "timer:w=4"} <= set(rules) else []
    for suffix, service in (("", "measured"), *((f".service-{v}", v) for v in services)):
        rep = replay(valid, service=parse_service(service), upstream=common)
        write_table(rep.summary, folder / f"summary{suffix}.parquet", rep.signatures, kind="playback-summary")
        eta = compute_eta(rep.summary, a="A", f="F", reference="immediate", boot=boot, contrasts=contrasts,
                          upstream=rep.signatures)
        for ext in (".parquet", ".csv", ".md"):
            write_table(eta.table, folder / f"eta{suffix}{ext}", eta.table_signatures, kind="eta",
                        signature_column=True)
        write_table(eta.per_talk, folder / f"eta_per_talk{suffix}.csv", eta.per_talk_signatures, kind="eta-per-talk")
        write_table(eta.contrasts, folder / f"contrasts{suffix}.csv", eta.contrast_signatures, kind="contrast",
                    signature_column=True)
    trace_path = folder / "trace.jsonl"
    if traces:
        rows = [{"talk_id": talk_name(t, names), "system": s, "seq": i, "time_s": float(i), "text": w,
                 "source_s": 40.0} for t in range(n_talks) for s in ("A", "F")
                for i, w in enumerate(["Hello there", "world.", "a b c d", "end!"])]
        write_trace(pd.DataFrame(rows), trace_path, base_signature(table="trace"))
    record = {"experiment": {"name": f"synthetic-{n_talks}", "traces": [str(trace_path)], "a": "A", "f": "F",
                             "rules": list(rules), "reference": "immediate", "backend": BACKEND,
                             "realizations": realizations,
                             "draws": draws, "seed": 3, "quantile_method": "linear", "confidence": 0.95,
                             "contrasts": [list(c) for c in contrasts],
                             "variants": [f"service={v}" for v in services],
                             **({"store": str(store)} if store is not None else {})},
              "requests": len(man), "synthesized": 0, "already_in_store": 0, "failed": 0, "reused_rows": 0,
              "audio_s": float(man["audio_s"].sum()), "excluded_outputs": [], "signature": common}
    (folder / "run.json").write_text(json.dumps(record), encoding="utf-8")
    return folder
