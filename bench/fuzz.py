"""The large fuzz run: 10,000 seeded mutation cases over validate, group, replay
and both importers (``tests/support/fuzz_cases.py``; the suite runs 2,000 of them).

Prints the number of cases accepted (exit 0, output readable by pandas), refused (exit 2,
a short error, no output) and failed (anything else), the distinct kinds of failure with a
replayable example each, and the time per 1,000 cases. Run:

    .venv/bin/python bench/fuzz.py [--seed 20261201] [--cases 10000]
    .venv/bin/python bench/fuzz.py --seed S --case N     # replay one case, keep its files

Exit code 1 when a case failed.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.fuzz_cases import build_corpus, case_args, judge, make_case, run_in_process  # noqa: E402


def replay_one(seed: int, index: int, work: Path) -> int:
    corpus = build_corpus(work / "corpus")
    case = make_case(seed, index, corpus)
    folder = work / f"case{index}"
    args, out = case_args(case, folder)
    outcome = run_in_process(args)
    finding = judge(outcome, out, folder, {case.target.source})
    print(case.label())
    print("simulplay " + " ".join(args))
    print(f"exit {outcome.code}\n--- stdout\n{outcome.stdout}--- stderr\n{outcome.stderr}{outcome.escaped}")
    print(f"files kept in {folder}")
    print("FAILED: " + finding if finding else "passed")
    return 1 if finding else 0


def run_many(seed: int, cases: int, work: Path) -> int:
    corpus = build_corpus(work / "corpus")
    counts: Counter[str] = Counter()
    kinds: dict[str, str] = {}
    t0 = time.perf_counter()
    for i in range(cases):
        case = make_case(seed, i, corpus)
        folder = work / f"c{i}"
        args, out = case_args(case, folder)
        outcome = run_in_process(args)
        finding = judge(outcome, out, folder, {case.target.source})
        if finding:
            counts["failed"] += 1
            kind = finding.strip().splitlines()[-1][:160]
            kinds.setdefault(kind, case.label())
        else:
            counts["accepted" if outcome.code == 0 else "refused"] += 1
        shutil.rmtree(folder, ignore_errors=True)
        if (i + 1) % 1000 == 0:
            print(f"  {i + 1} cases, {counts['failed']} failed", file=sys.stderr)
    elapsed = time.perf_counter() - t0
    print(f"seed {seed}: {cases} cases: {counts['accepted']} accepted, {counts['refused']} refused, "
          f"{counts['failed']} failed ({len(kinds)} distinct); {1000 * elapsed / cases:.1f} s per 1,000 cases")
    for kind, label in kinds.items():
        print(f"- {kind}\n  e.g. {label}")
    return 1 if counts["failed"] else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--case", type=int, help="replay this one case and keep its files")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="simulplay-fuzz-"))
    if args.case is not None:
        return replay_one(args.seed, args.case, work)
    try:
        return run_many(args.seed, args.cases, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
