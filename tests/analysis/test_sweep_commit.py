"""Commit policies in the modelled sweep: each policy's committed text grouped on its own
block of the update table, what the listener got (hand-worked on the worked example of
docs/retranslation.md), and a commit sweep of a revising run through ``sweep`` itself."""

import numpy as np
import pandas as pd
import pytest

from simulplay.analysis.spoken import spoken_table
from simulplay.analysis.sweep_commit import commit_tables, listener_columns
from simulplay.core.errors import InputError
from simulplay.core.tables import read_table
from simulplay.grouping import parse_commit, parse_rule
from simulplay.grouping.grid import crossed_grids, parse_commit_grids, parse_family, parse_grids
from simulplay.traces.model import Stream
from tests.support.cli import run_cli
from tests.support.sweep_runs import revising, sweep_streams, synthetic_run

# the worked example: A revises ("gut." → "gut, weil", "es regnet" → "es schneit"); F appends
A = Stream("t1", "A", 12.0, np.arange(1.0, 7.0),
           ("Das ist", "gut.", ", weil", "es regnet", "schneit", "."),
           np.array([False, False, True, False, False, True]), np.array([0, 0, 1, 0, 7, 0]))
F = Stream("t1", "F", 12.0, np.array([1.5, 4.5]), ("Das ist gut", "und"), np.zeros(2, bool))
RULES = ("immediate", "stable:k=2+immediate")


def test_each_policy_groups_what_it_commits_on_its_own_block():
    tables = commit_tables([A, F], [parse_rule(r) for r in RULES])
    assert list(tables.blocks) == ["eager", "stable:k=2"] and tables.table.n == 6 + 2 + 5 + 2
    groups = tables.group([parse_rule(r) for r in RULES])
    at = {(r, s): groups.dispatch_s[(groups.rule == r) & (groups.stream == s)].tolist()
          for r in range(2) for s in range(4)}
    # eager speaks each update as it comes; stable:k=2 commits "Das" at 2, "ist" 3, "gut," 4,
    # "weil es" 5, "schneit." 6; F's "Das ist" when "und" confirms it (4.5), the rest at its end
    assert at[0, 0] == [1, 2, 3, 4, 5, 6] and at[0, 1] == [1.5, 4.5]
    assert at[1, 2] == [2, 3, 4, 5, 6] and at[1, 3] == [4.5, 4.5]
    assert at[0, 2] == at[0, 3] == at[1, 0] == at[1, 1] == []  # a rule stays on its policy's block


def test_what_the_listener_got_per_point_by_hand():
    tables = commit_tables([A, F], [parse_rule(r) for r in RULES])
    table = listener_columns(pd.DataFrame({"family": "x", "rule": list(RULES), "w": 1}), tables, [A, F],
                             a="A", f="F")
    assert list(table.columns[:3]) == ["family", "rule", "commit"] and table["commit"].tolist() == ["eager",
                                                                                                     "stable:k=2"]
    # eager speaks "gut." and "regnet", both taken back: 2 words in 12 s of source = 10 a minute;
    # spoken "das ist gut weil es regnet schneit" against the final 6 words: one inserted word
    # (WER 1/6) and "regnet " 7 inserted characters of the final 27 (CER 7/27)
    assert table["spoken_then_retracted_a"].tolist() == [2, 0]
    assert table["retracted_per_min_a"].tolist() == pytest.approx([10.0, 0.0])
    assert table["wer_pct_a"].tolist() == pytest.approx([100 / 6, 0.0])
    assert table["cer_pct_a"].tolist() == pytest.approx([700 / 27, 0.0])
    assert table["spoken_then_retracted_f"].tolist() == [0, 0] and table["wer_pct_f"].tolist() == [0.0, 0.0]


def test_families_cross_policy_first_and_a_shared_key_is_renamed():
    grids = crossed_grids(parse_commit_grids(["stable:k=1..2"]), parse_grids(["timer:w=1,2"]))
    assert [g.text for g in grids] == ["stable:k=1..2+timer:w=1,2"] and grids[0].axis == "k"
    assert [r.canonical() for r in grids[0].rules()] == ["stable:k=1+timer:w=1", "stable:k=1+timer:w=2",
                                                         "stable:k=2+timer:w=1", "stable:k=2+timer:w=2"]
    both = crossed_grids(parse_commit_grids(["stable:unit=word,char"]), parse_grids(["punct:unit=char"]))
    assert both[0].points[1][1] == {"commit_unit": "char", "unit": "char"}
    # a sweep table's family text reads back as the same grid (the report and the explorer read it)
    for g in (*grids, *both):
        assert parse_family(g.text, source="t") == g
    assert parse_family("timer:w=1,2", source="t") == parse_grids(["timer:w=1,2"])[0]
    with pytest.raises(InputError, match="more than 10,000"):
        crossed_grids(parse_commit_grids(["hold:t=0.01..20:0.01"]), parse_grids(["timer:w=1..6"]))


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return synthetic_run(tmp_path_factory.mktemp("rev") / "run", rules=("immediate", "stable:k=2+immediate"),
                         n_talks=3, revise=True)


@pytest.fixture
def no_figures(monkeypatch):
    """The sweep's figures left empty (matplotlib is most of a small sweep's time)."""
    monkeypatch.setattr("simulplay.report.sweep_figures.sweep_figure", lambda *a, **k: (b"", b"", []))


