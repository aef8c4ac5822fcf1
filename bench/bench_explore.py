"""The explorer at the scale of a paper's panel: does it open in under 3 s and stay small?

A synthetic run folder of the issue's shape — 27 talks, 5 conditions, 2 systems, 3
realizations, about 70,000 requests (request clocks, chunks and texts generated, no
synthesis, so no audio) — replayed as `simulplay run` does under the primary replay and
the sensitivity replays service=zero, service=scale=2 and release=chunk, with η tables
and a trace. (The modelled clock service=fit is left out: its least-absolute-deviations
fit takes minutes on 23,000 requests per panel, in the run and in `simulplay explore`
alike, and changes nothing the page loads.) Then `simulplay explore`'s library call
writes the explorer and headless Chromium (Debian's, through playwright) loads it from
disk, alternating with a baseline measured in the same run: the same page and scripts
with an empty panel (no talk, no table).

Printed: the folder's size (all of it, and the largest data file), the time to build and
write it, and in the browser the time until the panel view is drawn, until a talk's
timeline is drawn after a click, and for a variant switch and a zoom step, each as the
median of ROUNDS and as a ratio to the baseline page's load. Run:
    .venv/bin/python bench/bench_explore.py [ROUNDS]
"""

from __future__ import annotations

import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simulplay.analysis import Bootstrap, compute_eta  # noqa: E402
from simulplay.core.signature import base_signature  # noqa: E402
from simulplay.core.tables import write_table  # noqa: E402
from simulplay.core.timebase import to_ns  # noqa: E402
from simulplay.formats.summary import variant_label  # noqa: E402
from simulplay.manifest import validate_manifest  # noqa: E402
from simulplay.manifest.chunks import chunk_path, validate_chunks  # noqa: E402
from simulplay.report.explore import build_explorer, write_explorer  # noqa: E402
from simulplay.sim import replay  # noqa: E402
from simulplay.sim.variants import parse_variant  # noqa: E402
from simulplay.traces import write_trace  # noqa: E402

TALKS, REALIZATIONS = 27, 3
RULES = ["immediate", "timer:w=2", "timer:w=4", "punct", "words"]
CONDITIONS = ["immediate", "timer:w=2", "timer:w=4", "punct:cap=2,min_words=3", "words:n=8,cap=2"]
GROUP = [1, 2, 3, 4, 5]  # updates per request under each condition
UPDATES = {"A": 220, "F": 160}  # text updates per talk
VARIANTS = ["service=zero", "service=scale=2", "release=chunk"]
WORDS = "the a of to in we that is it for on this was with as you they at be our can".split()
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 5


def synthetic_run(folder: Path, seed: int = 20261202) -> int:
    """Write the run folder; returns the number of requests."""
    rng = np.random.default_rng(seed)
    rows, chunks, trace = [], [], []
    for t in range(TALKS):
        talk, source = f"talk{t:02d}", float(rng.uniform(480, 780))
        for system, n in UPDATES.items():
            times = np.sort(rng.uniform(0.5, source + 2, n))
            words = rng.integers(1, 6, n)
            texts = [" ".join(rng.choice(WORDS, k)) for k in words]
            trace += [{"talk_id": talk, "system": system, "seq": i, "time_s": float(times[i]), "text": texts[i],
                       "source_s": source} for i in range(n)]
            for r in range(REALIZATIONS):
                audio = words * rng.uniform(0.28, 0.42, n)
                for cond, size in zip(CONDITIONS, GROUP):
                    for seq, start in enumerate(range(0, n, size)):
                        idx = slice(start, start + size)
                        d = float(audio[idx].sum())
                        rows.append({"talk_id": talk, "system": system, "condition": cond, "backend": "fake:sine",
                                     "realization": str(r), "seq": seq, "dispatch_s": float(times[idx].max()),
                                     "service_s": float(0.02 + 0.08 * d * rng.uniform(0.8, 1.2)), "audio_s": d,
                                     "source_s": source, "text": " ".join(texts[idx]), "trigger": "timer",
                                     "group": seq, "error": ""})
                        ns = int(to_ns(d))
                        cuts = np.sort(rng.integers(1, ns, min(size, 3) - 1)) if size > 1 else np.zeros(0, int)
                        pieces = np.diff(np.concatenate([[0], cuts, [ns]]))
                        for k, piece in enumerate(pieces):
                            chunks.append({"talk_id": talk, "system": system, "condition": cond,
                                           "backend": "fake:sine", "realization": str(r), "seq": seq, "chunk": k,
                                           "ready_offset_s": 0.02 + 0.05 * k, "audio_s": int(piece) / 1e9})
    man = pd.DataFrame(rows)
    common = base_signature(backend="fake@0/sine/bench", splitter="none", reuse="always")
    write_table(man, folder / "manifest.parquet", [{**common, "rule": c} for c in man["condition"]], kind="manifest",
                extra_meta={"signature": common})
    write_table(pd.DataFrame(chunks), chunk_path(folder / "manifest.parquet"), common, kind="chunks")
    write_trace(pd.DataFrame(trace), folder / "trace.jsonl", base_signature(table="trace"))
    valid = validate_manifest(man, "manifest.parquet")
    ch = validate_chunks(pd.DataFrame(chunks), "chunks")
    boot = Bootstrap(draws=1000, seed=3, method="linear")
    for v in [None, *VARIANTS]:
        variant = parse_variant(v, source="bench") if v else None
        suffix = "." + variant_label(v) if v else ""
        rep = replay(valid, service=variant.service if v else None, release=variant.release if v else "request",
                     chunks=ch if v == "release=chunk" else None, upstream=common)
        write_table(rep.summary, folder / f"summary{suffix}.parquet", rep.signatures, kind="playback-summary")
        eta = compute_eta(rep.summary, a="A", f="F", reference="immediate", boot=boot, upstream=rep.signatures)
        write_table(eta.table, folder / f"eta{suffix}.parquet", eta.table_signatures, kind="eta")
        write_table(eta.per_talk, folder / f"eta_per_talk{suffix}.csv", eta.per_talk_signatures, kind="eta-per-talk")
    record = {"experiment": {"name": "bench-explore", "traces": [str(folder / "trace.jsonl")], "a": "A", "f": "F",
                             "rules": RULES, "reference": "immediate", "backend": "fake:sine",
                             "realizations": REALIZATIONS, "draws": 1000, "seed": 3, "quantile_method": "linear",
                             "confidence": 0.95, "variants": VARIANTS},
              "requests": len(man), "excluded_outputs": [], "signature": common}
    (folder / "run.json").write_text(json.dumps(record), encoding="utf-8")
    return len(man)


