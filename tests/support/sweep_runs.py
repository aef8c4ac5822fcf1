"""A small run folder for the sweep without synthesis: traces, a manifest whose audio and
service seconds follow a seeded linear formula with noise, and run.json as `simulplay run`
writes it (the parts a sweep reads); :func:`swept_run` adds the tables the report and the
explorer read and a real sweep with a confirmed point; :func:`piper_run` makes one of a real
synthesis."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from simulplay.core.signature import base_signature
from simulplay.core.tables import write_table
from simulplay.grouping import parse_rule, requests_frame
from simulplay.traces import write_trace
from simulplay.traces.model import Stream, frame_from_streams
from tests.support.factories import WORDS, stream
from tests.support.synth import PiperRun

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


def revising(streams: list, every: int = 3) -> list:
    """The streams with every ``every``-th update (the third, sixth, …) replacing the one
    before it: it retracts that update's text and the space before it."""
    out = []
    for s in streams:
        retract = np.zeros(len(s), np.int64)
        for i in range(every - 1, len(s), every):
            retract[i] = len(s.texts[i - 1]) + 1
        out.append(Stream(s.talk_id, s.system, s.source_s, s.times, s.texts, s.glue, retract))
    return out


def synthetic_run(folder: Path, *, rules=("immediate", "timer:w=2", "timer:w=4"), n_talks: int = 4,
                  backend: str = "piper:intra_op_threads=1", noise_s: float = 0.03, seed: int = 11,
                  realizations: int = 1, revise: bool = False, label: str = "synthetic") -> Path:
    """A run folder in ``folder`` (created): ``run.json``, ``manifest.parquet`` and the
    trace it names. Audio: 0.2 s + 0.06 s per character + 0.15 s per comma or full stop
    + N(0, noise_s), drawn anew for each realization; service: 0.05 s + 0.2 × audio.
    ``revise``: the traces revise (:func:`revising`; ``rules`` may then name commit policies);
    ``label``: the manifest's backend column (the label ``backend`` writes, for a confirm)."""
    folder.mkdir(parents=True, exist_ok=True)
    streams = sweep_streams(n_talks, seed=seed)
    streams = revising(streams) if revise else streams
    trace = folder / "trace.jsonl"
    write_trace(frame_from_streams(streams), trace, {"table": "trace"})
    write_manifest(folder / "manifest.parquet", streams, rules, np.random.default_rng(seed), realizations=realizations,
                   noise_s=noise_s, label=label)
    exp = {"name": "sweep-test", "traces": [str(trace)], "a": "A", "f": "F", "rules": list(rules),
           "reference": rules[0], "backend": backend, "out": str(folder), "store": str(folder / "store"),
           "realizations": realizations, "order": "counterbalanced", "max_chars": None, "draws": 2000, "seed": 1032026,
           "quantile_method": "order:floor((n+1)a)", "confidence": 0.95, "silent_parts": "skip"}
    (folder / "run.json").write_text(json.dumps({"experiment": exp}, indent=2), encoding="utf-8")
    return folder


def piper_run(folder: Path, trace: Path, run: PiperRun, *, rules=("immediate", "timer:w=2", "timer:w=4"),
              a: str = "A", f: str = "F", backend: str = "piper:intra_op_threads=1,durations=fixed",
              draws: int = 2000) -> Path:
    """A run folder from a real synthesis of ``trace`` under ``rules`` with ``backend``
    (``run``: one of the session's shared Piper runs, tests/support/synth.py): what `simulplay
    run` writes for a sweep (``manifest.parquet``, the run's manifest and chunk table copied
    in; ``run.json`` naming the run's store; ``eta.parquet`` from its replay), without the
    latency tables, the explorer and the report a full run adds (most of its time)."""
    from simulplay.analysis import Bootstrap, compute_eta
    from simulplay.manifest import chunk_path, read_manifest
    from simulplay.sim import replay

    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(run.manifest, folder / "manifest.parquet")
    shutil.copyfile(chunk_path(run.manifest), chunk_path(folder / "manifest.parquet"))
    exp = {"name": "piper-sweep-test", "traces": [str(trace)], "a": a, "f": f, "rules": list(rules),
           "reference": rules[0], "backend": backend, "out": str(folder), "store": str(run.store),
           "realizations": 1, "order": "counterbalanced", "max_chars": None, "draws": draws, "seed": 1032026,
           "quantile_method": "order:floor((n+1)a)", "confidence": 0.95, "silent_parts": "skip"}
    (folder / "run.json").write_text(json.dumps({"experiment": exp}, indent=2), encoding="utf-8")
    man, meta = read_manifest(folder / "manifest.parquet")
    rep = replay(man, upstream=meta["signature"])
    eta = compute_eta(rep.summary, a=a, f=f, reference=rules[0], boot=Bootstrap(draws=draws, seed=1032026),
                      upstream=rep.signatures)
    write_table(eta.table, folder / "eta.parquet", eta.table_signatures, kind="eta", signature_column=True)
    return folder


