"""Seeded mutation fuzzing of validate, group, replay and both importers.

Every case is accepted (exit 0, output readable by pandas) or refused (exit 2, a short
error on stderr, no output file); never a traceback, a NumPy warning or another exit code.
The cases run in this process through ``simulplay.cli.main`` (a subprocess costs about half
a second each); a sample runs as real subprocesses too and must give the same exit codes,
errors and outputs. A failure prints its seed and case number: ``python bench/fuzz.py
--seed S --case N`` replays it. ``bench/fuzz.py`` runs 10,000 cases (its result is in the
README).
"""

from __future__ import annotations

import shutil

import pandas as pd
import pytest

from tests.support.fuzz_cases import (
    TARGETS,
    Case,
    build_corpus,
    case_args,
    judge,
    make_case,
    run_case,
    run_in_process,
    run_subprocess,
)

SEED = 20261201
CASES = 2000


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return build_corpus(tmp_path_factory.mktemp("corpus"))


def test_every_target_accepts_its_unmutated_input(corpus, tmp_path):
    """The fuzz starts from valid files: unmutated, each command succeeds."""
    for t in TARGETS:
        args, out = case_args(Case(SEED, -1, t, [], corpus[t.source]), tmp_path / t.name)
        outcome = run_in_process(args)
        assert outcome.code == 0, (t.name, outcome.stderr, outcome.escaped)
        assert judge(outcome, out, tmp_path / t.name, {t.source}) is None


@pytest.mark.slow


def test_mutators_reach_every_target_and_both_outcomes(corpus, tmp_path):
    """The first 150 cases cover every command, and both accepted and refused outcomes
    (a harness that refuses everything, or mutates nothing, would pass vacuously)."""
    codes: dict[str, set[int | None]] = {}
    for i in range(150):
        case = make_case(SEED, i, corpus)
        args, _ = case_args(case, tmp_path / str(i))
        codes.setdefault(case.target.name, set()).add(run_in_process(args).code)
        shutil.rmtree(tmp_path / str(i))
    assert set(codes) == {t.name for t in TARGETS}
    assert {0, 2} <= set().union(*codes.values())


@pytest.mark.slow
def test_fuzz_2000_cases_accepted_or_refused_never_a_traceback(corpus, tmp_path):
    failures = []
    for i in range(CASES):
        case = make_case(SEED, i, corpus)
        finding = run_case(case, tmp_path / str(i))
        if finding:
            failures.append(f"{case.label()}\n    → {finding[-600:]}")
        shutil.rmtree(tmp_path / str(i), ignore_errors=True)
    assert not failures, f"{len(failures)} of {CASES} cases failed:\n" + "\n".join(failures[:10])


@pytest.mark.slow
def test_in_process_harness_agrees_with_real_subprocesses(corpus, tmp_path):
    """20 cases both ways: the same exit code, the same error lines (paths aside) and the
    same output table."""
    kinds = set()
    for i in range(20):
        case = make_case(SEED, i, corpus)
        args_a, out_a = case_args(case, tmp_path / f"a{i}")
        args_b, out_b = case_args(case, tmp_path / f"b{i}")
        a, b = run_in_process(args_a), run_subprocess(args_b)
        assert judge(a, out_a, tmp_path / f"a{i}", {case.target.source}) is None, case.label()
        assert a.code == b.code, (case.label(), a.stderr, b.stderr)
        assert a.stderr.replace(f"a{i}/", "X/") == b.stderr.replace(f"b{i}/", "X/"), case.label()
        assert judge(b, out_b, tmp_path / f"b{i}", {case.target.source}) is None, case.label()
        if a.code == 0:
            read = pd.read_parquet if out_a.suffix == ".parquet" else pd.read_csv
            pd.testing.assert_frame_equal(read(out_a), read(out_b))
        kinds.add(a.code)
    assert kinds == {0, 2}
