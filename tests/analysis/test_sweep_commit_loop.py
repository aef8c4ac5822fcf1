"""Closed-loop rules after commit policies in the modelled sweep: the policy ``RULE`` runs in
its engine on what the commit policy committed (worked by hand on a fixed linear model), and
a closed-loop rule after ``eager`` is the plain rule's sweep, row for row."""

import numpy as np
import pytest

from simulplay.analysis.bootstrap import Bootstrap
from simulplay.analysis.sweep import run_sweep
from simulplay.durationmodel.fit import DurationFit
from simulplay.durationmodel.modelled import PanelModel
from simulplay.grouping.grid import crossed_grids, parse_commit_grids, parse_grids
from simulplay.sim.servicefit import ServiceFit
from simulplay.traces.model import Stream
from simulplay.workflows.sweep import read_run
from tests.support.sweep_runs import synthetic_run, write_manifest

# A revises ("gut." → "gut, weil", "es regnet" → "es schneit"); F appends
A = Stream("t1", "A", 12.0, np.arange(1.0, 7.0),
           ("Das ist", "gut.", ", weil", "es regnet", "schneit", "."),
           np.array([False, False, True, False, False, True]), np.array([0, 0, 1, 0, 7, 0]))
F = Stream("t1", "F", 12.0, np.array([1.5, 4.5]), ("Das ist gut", "und"), np.zeros(2, bool))
# audio = 0.1 s + 0.2 s per character of the request; service 0.2 s; no sample rate; the panel
# of write_manifest's rows
PANEL = (("backend", "synthetic"), ("realization", "0"))
MODEL = PanelModel(PANEL, DurationFit((), ("intercept", "chars"), (0.1, 0.2), ("intercept", "chars"), 1, 0),
                   ServiceFit((), (0.2, 0.0, 0.0), (), 1, 0.0), 0)
POINT = "stable:k=2+backlog:below=1,max_chars=300,min_words=3"


def test_a_closed_loop_rule_runs_on_what_the_policy_commits_by_hand(tmp_path, monkeypatch):
    monkeypatch.setattr("simulplay.analysis.sweep.fit_models", lambda *a, **k: [MODEL])
    manifest = write_manifest(tmp_path / "m.parquet", [A, F], ("immediate",), np.random.default_rng(0))
    grids = crossed_grids(parse_commit_grids(["stable:k=2"]), parse_grids(["backlog:below=1"]))
    res = run_sweep([A, F], manifest, grids, a="A", f="F", reference="immediate", boot=Bootstrap(draws=20),
                    listener=True)
    rows = res.modelled.manifest
    rows = rows[rows["condition"] == POINT]
    got = [(r.system, r.seq, r.dispatch_s, r.trigger, round(r.audio_s, 9)) for r in rows.itertuples()]
    # stable:k=2 commits A's "Das" at 2, "ist" 3, "gut," 4, "weil es" 5, "schneit." 6. backlog holds
    # three words: "Das ist gut," (12 chars) goes at 4 (queue empty), audio 0.1 + 2.4 = 2.5 s, ready
    # 4.2, plays 4.2–6.7. At 5 "weil es" (two words) waits; at 6 "schneit." makes three words with
    # 0.7 s queued ≤ 1: "weil es schneit." (16 chars, 3.3 s). F's "Das ist" and "gut und" are both
    # committed at its end (4.5): "Das ist gut und" (15 chars, 3.1 s) at once.
    assert got == [("A", 0, 4.0, "backlog", 2.5), ("A", 1, 6.0, "backlog", 3.3), ("F", 0, 4.5, "backlog", 3.1)]
    row = res.table.iloc[0]
    assert row["rule"] == POINT and (row["n_requests_a"], row["n_requests_f"]) == (2, 1)
    # L of A: the last audio ends at 4.2 + 2.5 + 3.3 = 10.0 (the second is ready at 6.2, before 6.7),
    # 2 s before the source ends at 12
    assert row["modelled_L_a_s"] == pytest.approx(-2.0)
    # what the listener got is the policy's: stable:k=2 speaks nothing it takes back
    assert row["commit"] == "stable:k=2" and row["spoken_then_retracted_a"] == 0 and row["wer_pct_a"] == 0.0


def test_a_closed_loop_rule_after_eager_is_the_plain_rules_sweep(tmp_path):
    run = read_run(synthetic_run(tmp_path / "run", n_talks=2))
    kw = dict(a="A", f="F", reference="immediate", boot=run.boot)
    rules = ["backlog:below=0.5,1.5", "pacer:min_audio_buffer=2"]
    plain = run_sweep(run.streams, run.manifest, parse_grids(rules), **kw)
    crossed = run_sweep(run.streams, run.manifest,
                        crossed_grids(parse_commit_grids(["eager", "stable:k=2"]), parse_grids(rules)), **kw)
    eager = crossed.table[crossed.table["family"].str.startswith("eager+")].reset_index(drop=True)
    assert eager["rule"].tolist() == plain.table["rule"].tolist() == [
        "backlog:below=0.5,max_chars=300,min_words=3", "backlog:below=1.5,max_chars=300,min_words=3",
        "pacer:min_audio_buffer=2,max_text_length=300"]
    modelled = [c for c in plain.table.columns if c.startswith(("modelled_", "n_requests_"))]
    assert eager[modelled].equals(plain.table[modelled])
    # the requests themselves, row for row, and the policy's own points are there as well
    def requests(res):
        m = res.modelled.manifest
        return m[m["condition"].isin(plain.table["rule"])].reset_index(drop=True)

    assert requests(crossed).equals(requests(plain))
    assert crossed.table["rule"].str.startswith("stable:k=2+").sum() == 3
