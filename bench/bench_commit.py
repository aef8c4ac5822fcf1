"""Applying a commit policy to a 27-talk, 4.7-hour re-translation log (goal ≤ 0.2 s per policy).

The log is generated (tests/support/retranslation_logs.py: one-second packets of German
SentencePiece pieces, a fifth of them revising: wrong tails, a retracted final ".", repetition
loops, everything retracted on a failed window match), imported with ``--retractions keep``.
Each policy runs over every stream; time is the median of ``--repeat`` runs in CPU seconds of
this process (``time.process_time``: on a shared machine wall time counts the neighbours). The baseline,
measured in the same run, is grouping the committed streams with ``punct`` (what follows a
commit policy in every command). Then a 40-point commit sweep as a whole command,
``simulplay spoken TRACE --commit hold:t=0.05..2:0.05`` (goal ≤ 30 s): its wall time and the
child's CPU time. Then the modelled sweep (``--sweep``): a run folder of two re-translating
translators of that shape (A and F, two logs of other seeds; no synthesis: a manifest under
``punct`` and ``stable:k=2+punct`` whose audio and service seconds follow a linear formula,
tests/support/sweep_runs.py), swept as one ``simulplay sweep`` command over 40 points
(:data:`SWEEP_COMMIT` × :data:`SWEEP_RULE`: 20 policies × 2 rules), over 40 policies × 1
rule (``hold:t=0.05..2:0.05``) and over the 20 policies × 2 closed-loop rules
(:data:`SWEEP_LOOP`: each point's policy runs in its engine on every committed stream), text
terms: wall time, the child's CPU time and the load. Run:
    .venv/bin/python bench/bench_commit.py [--repeat 3] [--sweep] [--only-sweep]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_import import talk_seconds  # noqa: E402
from tests.support.retranslation_logs import revising_log  # noqa: E402

POLICIES = ("eager", "stable:k=2", "stable:k=2,unit=char", "hold:t=1", "mask:k=3", "final")
GOAL_S = 0.2
SWEEP_COMMIT = ("stable:k=1..4", "hold:t=0.25..2:0.25", "mask:k=0..6", "final")  # 4 + 8 + 7 + 1 = 20 policies
SWEEP_RULE = "punct:cap=2,4"  # × 2 rules = 40 points
SWEEP_LOOP = "backlog:below=1,2"  # closed loop, × 2 rules = 40 points


def timed(fn, repeat: int) -> tuple[float, object]:
    runs, out = [], None
    for _ in range(repeat):
        t0 = time.process_time()
        out = fn()
        runs.append(time.process_time() - t0)
    return statistics.median(runs), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sweep", action="store_true", help="also the modelled commit sweep of a run folder")
    parser.add_argument("--only-sweep", action="store_true", help="only the modelled commit sweep")
    parser.add_argument("--figure", type=Path, help="with the sweep: the trade-off figure to this PNG (docs/img)")
    args = parser.parse_args()
    if args.only_sweep:
        modelled_sweep(args.figure)
        return
    from simulplay.grouping import parse_commit, parse_rule, requests_frame
    from simulplay.traces.importers import import_simulstream
    from simulplay.traces.model import streams_from_frame
    from simulplay.traces.revisions import revision_stats

    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "retranslation.jsonl"
        talks = revising_log(log, talk_seconds(), rate=0.2)
        streams = streams_from_frame(import_simulstream(log, system="R").frame, revising=True)
    updates = sum(len(s) for s in streams)
    revisions = sum(revision_stats(s)["revisions"] for s in streams)
    print(f"{len(talks)} talks, {sum(t.seconds for t in talks) / 3600:.2f} h, {updates} updates, "
          f"{revisions} revising ({100 * revisions / updates:.0f} %)")
    punct = parse_rule("punct")
    base_s, _ = timed(lambda: requests_frame([parse_commit("final").commit(s).stream for s in streams], [punct]),
                      args.repeat)
    print(f"baseline: final + punct grouping of every stream {base_s:.3f} s (CPU)")
    worst = 0.0
    for text in POLICIES:
        policy = parse_commit(text)
        s, out = timed(lambda policy=policy: [policy.commit(x) for x in streams], args.repeat)
        worst = max(worst, s)
        retracted = sum(c.retracted_words for c in out)
        print(f"{policy.label():<24} {s:.3f} s CPU ({s / base_s:.2f}× baseline)  "
              f"spoken-then-retracted {retracted} words")
    print(f"slowest policy {worst:.3f} s (goal ≤ {GOAL_S} s): {'met' if worst <= GOAL_S else 'NOT met'}")
    sweep_command(streams)
    if args.sweep:
        modelled_sweep(args.figure)


def revising_streams(seed: int, system: str):
    """The 27-talk revising log of ``seed`` imported as ``system``'s streams."""
    from simulplay.traces.importers import import_simulstream
    from simulplay.traces.model import streams_from_frame

    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "retranslation.jsonl"
        revising_log(log, talk_seconds(), rate=0.2, seed=seed)
        return streams_from_frame(import_simulstream(log, system=system).frame, revising=True)


