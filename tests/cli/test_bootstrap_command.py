"""``simulplay bootstrap TABLE``: intervals for a per-talk table, wide or long, with eta's
conventions, signature, small-panel note and one-line errors."""

import pandas as pd
import pytest

from tests.support.checks import assert_one_line_error
from tests.support.factories import experiment_toml

# Worked by hand (tests/analysis/test_bootstrap_paper.py): talks a, b, c worth 1, 10, 100;
# random.Random(7) fills 5 draws row by row as [1,0,1], [2,0,0], [2,0,1], [2,0,2], [0,0,0];
# their means sorted: 1, 7, 34, 37, 67.
HAND = {"talk_id": ["a", "b", "c"], "x": [1.0, 10.0, 100.0]}


def write(tmp_path, columns: dict, name: str = "t.csv"):
    path = tmp_path / name
    pd.DataFrame(columns).to_csv(path, index=False)
    return path


@pytest.mark.slow


def test_three_talks_five_draws_by_hand(cli, tmp_path):
    table = write(tmp_path, HAND)
    cli("bootstrap", table, "--value", "x", "--draws", "5", "--seed", "7", "--bootstrap", "paper",
        "--confidence", "0.6", "--out", tmp_path / "o.csv", check=True)
    row = pd.read_csv(tmp_path / "o.csv").iloc[0]
    # 0-based positions int(5 · 0.2) = 1 and int(5 · 0.8) = 4 of 1, 7, 34, 37, 67
    assert (row["mean"], row["ci_low"], row["ci_high"]) == (37.0, 7.0, 67.0)
    assert (row["n_talks"], row["n_negative"], row["n_positive"]) == (3, 0, 3)
    cli("bootstrap", table, "--value", "x", "--draws", "5", "--seed", "7", "--bootstrap", "paper",
        "--bootstrap-rng", "python", "--quantile-method", "order:int(nq)", "--confidence", "0.6",
        "--out", tmp_path / "same.csv", check=True)  # flags that agree with the preset are fine
    assert pd.read_csv(tmp_path / "same.csv")[["ci_low", "ci_high"]].iloc[0].tolist() == [7.0, 67.0]
    cli("bootstrap", table, "--value", "x", "--draws", "5", "--seed", "7", "--bootstrap-rng", "python",
        "--confidence", "0.6", "--out", tmp_path / "d.csv", check=True)
    row = pd.read_csv(tmp_path / "d.csv").iloc[0]
    assert (row["ci_low"], row["ci_high"]) == (1.0, 67.0)  # the default ranks: k = ⌊6 · 0.2⌋ = 1


def test_a_small_panel_gets_the_note_printed_and_under_markdown(cli, tmp_path):
    table = write(tmp_path, HAND)
    proc = cli("bootstrap", table, "--value", "x", "--draws", "50", "--out", tmp_path / "o.md", check=True)
    assert "note: small panel: 3 talks, fewer than 10" in proc.stdout
    assert "x <0 in 0/3, >0 in 3/3" in proc.stdout and "per-talk 1.000 to 100.000)" in proc.stdout
    md = (tmp_path / "o.md").read_text()
    assert "Note: small panel: 3 talks" in md and "boot_rng:numpy" in md and "talk_order:sorted" in md


@pytest.mark.slow


def test_long_and_wide_tables_agree_and_talk_order_given_follows_the_rows(cli, tmp_path):
    talks, one, two = ["t3", "t1", "t2", "t4"], [3.0, -1.0, 2.0, 5.0], [1.0, 0.5, -2.0, 4.0]
    wide = write(tmp_path, {"talk": talks, "one": one, "two": two}, "wide.csv")
    long = write(tmp_path, {"talk": talks * 2, "cond": ["one"] * 4 + ["two"] * 4, "v": one + two}, "long.csv")
    for order in ("sorted", "given"):
        cli("bootstrap", wide, "--value", "one", "--value", "two", "--pair", "one,two", "--talk", "talk",
            "--talk-order", order, "--draws", "300", "--out", tmp_path / f"w-{order}.csv", check=True)
        cli("bootstrap", long, "--value", "v", "--by", "cond", "--pair", "one,two", "--talk", "talk",
            "--talk-order", order, "--draws", "300", "--out", tmp_path / f"l-{order}.csv", check=True)
        w, lg = (pd.read_csv(tmp_path / f"{k}-{order}.csv") for k in ("w", "l"))
        assert w["condition"].tolist() == lg["condition"].tolist() == ["one", "two", "one − two"]
        cols = ["n_talks", "mean", "ci_low", "ci_high", "n_negative", "n_positive"]
        assert w[cols].equals(lg[cols])
    assert not pd.read_csv(tmp_path / "w-sorted.csv")["ci_low"].equals(pd.read_csv(tmp_path / "w-given.csv")["ci_low"])