def test_a_commit_sweep_of_a_revising_run(run, tmp_path, no_figures):
    proc = run_cli("sweep", run, "--rule", "immediate", "--commit", "stable:k=1..2", "--commit", "final",
                   "--duration-terms", "text", "--out", tmp_path / "s")
    assert proc.returncode == 0, proc.stderr
    table = read_table(tmp_path / "s" / "sweep.parquet")[0]
    assert table["rule"].tolist() == ["stable:k=1+immediate", "stable:k=2+immediate", "final+immediate"]
    assert table["measured"].tolist() == [False, True, False]
    assert table["commit"].tolist()[-1] == "final (oracle)"
    assert ["|oracle:non-causal|" in sig for sig in table["signature"]] == [False, False, True]
    # the exact columns are the listener's table of the same streams
    streams = revising(sweep_streams(3))
    spoken, _ = spoken_table(streams, [parse_commit(p) for p in ("stable:k=1", "stable:k=2", "final")])
    a = spoken[spoken["system"] == "A"].groupby("commit", sort=False)
    assert table["spoken_then_retracted_a"].tolist() == a["spoken_then_retracted"].sum().tolist()
    assert table["wer_pct_a"].tolist() == pytest.approx(a["wer_pct"].mean().tolist())
    assert table["spoken_then_retracted_a"].iloc[-1] == 0 < table["spoken_then_retracted_a"].iloc[0]
    # the measured commit condition is modelled within a few hundredths of a second (linear run)
    check = read_table(tmp_path / "s" / "sweep_check.parquet")[0]
    row = check[check["condition"] == "stable:k=2+immediate"].iloc[0]
    assert abs(row["modelled_L_a_s"] - row["measured_L_a_s"]) < 0.05


def test_a_plain_rule_on_revising_traces_needs_no_policy_but_an_unknown_policy_is_one_line(run, tmp_path):
    proc = run_cli("sweep", run, "--rule", "immediate", "--commit", "stabel:k=1..2", "--out", tmp_path / "s")
    assert proc.returncode == 2 and "unknown commit policy 'stabel'" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_the_best_commit_point_is_confirmed_by_synthesis(tmp_path, no_figures):
    import tests.support.fakes  # noqa: F401  (registers fake-test)

    run = synthetic_run(tmp_path / "run", rules=("immediate", "stable:k=2+immediate"), n_talks=2, revise=True,
                        backend="fake-test", label="fake-test")
    proc = run_cli("sweep", run, "--rule", "immediate", "--commit", "mask:k=1..2", "--duration-terms", "text",
                   "--confirm", "1", "--quiet", "--out", tmp_path / "s", imports=["tests.support.fakes"])
    assert proc.returncode == 0, proc.stderr
    table = read_table(tmp_path / "s" / "sweep.parquet")[0]
    confirmed = read_table(tmp_path / "s" / "confirmed.parquet")[0]
    assert table["confirmed"].sum() == 1
    point = table.loc[table["confirmed"], "rule"].iloc[0]
    assert set(confirmed["condition"]) == {"immediate", point}
    # the confirmed requests are the policy's commits grouped: as many as the model's
    n = confirmed[(confirmed["condition"] == point) & (confirmed["system"] == "A")].shape[0]
    assert n == table.loc[table["confirmed"], "n_requests_a"].iloc[0]


def test_a_closed_loop_family_crossed_with_commit_policies(run, tmp_path, no_figures):
    proc = run_cli("sweep", run, "--commit", "stable:k=1..2", "--rule", "backlog:below=1..2", "--rule", "immediate",
                   "--duration-terms", "text", "--out", tmp_path / "s")
    assert proc.returncode == 0, proc.stderr
    table = read_table(tmp_path / "s" / "sweep.parquet")[0]
    loop = ",max_chars=300,min_words=3"
    assert table["rule"].tolist() == [f"stable:k={k}+backlog:below={b}{loop}" for k in (1, 2) for b in (1, 2)] + [
        "stable:k=1+immediate", "stable:k=2+immediate"]
    assert table["modelled_eta_s"].notna().all() and (table["n_requests_a"] > 0).all()
    # what the listener got depends on the policy, not on the grouping: the closed-loop rows
    # carry the columns of the policy's open-loop row
    listener = [f"{c}_{t}" for c in ("spoken_then_retracted", "retracted_per_min", "wer_pct", "cer_pct")
                for t in "af"]
    assert table[listener].notna().all().all()
    by_policy = table.set_index("rule")[["commit", *listener]]
    for k in (1, 2):
        for b in (1, 2):
            point = by_policy.loc[f"stable:k={k}+backlog:below={b}{loop}"]
            assert point.equals(by_policy.loc[f"stable:k={k}+immediate"])
    assert by_policy.loc["stable:k=1+immediate", "spoken_then_retracted_a"] > 0


def test_the_api_takes_commit_families(run, tmp_path, no_figures):
    import simulplay

    res = simulplay.sweep(run, "immediate", commit=["mask:k=0..1"], duration_terms="text", out=tmp_path / "s")
    assert res.table["rule"].tolist() == ["mask:k=0+immediate", "mask:k=1+immediate"]
    assert res.table["commit"].tolist() == ["mask:k=0", "mask:k=1"]