def commit_run(folder: Path) -> Path:
    """A run folder of A and F (revising) with a formula manifest under punct and stable:k=2+punct."""
    import json

    import numpy as np

    from simulplay.traces import write_trace
    from simulplay.traces.model import frame_from_streams
    from tests.support.sweep_runs import write_manifest

    streams = revising_streams(29, "A") + revising_streams(31, "F")
    folder.mkdir(parents=True, exist_ok=True)
    write_trace(frame_from_streams(streams), folder / "trace.parquet", {"table": "trace"})
    rules = ("punct", "stable:k=2+punct")
    write_manifest(folder / "manifest.parquet", streams, rules, np.random.default_rng(5))
    exp = {"name": "commit-bench", "traces": [str(folder / "trace.parquet")], "a": "A", "f": "F",
           "rules": list(rules), "reference": rules[0], "backend": "espeak", "out": str(folder),
           "store": str(folder / "store"), "realizations": 1, "order": "counterbalanced", "max_chars": None,
           "draws": 2000, "seed": 1032026, "quantile_method": "order:floor((n+1)a)", "confidence": 0.95,
           "silent_parts": "skip"}
    (folder / "run.json").write_text(json.dumps({"experiment": exp}, indent=2), encoding="utf-8")
    return folder


def modelled_sweep(figure: Path | None = None) -> None:
    """The whole ``simulplay sweep`` command on :func:`commit_run`, twice (see the docstring)."""
    import os
    import resource
    import subprocess

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        run = commit_run(Path(tmp) / "run")
        print(f"commit run folder (two 27-talk revising logs, formula manifest) built in "
              f"{time.perf_counter() - t0:.1f} s")
        families = [x for c in SWEEP_COMMIT for x in ("--commit", c)]
        for label, args in (("40 points (20 policies × 2 rules)", ["--rule", SWEEP_RULE, *families]),
                            ("40 points (40 policies × 1 rule)", ["--rule", "punct", "--commit",
                                                                  "hold:t=0.05..2:0.05"]),
                            ("40 closed-loop points (20 policies × 2 rules)", ["--rule", SWEEP_LOOP, *families])):
            load = os.getloadavg()[0]
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            proc = subprocess.run([sys.executable, "-m", "simulplay", "sweep", str(run), *args, "--duration-terms",
                                   "text", "--out", str(Path(tmp) / "sweep"), "--quiet"], capture_output=True,
                                  text=True, cwd=ROOT)
            wall = time.perf_counter() - t0
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if proc.returncode:
                raise SystemExit(proc.stderr)
            cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
            print(f"modelled commit sweep, {label}, whole command: {wall:.1f} s wall, {cpu:.1f} s CPU, load "
                  f"average {load:.1f} (goal ≤ 30 s): {'met' if wall <= 30 else 'NOT met'}")
            if SWEEP_RULE in args:
                trade_off(Path(tmp) / "sweep" / "sweep.csv", figure)


def trade_off(path: Path, figure: Path | None = None) -> None:
    """The trade-off table of docs/retranslation.md: per policy under ``punct`` (cap 2), the
    spoken-then-retracted words per minute and the modelled mean end offset L of A and F;
    with ``figure``, the same as a PNG (one line per family of policies, A filled, F hollow)."""
    import pandas as pd

    t = pd.read_csv(path, comment="#")
    t = t[t["cap"] == 2]
    if figure is not None:
        trade_off_figure(t, figure)
    print("| policy | retracted words per minute, A | mean L of A (s) | retracted words per minute, F "
          "| mean L of F (s) | WER % A | modelled η (s) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in t.itertuples():
        print(f"| `{r.commit}` | {r.retracted_per_min_a:.2f} | {r.modelled_L_a_s:.2f} | {r.retracted_per_min_f:.2f} "
              f"| {r.modelled_L_f_s:.2f} | {r.wer_pct_a:.1f} | {r.modelled_eta_s:+.2f} |")


def sweep_command(streams) -> None:
    """The 40-point sweep of ``hold`` as one ``simulplay spoken`` process."""
    import resource
    import subprocess

    from simulplay.traces import write_trace
    from simulplay.traces.model import frame_from_streams

    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "trace.parquet"
        write_trace(frame_from_streams(streams), trace, {"table": "trace"})
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "simulplay", "spoken", str(trace), "--commit", "hold:t=0.05..2:0.05",
                        "--out", str(Path(tmp) / "spoken.csv")], check=True, capture_output=True, cwd=ROOT)
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    print(f"40-point sweep (spoken --commit hold:t=0.05..2:0.05), whole command: {wall:.1f} s wall, {cpu:.1f} s CPU "
          f"(goal ≤ 30 s): {'met' if wall <= 30 else 'NOT met'}")


def trade_off_figure(t, path: Path) -> None:
    """Mean L against retracted words per minute, one line per family, labelled by its parameter."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.6), dpi=110)
    names = t["commit"].str.extract(r"^(\w+)")[0]
    for (name, rows), color in zip(t.groupby(names, sort=False), ("C0", "C1", "C2", "C3")):
        label = "final (oracle)" if name == "final" else name
        ax.plot(rows["retracted_per_min_a"], rows["modelled_L_a_s"], "o-", color=color, label=f"{label}, A")
        ax.plot(rows["retracted_per_min_f"], rows["modelled_L_f_s"], "o--", color=color, mfc="none", alpha=0.7,
                label=f"{label}, F")
        for r in rows.itertuples():
            value = r.commit.partition(":")[2].split("=")[-1].split(" ")[0]
            if value and name in ("stable", "mask"):
                ax.annotate(value, (r.retracted_per_min_a, r.modelled_L_a_s), textcoords="offset points",
                            xytext=(4, 4), fontsize=7, color=color)
    ax.set_xlabel("spoken-then-retracted words per minute of source (exact)")
    ax.set_ylabel("mean end offset L (s after the source ends; modelled)")
    ax.set_title("Commit policies under punct: delay against retracted speech (two translators, 27 talks, 4.7 h; "
                 "labels: k)", loc="left", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    print(f"figure written to {path}")


if __name__ == "__main__":
    main()