@pytest.mark.slow


def test_eta_per_talk_table_gives_etas_intervals(cli, tmp_path):
    """The same settings give eta's intervals from its own per-talk table (long: --by condition)."""
    rows = [{"talk_id": f"t{t}", "system": s, "condition": c, "audio_s": 10.0 + t, "idle_s": 1.0,
             "offset_s": 1.0 + t + (s == "A") * (c != "immediate") * (t * t % 5 - 2) * (1 + (c == "timer:w=4")),
             "source_s": 10.0}
            for t in range(6) for s in ("A", "F") for c in ("immediate", "timer:w=2", "timer:w=4")]
    write(tmp_path, pd.DataFrame(rows).to_dict("list"), "s.csv")
    flags = ["--draws", "400", "--bootstrap", "paper"]
    cli("eta", tmp_path / "s.csv", "--a", "A", "--f", "F", "--reference", "immediate", "--out", tmp_path / "e.csv",
        "--per-talk", tmp_path / "pt.csv", *flags, check=True)
    cli("bootstrap", tmp_path / "pt.csv", "--value", "eta_s", "--by", "condition", "--out", tmp_path / "b.csv",
        *flags, check=True)
    eta, boot = pd.read_csv(tmp_path / "e.csv"), pd.read_csv(tmp_path / "b.csv")
    assert boot["condition"].tolist() == eta["condition"].tolist()
    for col in ("ci_low", "ci_high"):
        assert boot[col].tolist() == pytest.approx(eta[col + "_s"].tolist(), abs=1e-12)
    assert "boot_rng:python" in eta["signature"][0] and "quantile:order:int(nq)" in eta["signature"][0]


@pytest.mark.parametrize("columns,args,fragments", [
    ({"talk_id": ["a", "b"], "x": [1, 2]}, ["--value", "y"], ["missing column y", "per-talk table columns"]),
    ({"talk_id": ["a", "b", "c"], "x": ["1", "2.5s", "3"]}, ["--value", "x"], ["row 2", "field 'x'", "2.5s"]),
    ({"talk_id": ["a", "b", "a"], "x": [1, 2, 3]}, ["--value", "x"],
     ["row 3", "talk 'a' appears again (first at row 1)"]),
    ({"talk_id": ["a", "a", "b"], "c": ["p", "q", "p"], "x": [1, 2, 3]}, ["--value", "x", "--by", "c"],
     ["1 value(s) missing: talk 'b' under 'q'"]),
    ({"talk_id": ["a", "b"], "x": [1, 2]}, ["--value", "x", "--pair", "x,z"],
     ["field '--pair'", "'x,z' is not a pair of two different conditions", "among x"]),
    ({"talk_id": ["a", "b"], "x": [1, 2]}, ["--value", "x", "--bootstrap", "paper", "--quantile-method", "linear"],
     ["--bootstrap: preset 'paper' sets --quantile-method order:int(nq), not linear"]),
    ({"talk_id": ["a", "b"], "x": [1, 2]}, ["--value", "x", "--bootstrap", "paper", "--bootstrap-rng", "numpy"],
     ["--bootstrap: preset 'paper' sets --bootstrap-rng python, not numpy"]),  # numpy is the default, named anyway
    ({"talk_id": ["a", "b"], "x": [1, 2]}, ["--value", "x", "--bootstrap", "koehn"],
     ["--bootstrap: unknown bootstrap preset 'koehn' (known: paper)"]),
    ({"talk_id": ["a", "b"], "x": [1, 2]}, ["--value", "x", "--bootstrap-rng", "mt"],
     ["--bootstrap-rng: unknown value 'mt'", "numpy or python"]),
    ({"talk_id": ["a", "b"], "x": [1, 2]}, ["--value", "x", "--talk-order", "numeric"],
     ["--talk-order: unknown value 'numeric'", "sorted or given"]),
])
def test_bad_input_is_one_line_and_writes_nothing(cli, tmp_path, columns, args, fragments):
    table = write(tmp_path, columns)
    proc = cli("bootstrap", table, *args, "--out", tmp_path / "o.csv")
    assert_one_line_error(proc, *fragments)
    assert not (tmp_path / "o.csv").exists()


