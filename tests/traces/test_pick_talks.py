"""``--talks ID…`` and ``--talks-from FILE`` pick talks the same way on the importers,
``group``, ``synth``, ``replay`` and ``live`` (and the experiment key ``talks``); an
unknown id is one line naming it and a few known ones (exit code 2)."""

import pandas as pd
import pytest

from simulplay.core.errors import InputError
from simulplay.traces.select import talk_ids
from tests.support.simulstream_logs import seamless_log

TALKS = ["ted_1096", "ted_1103", "ted_1110"]  # seamless_log names talk k ted_<1096 + 7k>


def test_ids_from_flags_and_a_file(tmp_path):
    f = tmp_path / "talks.txt"
    f.write_text("# the talks to keep\nted_1110\n\nted_1096, ted_7  # two on a line\n", encoding="utf-8")
    assert talk_ids(["ted_1,ted_2", "ted_3"]) == ("ted_1", "ted_2", "ted_3")
    assert talk_ids(["ted_1096"], f) == ("ted_1096", "ted_1110", "ted_7")  # each once, in order
    assert talk_ids() == ()
    (tmp_path / "empty.txt").write_text("# nothing\n", encoding="utf-8")
    with pytest.raises(InputError, match="names no talk"):
        talk_ids([], tmp_path / "empty.txt")


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    d = tmp_path_factory.mktemp("pick")
    seamless_log(d / "A.jsonl", [12.0, 10.0, 8.0])
    return d


def test_import_and_group_keep_only_the_picked_talks(cli, logs, tmp_path):
    proc = cli("import-simulstream", logs / "A.jsonl", "--system", "A", "--talks", "ted_1103",
               "--out", tmp_path / "A.parquet", check=True)
    assert set(pd.read_parquet(tmp_path / "A.parquet")["talk_id"]) == {"ted_1103"}
    assert "1 stream(s) imported" in proc.stdout
    cli("import-simulstream", logs / "A.jsonl", "--system", "A", "--out", tmp_path / "all.parquet", check=True)
    f = tmp_path / "talks.txt"
    f.write_text("ted_1110\nted_1096\n", encoding="utf-8")
    cli("group", tmp_path / "all.parquet", "--rule", "immediate", "--talks-from", f, "--out", tmp_path / "r.parquet",
        check=True)
    assert set(pd.read_parquet(tmp_path / "r.parquet")["talk_id"]) == {"ted_1096", "ted_1110"}


def test_an_unknown_talk_is_one_line_naming_known_ones(cli, logs, tmp_path):
    cli("import-simulstream", logs / "A.jsonl", "--system", "A", "--out", tmp_path / "all.parquet", check=True)
    for args in (("group", tmp_path / "all.parquet", "--rule", "immediate", "--out", tmp_path / "r.parquet"),
                 ("import-simulstream", logs / "A.jsonl", "--system", "A", "--out", tmp_path / "x.parquet")):
        proc = cli(*args, "--talks", "ted_1096,ted_99")
        assert proc.returncode == 2
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "--talks ted_99" in lines[0] and "not in the input" in lines[0]
        assert all(t in lines[0] for t in TALKS) and "ted_1096,ted_99" not in lines[0]
        assert not (tmp_path / "r.parquet").exists() and not (tmp_path / "x.parquet").exists()


def test_synth_and_replay_pick_talks(cli, logs, tmp_path):
    cli("import-simulstream", logs / "A.jsonl", "--system", "A", "--out", tmp_path / "A.jsonl", check=True)
    cli("synth", tmp_path / "A.jsonl", "--rule", "immediate", "--backend", "fake-test", "--store", tmp_path / "s",
        "--out", tmp_path / "m.parquet", "--talks", "ted_1096", "--talks", "ted_1103", "--quiet", check=True,
        imports=["tests.support.fakes"])
    assert set(pd.read_parquet(tmp_path / "m.parquet")["talk_id"]) == {"ted_1096", "ted_1103"}
    cli("replay", tmp_path / "m.parquet", "--talks", "ted_1103", "--out", tmp_path / "s.csv", check=True)
    assert pd.read_csv(tmp_path / "s.csv")["talk_id"].tolist() == ["ted_1103"]
    proc = cli("replay", tmp_path / "m.parquet", "--talks", "ted_1110", "--out", tmp_path / "s2.csv")
    assert proc.returncode == 2 and "ted_1110" in proc.stderr and "ted_1096, ted_1103" in proc.stderr


def test_report_of_some_talks_recomputes_eta_over_them(cli, tmp_path):
    """η of three picked talks is the mean of their per-talk η in the whole run's per-talk
    table, with their direction counts; the sensitivity tables of the whole run are left out."""
    from tests.support.report_runs import make_run

    run = make_run(tmp_path / "run", 12)
    picked = ["talk00", "talk03", "talk07"]
    cli("report", run, "--talks", ",".join(picked), "--out", tmp_path / "rep", check=True)
    eta = pd.read_csv(tmp_path / "rep" / "tables" / "table02_eta.csv").set_index("condition")
    whole = pd.read_csv(run / "eta_per_talk.csv")
    for cond, g in whole[whole["talk_id"].isin(picked)].groupby("condition"):
        row = eta.loc[cond]
        assert row["n_talks"] == 3 and row["eta_s"] == pytest.approx(g["eta_s"].mean(), abs=1e-9)
        assert (row["n_negative"], row["n_positive"]) == ((g["eta_s"] < -1e-6).sum(), (g["eta_s"] > 1e-6).sum())
    md = (tmp_path / "rep" / "report.md").read_text(encoding="utf-8")
    assert "Talks picked with --talks: talk00, talk03, talk07 (3 of 12)" in md and "η of service-zero" in md
    proc = cli("report", run, "--talks", "talk99", "--out", tmp_path / "rep2")
    assert proc.returncode == 2 and "talk99" in proc.stderr and "talk00" in proc.stderr
