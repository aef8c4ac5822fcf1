"""`simulplay quality` end to end on a tiny real-Piper manifest (the session's shared Piper
runs, tests/support/synth.py), and its one-line errors (on a manifest of the deterministic fake backend)."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from simulplay.core.tables import read_table
from simulplay.scorers import dnsmos
from tests.support.checks import assert_one_line_error
from tests.support.factories import stream

UPDATES = {"t1": ["The city built a crossing", "near the school,", "and the children walk", "to class on their own."],
           "t2": ["Last winter the river", "froze over for the first time", "in a decade, and the town",
                  "went skating on it."]}


def write_trace(path):
    lines = [{"talk_id": t, "system": "A", "source_s": 12.0,
              "updates": [{"time_s": 0.5 + i, "text": x} for i, x in enumerate(texts)]} for t, texts in UPDATES.items()]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def piper_run(piper_runs, tmp_path_factory):
    """The session's real-Piper run of the two talks under immediate and timer:w=4 (which
    gathers each talk's four updates into one request), and `simulplay quality` of it."""
    from tests.support.cli import run_cli

    streams = [stream([0.5 + i for i in range(len(texts))], texts, talk_id=t, system="A", source_s=12.0)
               for t, texts in UPDATES.items()]
    run = piper_runs.run("quality", streams, rules=("immediate", "timer:w=4"))
    d = tmp_path_factory.mktemp("quality")
    proc = run_cli("quality", run.manifest, "--store", run.store, "--out", d / "q.parquet", "--draws", "200",
                   "--quiet", check=True)
    return d, run, proc


@pytest.mark.slow
def test_writes_three_tables_with_signatures(piper_run):
    d, _, proc = piper_run
    outputs, meta = read_table(d / "q.parquet")
    requests, _ = read_table(d / "q.requests.parquet")
    intervals, _ = read_table(d / "q.intervals.parquet")
    assert "wrote" in proc.stdout and meta
    assert sorted(outputs["condition"]) == ["immediate", "immediate", "timer:w=4", "timer:w=4"]
    # immediate: one request per update (4 per talk, 3 joins); timer:w=4 gathers all four updates (one request)
    imm = outputs[outputs["condition"] == "immediate"]
    assert imm["n_requests"].tolist() == [4, 4] and imm["n_joins"].tolist() == [3, 3]
    assert (outputs.loc[outputs["condition"] == "timer:w=4", "n_joins"] == 0).all()
    assert len(requests) == 10 and (imm["n_embedded"] + imm["n_too_short"] == 4).all()
    assert requests.loc[~requests["embedded"].astype(bool), "similarity_output"].isna().all()  # never 0
    words = [len(t.split()) for t in UPDATES["t1"]]
    assert imm.iloc[0]["joins_per_100_words"] == pytest.approx(100 * 3 / sum(words))
    assert ((outputs["dnsmos_ovrl"] >= 1) & (outputs["dnsmos_ovrl"] <= 5)).all()
    delta = intervals[(intervals["metric"] == "dnsmos_ovrl") & (intervals["condition"] == "timer:w=4 − immediate")]
    by_talk = outputs.pivot(index="talk_id", columns="condition", values="dnsmos_ovrl")
    assert delta["mean"].iloc[0] == pytest.approx((by_talk["timer:w=4"] - by_talk["immediate"]).mean())
    assert delta["n_negative"].iloc[0] + delta["n_positive"].iloc[0] <= 2 and delta["n_talks"].iloc[0] == 2
    assert "reference:immediate" in intervals["signature"].iloc[0] and "draws:200" in intervals["signature"].iloc[0]


