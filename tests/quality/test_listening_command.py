"""`simulplay listening-test` and `listening-results` on a manifest of the deterministic fake
backend: the seeded draws are recorded and repeatable, the page holds no condition name, and
bad input is one line, exit code 2, nothing written."""

import json

import pytest

from tests.quality.test_quality_command import write_trace
from tests.support.checks import assert_one_line_error

COLUMNS = "test_id,rater,trial,excerpt,stimulus_a,stimulus_b,condition_a,condition_b,repeat,rating\n"


@pytest.fixture(scope="module")
def fake_run(tmp_path_factory):
    import tests.support.fakes  # noqa: F401 - registers the fake-test backend
    from simulplay.backends import parse_backend
    from simulplay.grouping import parse_rule
    from simulplay.synthesis.run import synthesize_files

    d = tmp_path_factory.mktemp("listen-fake")
    synthesize_files(parse_backend("fake-test"), d / "store", d / "m.parquet", traces=[write_trace(d / "t.jsonl")],
                     rules=[parse_rule("immediate"), parse_rule("timer:w=4")], contention_sample=0)
    return d


def make_test(cli, d, out, *extra, check=True):
    return cli("listening-test", d / "m.parquet", "--store", d / "store", "--compare", "immediate,timer:w=4",
               "--excerpt-s", "60", "--excerpts", "2", "--quiet", "--out", out, *extra, check=check)


@pytest.mark.slow  # three tests made
def test_the_draws_are_seeded_recorded_and_blind(fake_run, cli, tmp_path):
    make_test(cli, fake_run, tmp_path / "a", "--seed", "4")
    make_test(cli, fake_run, tmp_path / "b", "--seed", "4")
    make_test(cli, fake_run, tmp_path / "c", "--seed", "5", "--repeats", "1")
    keys = [json.loads((tmp_path / x / "listening-key.json").read_text()) for x in "abc"]
    assert keys[0] == keys[1] and keys[0]["test_id"] != keys[2]["test_id"]
    assert keys[0]["seed"] == 4 and keys[0]["signature"]["seed"] == 4 and keys[0]["signature"]["compare"] == \
        "immediate,timer:w=4"
    # 2 excerpts, one pair each, 2 repeats with the sides swapped
    trials = keys[0]["trials"]
    assert len(trials) == 4 and sum(t["repeat"] for t in trials) == 2
    for t in trials:
        assert {t["condition_a"], t["condition_b"]} == {"immediate", "timer:w=4"}
    for rep in (t for t in trials if t["repeat"]):
        first = next(t for t in trials if t["excerpt"] == rep["excerpt"] and not t["repeat"])
        assert (rep["a"], rep["b"]) == (first["b"], first["a"])
    for f in (tmp_path / "a").rglob("*"):  # no condition name anywhere the page reads
        if f.is_file() and f.name != "listening-key.json":
            text = f.read_text()
            assert "immediate" not in text and "timer" not in text, f


@pytest.mark.parametrize(("args", "fragments"), [
    (["--compare", "immediate,timer:w=9"], ["--compare 'immediate,timer:w=9'", "timer:w=9", "immediate, timer:w=4"]),
    (["--compare", "immediate,immediate"], ["--compare", "twice"]),
    (["--excerpts", "40"], ["--excerpts 40", "fewer"]),
    (["--excerpt-s", "0"], ["--excerpt-s 0", "0.5 to 600"]),
    (["--reference"], ["backend", "--reference"]),
])
def test_bad_test_input_is_one_line_exit_2(fake_run, cli, tmp_path, args, fragments):
    flags = {"--compare": "immediate,timer:w=4", "--excerpt-s": "60", "--excerpts": "2"}
    rest = [a for a in args if a == "--reference"]
    flags.update(dict(zip(args[::2], args[1::2])) if not rest else {})
    merged = [x for k, v in flags.items() for x in (k, v)]
    if rest:  # a manifest that does not name its backend
        import pyarrow.parquet as pq

        t = pq.read_table(fake_run / "m.parquet")
        meta = json.loads(t.schema.metadata[b"simulplay"])
        meta.pop("backend_spec", None)
        pq.write_table(t.replace_schema_metadata({b"simulplay": json.dumps(meta).encode()}), tmp_path / "m.parquet")
        manifest = tmp_path / "m.parquet"
    else:
        manifest = fake_run / "m.parquet"
    proc = cli("listening-test", manifest, "--store", fake_run / "store", *merged, *rest, "--out", tmp_path / "p",
               "--quiet")
    assert_one_line_error(proc, *fragments)
    assert not (tmp_path / "p").exists()


