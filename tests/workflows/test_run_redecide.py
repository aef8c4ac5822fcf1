"""A run's sensitivity replays decide its closed-loop outputs again, and say so."""

from __future__ import annotations

import tests.support.fakes  # noqa: F401 - registers fake-test
from simulplay.core.tables import read_table, stored_signatures
from simulplay.grouping.policy import LOOP_DECIDED_AGAIN, decided_again
from simulplay.workflows.experiment import load_experiment
from simulplay.workflows.pipeline import run_experiment
from tests.support.factories import experiment_toml, small_trace

BACKLOG = "backlog:below=1,max_chars=300,min_words=3"


def test_the_variants_of_a_run_decide_the_closed_loop_outputs_again(tmp_path):
    small_trace(tmp_path / "trace.jsonl", n_streams=4, n_updates=6)
    (tmp_path / "exp.toml").write_text(experiment_toml(
        rules=["immediate", "timer:w=3", "backlog"],
        analysis={"draws": 50, "seed": 0, "variants": ["service=zero", "release=chunk"]}))
    res = run_experiment(load_experiment(tmp_path / "exp.toml"))
    for v in ("service=zero", "release=chunk"):
        rep, eta = res.variants[v]
        loops = {(r["condition"], s.get("loop", "")) for r, s in zip(rep.summary.to_dict("records"), rep.signatures)}
        assert {c for c, loop in loops if loop.startswith(LOOP_DECIDED_AGAIN)} == {BACKLOG}
        assert {c for c, loop in loops if not loop} == {"immediate", "timer:w=3"}
        assert any(n.startswith(f"closed loop: {BACKLOG} decided again under this clock") for n in eta.notes)
    summary, meta = read_table(tmp_path / "run" / "summary.service-zero.parquet")
    loops = [s.get("loop") for s in stored_signatures(meta, len(summary))]
    closed = int((summary["condition"] == BACKLOG).sum())
    assert closed and sum(decided_again(x) is not None for x in loops) == closed
    assert (tmp_path / "run" / "explore" / "index.html").is_file()  # the explorer decided them again too
