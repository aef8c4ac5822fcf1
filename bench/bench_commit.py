"""Applying a commit policy to a 27-talk, 4.7-hour re-translation log (goal ≤ 0.2 s per policy).

The log is generated (tests/support/retranslation_logs.py: one-second packets of German
SentencePiece pieces, a fifth of them revising: wrong tails, a retracted final ".", repetition
loops, everything retracted on a failed window match), imported with ``--retractions keep``.
Each policy runs over every stream; time is the median of ``--repeat`` runs in CPU seconds of
this process (``time.process_time``: on a shared machine wall time counts the neighbours). The baseline,
measured in the same run, is grouping the committed streams with ``punct`` (what follows a
commit policy in every command). Then a 40-point commit sweep as a whole command,
``simulplay spoken TRACE --commit hold:t=0.05..2:0.05`` (goal ≤ 30 s): its wall time and the
child's CPU time. Run:
    .venv/bin/python bench/bench_commit.py [--repeat 3]
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
    args = parser.parse_args()
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


if __name__ == "__main__":
    main()