def write_manifest(path: Path, streams: list, rules, rng: np.random.Generator, *, realizations: int = 1,
                   noise_s: float = 0.03, label: str = "synthetic") -> pd.DataFrame:
    """The requests of ``streams`` under ``rules`` with :func:`synthetic_run`'s audio and
    service seconds (noise drawn from ``rng``), written as a signed manifest at ``path``."""
    req = requests_frame(streams, [parse_rule(r) for r in rules])
    text = req["text"]
    parts = []
    for r in range(realizations):
        audio = 0.2 + 0.06 * text.str.len() + 0.15 * text.str.count(r"[.,]") + rng.normal(0, noise_s, len(req))
        n = np.rint(np.maximum(audio, 0.05) * RATE).astype(np.int64)
        parts.append(req.assign(backend=label, realization=str(r), n_samples=n, sample_rate=RATE,
                                audio_s=n / RATE, service_s=0.05 + 0.2 * n / RATE, error="", audio_key=""))
    man = pd.concat(parts, ignore_index=True)
    sig = base_signature(backend="synthetic", splitter="none")
    write_table(man, path, [{**sig, "rule": c} for c in man["condition"]], kind="manifest",
                extra_meta={"signature": sig})
    return man


#: The sweep of :func:`swept_run`: a family along one key, and one with a second varying key.
SWEEP_RULES = ("timer:w=1..4", "punct:cap=1..3,min_words=2,3")


def swept_run(folder: Path, *, realizations: int = 2, rules=SWEEP_RULES, confirmed: str = "timer:w=1",
              figures: bool = False) -> Path:
    """:func:`synthetic_run` (``realizations`` panels) with the tables `simulplay run` writes
    for the report and the explorer (summary, η, per-talk η), swept over ``rules`` by the
    real :func:`~simulplay.workflows.sweep.sweep_run` into ``folder/sweep``; the grid point
    ``confirmed`` reads back as confirmed by synthesis (``sweep/confirmed.parquet``, as an
    earlier ``--confirm`` leaves it: the reference and the point, by the same formula).
    Without ``figures`` the sweep's figure files are left empty: matplotlib is most of a
    sweep's time, and a test of the sweep's tables never reads them."""
    import pytest

    from simulplay.analysis import Bootstrap, compute_eta
    from simulplay.manifest import read_manifest
    from simulplay.sim import replay
    from simulplay.workflows.sweep import sweep_run

    synthetic_run(folder, realizations=realizations)
    man, meta = read_manifest(folder / "manifest.parquet")
    rep = replay(man, upstream=meta["signature"])
    write_table(rep.summary, folder / "summary.parquet", rep.signatures, kind="playback-summary")
    eta = compute_eta(rep.summary, a="A", f="F", reference="immediate", boot=Bootstrap(draws=200, seed=1),
                      upstream=rep.signatures)
    write_table(eta.table, folder / "eta.parquet", eta.table_signatures, kind="eta", signature_column=True)
    write_table(eta.per_talk, folder / "eta_per_talk.csv", eta.per_talk_signatures, kind="eta-per-talk")
    (folder / "sweep").mkdir()
    write_manifest(folder / "sweep" / "confirmed.parquet", sweep_streams(4), ["immediate", confirmed],
                   np.random.default_rng(5), realizations=realizations)
    with pytest.MonkeyPatch.context() as mp:
        if not figures:
            mp.setattr("simulplay.report.sweep_figures.sweep_figure", lambda *a, **k: (b"", b"", []))
        sweep_run(folder, list(rules))
    return folder