@pytest.mark.slow
def test_output_dnsmos_is_that_of_its_requests_back_to_back(piper_run, tmp_path):
    """The per-output DNSMOS scores the output's requests' stored audio, concatenated in seq order."""
    from simulplay.manifest import read_manifest
    from simulplay.store.store import AudioStore

    d, run, _ = piper_run
    manifest, _ = read_manifest(run.manifest)
    store = AudioStore.open(run.store, create=False)
    rows = manifest[(manifest["talk_id"] == "t2") & (manifest["condition"] == "immediate")].sort_values("seq")
    pieces = [store.load_audio(k) for k in rows["audio_key"]]
    outputs, _ = read_table(d / "q.parquet")
    got = outputs[(outputs["talk_id"] == "t2") & (outputs["condition"] == "immediate")]["dnsmos_ovrl"].iloc[0]
    want = dnsmos.score(np.concatenate([p for p, _ in pieces]), pieces[0][1])["dnsmos_ovrl"]
    assert got == pytest.approx(want, abs=1e-9)


@pytest.fixture(scope="module")
def fake_manifest(tmp_path_factory):
    import tests.support.fakes  # noqa: F401 - registers the fake-test backend
    from simulplay.backends import parse_backend
    from simulplay.grouping import parse_rule
    from simulplay.synthesis.run import synthesize_files

    d = tmp_path_factory.mktemp("fake")
    synthesize_files(parse_backend("fake-test"), d / "store", d / "m.parquet", traces=[write_trace(d / "t.jsonl")],
                     rules=[parse_rule("immediate"), parse_rule("timer:w=4")], contention_sample=0)
    return d


def test_joins_only_on_fake_audio(fake_manifest, cli, tmp_path):
    d = fake_manifest
    cli("quality", d / "m.parquet", "--store", d / "store", "--out", tmp_path / "q.csv", "--metrics", "joins",
        "--reference", "timer:w=4", "--draws", "100", "--quiet", check=True)
    out, _ = read_table(tmp_path / "q.csv")
    assert "dnsmos_ovrl" not in out and "similarity_output" not in out
    assert sorted(out["n_joins"].astype(int)) == [0, 0, 3, 3]
    joined = pd.read_csv(tmp_path / "q.joins.csv")  # one row per join, naming the requests on either side
    counts = joined.groupby(["talk_id", "condition"]).size()
    assert counts.to_dict() == {("t1", "immediate"): 3, ("t2", "immediate"): 3}
    assert joined[["seq_before", "seq"]].values.tolist() == [[0, 1], [1, 2], [2, 3]] * 2
    assert joined["join"].tolist() == [1, 2, 3] * 2
    assert np.allclose(joined["step_db"], joined["level_after_db"] - joined["level_before_db"])
    intervals = pd.read_csv(tmp_path / "q.intervals.csv")
    assert set(intervals["condition"]) >= {"immediate − timer:w=4"}
    assert all(math.isfinite(x) for x in intervals["mean"])


@pytest.mark.parametrize(("args", "fragments"), [
    (["--metrics", "dnsmos,loudness"], ["--metrics 'dnsmos,loudness'", "loudness", "dnsmos,similarity,joins"]),
    (["--metrics", ","], ["--metrics", "empty"]),
    (["--reference", "timer:w=9"], ["--reference 'timer:w=9'", "not a condition", "immediate"]),
    (["--out", "q.txt"], ["q.txt"]),
])
def test_bad_input_is_one_line_exit_2(fake_manifest, cli, tmp_path, args, fragments):
    d = fake_manifest
    base = {"--out": str(tmp_path / "q.csv")}
    flags = dict(zip(args[::2], args[1::2]))
    if flags.get("--out") == "q.txt":
        flags["--out"] = str(tmp_path / "q.txt")
    merged = [x for k, v in {**base, **flags}.items() for x in (k, v)]
    proc = cli("quality", d / "m.parquet", "--store", d / "store", *merged, "--quiet")
    assert_one_line_error(proc, *fragments)
    assert not (tmp_path / "q.csv").exists()


def test_a_manifest_without_audio_is_refused(fake_manifest, cli, tmp_path):
    d = fake_manifest
    plain = pd.read_parquet(d / "m.parquet").drop(columns=["audio_key"])
    plain.to_csv(tmp_path / "plain.csv", index=False)
    proc = cli("quality", tmp_path / "plain.csv", "--store", d / "store", "--out", tmp_path / "q.csv")
    assert_one_line_error(proc, "audio_key")