@pytest.fixture(scope="module")
def keyed(fake_run, tmp_path_factory):
    from tests.support.cli import run_cli

    out = tmp_path_factory.mktemp("keyed") / "page"
    make_test(run_cli, fake_run, out)
    return json.loads((out / "listening-key.json").read_text()), out / "listening-key.json"


def ratings_csv(path, key, rater="r", test_id=None, rating=lambda t: 1):
    rows = [f"{test_id or key['test_id']},{rater},{t['trial']},{t['excerpt']},{t['a']},{t['b']},"
            f"{t['condition_a']},{t['condition_b']},{t['repeat']},{rating(t)}\n" for t in key["trials"]]
    path.write_text(COLUMNS + "".join(rows))
    return path


def test_results_from_hand_written_ratings(keyed, cli, tmp_path):
    import pandas as pd

    key, key_path = keyed

    def towards_timer(t):  # +2 towards timer:w=4 on the first excerpt, 0 on the second
        size = 2 if t["excerpt"] == "e01" else 0
        return size if t["condition_b"] == "timer:w=4" else -size

    csv = ratings_csv(tmp_path / "r.csv", key, rating=towards_timer)
    cli("listening-results", csv, "--key", key_path, "--out", tmp_path / "res.csv", "--draws", "300", check=True)
    res = pd.read_csv(tmp_path / "res.csv").iloc[0]
    assert (res["condition"], res["versus"]) == ("timer:w=4", "immediate")
    assert res["mean"] == 1.0 and res["n_prefer"] == 1 and res["n_equal"] == 1 and res["n_ratings"] == 2
    assert res["ci_low"] == 0 and res["ci_high"] == 2  # resampling 2 excerpts: 0, 1 or 2
    assert "draws:300" in res["signature"] and f"test:{key['test_id']}" in res["signature"]
    raters = pd.read_csv(tmp_path / "res.raters.csv").set_index("rater")
    assert raters.loc["r", "n_repeats"] == 2 and raters.loc["r", "share_same"] == 1


@pytest.mark.parametrize("case", ["empty", "header", "other-test", "two-tests", "bad-rating", "changed-condition"])
def test_bad_ratings_are_one_line_exit_2(keyed, cli, tmp_path, case):
    key, key_path = keyed
    good = ratings_csv(tmp_path / "good.csv", key)
    files, with_key, fragments = [tmp_path / "bad.csv"], True, []
    if case == "empty":
        files[0].write_text("")
        fragments = ["bad.csv", "is empty"]
    elif case == "header":
        files[0].write_text(COLUMNS)
        fragments = ["bad.csv", "no ratings"]
    elif case == "other-test":
        ratings_csv(files[0], key, test_id="0123456789ab")
        fragments = ["bad.csv", "test 0123456789ab", key["test_id"], "test_id"]
    elif case == "two-tests":
        ratings_csv(files[0], key, rater="q", test_id="0123456789ab")
        files, with_key, fragments = [good, files[0]], False, ["bad.csv", "not to", "good.csv"]
    elif case == "bad-rating":
        ratings_csv(files[0], key, rating=lambda t: 3)
        fragments = ["bad.csv", "row 2", "rating", "'3'", "-2, -1, 0, 1, 2"]
    else:
        text = ratings_csv(files[0], key).read_text().replace("timer:w=4", "timer:w=3", 1)
        files[0].write_text(text)
        fragments = ["bad.csv", "timer:w=3", "differs from the key"]
    proc = cli("listening-results", *files, *(["--key", key_path] if with_key else []), "--out", tmp_path / "o.csv")
    assert_one_line_error(proc, *fragments)
    assert not (tmp_path / "o.csv").exists()
