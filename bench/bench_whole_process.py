"""Whole-process cost: `simulplay synth` against a plain piper-tts loop, as whole processes.

Both are timed from process start to exit — imports, voice loading, warm-up, synthesis and
writing included — on the same requests, same voice (en_US-joe-medium), same onnxruntime
session (THREADS intra-op threads, sequential), in alternated runs (plain, synth, synth,
plain, …) so that drifts in the machine's speed hit both alike. The throughput ratio is
median(plain) / median(synth): 1.0 means simulplay costs nothing beyond Piper itself.

    python bench/bench_whole_process.py                 # 80 requests, 3 rounds
    python bench/bench_whole_process.py --talk-minutes 10 --rounds 2   # a 10-minute talk
    python bench/bench_whole_process.py --parallel      # also process:2 (1 thread each) vs serial
    python bench/bench_whole_process.py --split 40,160  # per-request overhead and fixed start-up apart

``--split N1,N2`` runs the alternation at two sizes and splits simulplay's extra wall time
(synth − plain, medians) into a straight line: the slope is the overhead per request (store
write, record, clock readings), printed as a share of the median request's service time
(goal ≤ 3 %), and the intercept the fixed start-up (imports, planning, warm-up probes,
manifest; goal ≤ 1.5 s).

``--in-process N`` measures the per-request overhead directly, where the process-level
split cannot see it (a few milliseconds per request is below the drift of whole-process
timings): N requests synthesized in this process by the serial executor, its loop timed
with :func:`time.perf_counter`; the overhead per request is the loop's wall time minus
the voice's loading and the service clock's (every request's ``service_s`` and every
probe repeat), over N: the
claim, the clock readings, the FLAC store, the record and the event log.

simulplay's modules are byte-compiled first (as an installed package is). Every run gets a
fresh store. Prints one line per comparison and a JSON record (with the
machine and the load averages before and after) on the last line.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simulplay.core.provenance import machine  # noqa: E402
from simulplay.traces import read_trace, write_trace  # noqa: E402

THREADS = 2
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


def talk_trace(path: Path, minutes: float | None, n_requests: int | None) -> None:
    """One talk made of the sample traces' `eager` streams laid end to end (repeated as
    needed): ``minutes`` of source, or the first ``n_requests`` updates."""
    df = read_trace(ROOT / "traces" / "sample_traces.jsonl")
    eager = [g for _, g in df[df["system"] == "eager"].groupby("talk_id", sort=False)]
    rows, offset, k = [], 0.0, 0
    while (minutes and offset < 60 * minutes) or (n_requests and len(rows) < n_requests):
        g = eager[k % len(eager)]
        for t, text in zip(g["time_s"], g["text"]):
            if (minutes and offset + t >= 60 * minutes) or (n_requests and len(rows) >= n_requests):
                break
            rows.append({"talk_id": "talk", "system": "eager", "seq": len(rows), "time_s": offset + float(t),
                         "text": text, "glue": False})
        offset += float(g["source_s"].iloc[0])
        k += 1
    frame = pd.DataFrame(rows).assign(source_s=max(offset, rows[-1]["time_s"] + 1.0))
    write_trace(frame, path, {"table": "trace"})


def prepare(tmp: Path, minutes: float | None, n_requests: int | None) -> tuple[Path, Path, int]:
    """The requests file (`simulplay group … --rule immediate`) and the same texts as JSON."""
    talk_trace(tmp / "talk.parquet", minutes, n_requests)
    subprocess.run([sys.executable, "-m", "simulplay", "group", str(tmp / "talk.parquet"), "--rule", "immediate",
                    "--out", str(tmp / "requests.parquet")], check=True, env=ENV, capture_output=True)
    texts = pd.read_parquet(tmp / "requests.parquet")["text"].tolist()
    (tmp / "texts.json").write_text(json.dumps(texts), encoding="utf-8")
    return tmp / "requests.parquet", tmp / "texts.json", len(texts)


def timed(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds of the whole process, and its CPU seconds (user + system, its children
    included: a busy machine inflates the first far more than the second)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, env=ENV, capture_output=True)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def plain_cmd(texts: Path, out: Path) -> list[str]:
    return [sys.executable, str(ROOT / "bench" / "plain_piper_loop.py"), str(texts), str(out), str(THREADS)]


def synth_cmd(requests: Path, store: Path, backend: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "simulplay", "synth", "--requests", str(requests), "--backend", backend,
            "--reuse", "never", "--store", str(store), "--out", f"{store}.parquet", "--quiet", *extra]


def alternate(commands: dict[str, callable], rounds: int) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Run each command once per round, the order reversed every other round (A B, B A, …:
    a drift of the machine's speed, or one run's writes still being flushed during the
    next, hits every command alike): wall and CPU seconds each."""
    wall: dict[str, list[float]] = {k: [] for k in commands}
    cpu: dict[str, list[float]] = {k: [] for k in commands}
    order = list(commands.items())
    for r in range(rounds):
        for name, make in (order if r % 2 == 0 else order[::-1]):
            w, c = timed(make(r))
            wall[name].append(w)
            cpu[name].append(c)
    return wall, cpu