def baseline(explorer: Path, out: Path) -> None:
    """The same page and scripts with an empty panel: what loading costs with no data."""
    shutil.copytree(explorer, out, ignore=shutil.ignore_patterns("talks", "audio"))
    empty = {"name": "baseline", "a": "A", "f": "F", "reference": "immediate", "conditions": ["immediate"],
             "systems": ["A", "F"], "panels": [{}], "talks": [], "measured": [], "notes": [], "audio_note": "",
             "variants": [{"key": "primary", "title": "primary", "notes": [], "eta_lines": [], "talk_lines": [],
                           "eta": {"columns": ["panel", "condition", "sig"], "rows": [], "signatures": []},
                           "per_talk": {"columns": ["panel", "talk_id", "condition", "eta_s", "sig"], "rows": [],
                                        "signatures": []}}]}
    (out / "data" / "panel.js").write_text(f'simulplayExplorer.receive("panel","",{json.dumps(empty)});\n')


def size_mb(folder: Path) -> tuple[float, float]:
    sizes = [p.stat().st_size for p in folder.rglob("*") if p.is_file()]
    return sum(sizes) / 1e6, max(sizes) / 1e6


def browse(explorer: Path, empty: Path, profile: Path) -> dict[str, list[float]]:
    """Milliseconds per round: baseline load, panel load, talk opened, variant switch, zoom."""
    from playwright.sync_api import sync_playwright

    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
    times: dict[str, list[float]] = {k: [] for k in ("baseline", "panel", "talk", "variant", "zoom")}
    with sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(str(profile), executable_path=shutil.which("chromium"),
                                                   headless=True, args=flags, offline=True,
                                                   viewport={"width": 1280, "height": 900})
        for _ in range(ROUNDS):
            for name, folder in (("baseline", empty), ("panel", explorer)):  # alternated: drift cancels
                page = ctx.new_page()
                t0 = time.perf_counter()
                page.goto((folder / "index.html").as_uri())
                page.wait_for_selector("body[data-state=ready]")
                times[name].append((time.perf_counter() - t0) * 1000)
                if name == "panel":
                    times["talk"].append(timed(page, lambda p=page: p.locator("td.cell").nth(7).click(),
                                               "#timeline-view[data-state=ready]"))
                    times["variant"].append(timed(page, lambda p=page: p.select_option("#variant", index=1),
                                                  "#timeline-view[data-variant=service-zero]"))
                    times["zoom"].append(timed(page, lambda p=page: p.click("text=zoom in"), None))
                page.close()
        ctx.close()
    return times


def timed(page, action, selector: str | None) -> float:
    """Milliseconds from the action until ``selector`` shows (or the next frame is drawn)."""
    t0 = time.perf_counter()
    action()
    if selector:
        page.wait_for_selector(selector)
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    return (time.perf_counter() - t0) * 1000


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-explore-") as tmp:
        run = Path(tmp) / "run"
        run.mkdir()
        t0 = time.perf_counter()
        n = synthetic_run(run)
        t1 = time.perf_counter()
        ex = build_explorer(run)
        t2 = time.perf_counter()
        write_explorer(ex, run / "explore")
        t3 = time.perf_counter()
        baseline(run / "explore", Path(tmp) / "empty")
        total, largest = size_mb(run / "explore")
        print(f"panel: {TALKS} talks × {len(CONDITIONS)} conditions × 2 systems × {REALIZATIONS} realizations, "
              f"{n} requests, {1 + len(VARIANTS)} replays (run folder made in {t1 - t0:.1f} s)")
        print(f"explorer: built in {t2 - t1:.1f} s, written in {t3 - t2:.1f} s; folder {total:.2f} MB "
              f"(goal < 15 MB), largest file {largest:.2f} MB; empty page {size_mb(Path(tmp) / 'empty')[0]:.2f} MB")
        times = browse(run / "explore", Path(tmp) / "empty", Path(tmp) / "profile")
        base = statistics.median(times["baseline"])
        for key, label in (("baseline", "empty page load"), ("panel", "panel view load (goal < 3000 ms)"),
                           ("talk", "click → timeline drawn"), ("variant", "variant switch → lanes drawn"),
                           ("zoom", "zoom step → redrawn")):
            med = statistics.median(times[key])
            print(f"{label:34s} median {med:7.1f} ms over {ROUNDS} rounds; ratio to empty page load {med / base:5.2f}")


if __name__ == "__main__":
    main()