EXPERIMENT = experiment_toml(name=None, out=None, backend={}, analysis={})  # the analysis keys follow


@pytest.mark.parametrize("analysis,want", [
    ('bootstrap = "paper"\n', ("python", "order:int(nq)", "sorted")),
    ('bootstrap = "paper"\nbootstrap_rng = "python"\ntalk_order = "given"\n', ("python", "order:int(nq)", "given")),
    ("", ("numpy", "order:floor((n+1)a)", "sorted")),
])
def test_an_experiment_names_the_preset(tmp_path, analysis, want):
    from simulplay.workflows.experiment import load_experiment

    (tmp_path / "trace.jsonl").write_text("")
    (tmp_path / "exp.toml").write_text(EXPERIMENT + analysis)
    boot = load_experiment(tmp_path / "exp.toml").bootstrap
    assert (boot.rng, boot.method, boot.talk_order) == want


@pytest.mark.parametrize("analysis,fragments", [
    ('bootstrap = "paper"\nquantile_method = "order:floor((n+1)a)"\n',
     ["key 'analysis.bootstrap'", "sets analysis.quantile_method order:int(nq), not order:floor((n+1)a)"]),
    ('bootstrap_rng = "mt"\n', ["key 'analysis'", "unknown bootstrap generator 'mt'"]),
])
def test_an_experiment_refuses_a_preset_it_contradicts(tmp_path, analysis, fragments):
    from simulplay.core.errors import InputError
    from simulplay.workflows.experiment import load_experiment

    (tmp_path / "trace.jsonl").write_text("")
    (tmp_path / "exp.toml").write_text(EXPERIMENT + analysis)
    with pytest.raises(InputError) as e:
        load_experiment(tmp_path / "exp.toml")
    assert len(str(e.value).splitlines()) == 1 and all(f in str(e.value) for f in fragments), str(e.value)


def test_the_command_line_the_api_and_an_experiment_build_a_preset_in_one_place(monkeypatch):
    """--bootstrap paper, bootstrap="paper" and bootstrap = "paper" all go through
    Bootstrap.preset, and give the same settings: the paper's generator and ranks."""
    from simulplay.analysis.bootstrap import Bootstrap
    from simulplay.api.checks import bootstrap_settings
    from simulplay.cli.options import bootstrap
    from simulplay.workflows.experiment_analysis import analysis_bootstrap

    calls, real = [], Bootstrap.preset.__func__

    def counted(cls, name, **kw):
        calls.append(name)
        return real(cls, name, **kw)

    monkeypatch.setattr(Bootstrap, "preset", classmethod(counted))
    built = [bootstrap(300, 5, None, 0.9, preset="paper"),
             bootstrap_settings(draws=300, seed=5, quantile_method=None, confidence=0.9, bootstrap_rng=None,
                                bootstrap="paper", talk_order="sorted"),
             analysis_bootstrap({"draws": 300, "seed": 5, "confidence": 0.9, "bootstrap": "paper"}, "exp.toml")]
    assert calls == ["paper"] * 3
    assert built[0] == built[1] == built[2] == Bootstrap(draws=300, seed=5, method="order:int(nq)", confidence=0.9,
                                                         rng="python")