def split(sizes: list[int], rounds: int) -> None:
    """Per-request overhead and fixed start-up from two sizes (see the module docstring)."""
    compileall.compile_dir(ROOT / "simulplay", quiet=1)
    extra, extra_cpu, service = {}, {}, []
    serial = f"piper:intra_op_threads={THREADS}"
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp_name:
            tmp = Path(tmp_name)
            requests, texts, got = prepare(tmp, None, n)
            times, cpu = alternate({"plain": lambda r, t=texts, d=tmp: plain_cmd(t, d / f"wav{r}"),
                                  "synth": lambda r, q=requests, d=tmp: synth_cmd(q, d / f"store{r}", serial)},
                                 rounds)
            service += pd.read_parquet(tmp / "store0.parquet")["service_s"].tolist()
        extra[got] = statistics.median(times["synth"]) - statistics.median(times["plain"])
        extra_cpu[got] = statistics.median(cpu["synth"]) - statistics.median(cpu["plain"])
        print(f"{got} requests, {rounds} alternated rounds: plain {statistics.median(times['plain']):.2f} s, "
              f"synth {statistics.median(times['synth']):.2f} s, simulplay's extra {extra[got]:.3f} s")
    median = statistics.median(service)
    lines = {}
    for what, ex in (("wall", extra), ("CPU", extra_cpu)):  # CPU seconds: far less of the machine's noise
        (n1, e1), (n2, e2) = sorted(ex.items())
        per_request = (e2 - e1) / (n2 - n1)
        fixed = e1 - n1 * per_request
        lines[what] = {"per_request_s": per_request, "fixed_s": fixed}
        print(f"{what} seconds: per-request overhead {1000 * per_request:.2f} ms = "
              f"{100 * per_request / median:.2f} % of the median request's service time {1000 * median:.0f} ms "
              f"(goal ≤ 3 %); fixed start-up {fixed:.2f} s (goal ≤ 1.5 s)")
    print(json.dumps({"sizes": sorted(extra), "extra_s": extra, "extra_cpu_s": extra_cpu, "split": lines,
                      "median_service_s": median, "rounds": rounds, "machine": machine()}))


def in_process(n_requests: int, rounds: int) -> None:
    """The serial loop's own time per request (module docstring), best of ``rounds``."""
    from simulplay.backends import parse_backend
    from simulplay.grouping import parse_rule
    from simulplay.store.store import AudioStore
    from simulplay.synthesis.executors import local
    from simulplay.synthesis.run import synthesize_to_manifest
    from simulplay.traces import streams_from_frame

    loop: list[float] = []
    real = local.run_serial

    def timed_serial(*args, **kwargs):
        t = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            loop.append(time.perf_counter() - t)

    local.run_serial = timed_serial
    start = local.WorkerState.start.__func__

    def timed_start(cls, *args, **kwargs):  # the voice's loading is start-up, not per request
        t = time.perf_counter()
        try:
            return start(cls, *args, **kwargs)
        finally:
            loop.append(-(time.perf_counter() - t))

    local.WorkerState.start = classmethod(timed_start)
    per_request = []
    with tempfile.TemporaryDirectory() as tmp:
        talk_trace(Path(tmp) / "talk.parquet", None, n_requests)
        streams = streams_from_frame(read_trace(Path(tmp) / "talk.parquet"))
        for r in range(rounds):
            loop.clear()
            res = synthesize_to_manifest(streams, [parse_rule("immediate")],
                                         parse_backend(f"piper:intra_op_threads={THREADS},reuse=never"),
                                         AudioStore.open(Path(tmp) / f"store{r}"), Path(tmp) / f"m{r}.parquet")
            service = res.stats.service_s + sum(sum(p.get("repeats_s", [p["service_s"]])) for p in res.stats.probes)
            per_request.append((sum(loop) - service) / res.stats.synthesized)
            median = float(pd.read_parquet(Path(tmp) / f"m{r}.parquet")["service_s"].median())
    best = min(per_request)
    print(f"in process, {n_requests} requests, best of {rounds}: the serial loop's own time {1e3 * best:.2f} ms per "
          f"request = {100 * best / median:.2f} % of the median request's service time {1e3 * median:.0f} ms "
          f"(goal ≤ 3 %; rounds {', '.join(f'{1e3 * x:.2f}' for x in per_request)} ms)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=80)
    ap.add_argument("--talk-minutes", type=float, default=None)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--parallel", action="store_true")
    ap.add_argument("--split", default=None, help="N1,N2: per-request overhead and fixed start-up apart")
    ap.add_argument("--in-process", type=int, default=None, help="N: the serial loop's own time per request")
    args = ap.parse_args()
    if args.in_process:
        in_process(args.in_process, args.rounds)
        return
    if args.split:
        split([int(x) for x in args.split.split(",")], args.rounds)
        return
    # As `pip install` does, simulplay's modules are compiled once before the runs, so that no
    # timed run compiles them: where PYTHONDONTWRITEBYTECODE is set (this VM) and the package
    # runs from the source tree, every run would compile about 110 modules (≈ 0.2 s).
    compileall.compile_dir(ROOT / "simulplay", quiet=1)
    before = machine()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        n_req = None if args.talk_minutes else args.requests
        requests, texts, n = prepare(tmp, args.talk_minutes, n_req)
        serial = f"piper:intra_op_threads={THREADS}"
        commands = {"plain": lambda r: plain_cmd(texts, tmp / f"wav{r}"),
                    "synth": lambda r: synth_cmd(requests, tmp / f"store{r}", serial)}
        if args.parallel:
            commands["process2"] = lambda r: synth_cmd(requests, tmp / f"pstore{r}", "piper:intra_op_threads=1",
                                                       "--executor", "process:2", "--contention-sample", "0")
        times, cpu = alternate(commands, args.rounds)
    med = {k: statistics.median(v) for k, v in times.items()}
    med_cpu = {k: statistics.median(v) for k, v in cpu.items()}
    what = f"{args.talk_minutes:g}-minute talk" if args.talk_minutes else "requests"
    print(f"{n} {what} ({n} requests), {args.rounds} alternated rounds: plain piper loop {med['plain']:.2f} s, "
          f"simulplay synth {med['synth']:.2f} s → throughput ratio {med['plain'] / med['synth']:.3f} "
          f"(CPU seconds {med_cpu['plain']:.2f} vs {med_cpu['synth']:.2f}: {med_cpu['plain'] / med_cpu['synth']:.3f})")
    paired = [p / q for p, q in zip(times["plain"], times["synth"])]
    print(f"per-round ratios (plain / synth of the same round): {', '.join(f'{x:.3f}' for x in paired)} "
          f"(min {min(paired):.3f}, max {max(paired):.3f}: the machine's noise between runs)")
    if "process2" in med:
        print(f"process:2 (1 thread each) {med['process2']:.2f} s vs serial (2 threads) {med['synth']:.2f} s → "
              f"{med['process2'] / med['synth']:.3f}× the serial time")
    print(json.dumps({"requests": n, "talk_minutes": args.talk_minutes, "rounds": args.rounds, "times_s": times,
                      "cpu_s": cpu, "median_s": med, "median_cpu_s": med_cpu,
                      "ratio_plain_over_synth": med["plain"] / med["synth"],
                      "cpu_ratio_plain_over_synth": med_cpu["plain"] / med_cpu["synth"], "per_round_ratios": paired,
                      "machine": before, "load_after": machine()["load"]}))


if __name__ == "__main__":
    main()
