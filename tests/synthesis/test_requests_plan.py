"""Requests you can see and edit: `group` over several traces, `synth --requests`.

Real CLI, real Piper. With noise_scale=0 and noise_w_scale=0 Piper is deterministic (the
same samples in every process, checked by hand before writing these tests), so two
syntheses of one plan agree on every column but the measured service time.
"""

import hashlib
import json

import pandas as pd
import pyarrow.parquet as pq
import pytest

from tests.support.checks import assert_one_line_error
from tests.support.synth import synth_args

# a module fixture of real runs takes seconds: every test here counts as slow (make test-fast leaves them out)
pytestmark = pytest.mark.slow

PIPER_DET = "piper:intra_op_threads=1,noise_scale=0,noise_w_scale=0"
RULES = ("--rule", "immediate", "--rule", "timer:w=2")
# the trace path's columns, minus the clock that is measured anew in every run
SAME = ["talk_id", "system", "condition", "backend", "realization", "seq", "dispatch_s", "audio_s", "source_s",
        "text", "glue", "trigger", "n_updates", "group", "audio_key", "sample_rate", "n_samples", "reused",
        "error", "attempts", "request_attempts"]


def write_traces(folder):
    """Two trace files, one system each; `-ordinarily` is glued to `extra` (a word cut
    across updates) and the word is longer than the 12-character limit used below."""
    a = pd.DataFrame({"talk_id": "t1", "system": "A", "seq": range(4), "time_s": [0.0, 1.0, 2.0, 3.5],
                      "text": ["Hello there,", "my friend.", "It was extra", "ordinarily good."],
                      "glue": [False, False, False, True], "source_s": 5.0})
    f = pd.DataFrame({"talk_id": "t1", "system": "F", "seq": range(2), "time_s": [0.5, 2.5],
                      "text": ["Hi, my dear", "friend. It was good."], "source_s": 5.0})
    a.to_csv(folder / "a.csv", index=False)
    f.to_csv(folder / "f.csv", index=False)
    pd.concat([a, f]).to_csv(folder / "both.csv", index=False)
    return folder / "a.csv", folder / "f.csv"


def synth_det(cli, out, store, *plan, extra=()):
    """``simulplay synth PLAN`` with deterministic Piper."""
    return cli(*synth_args(*plan, store=store, out=out, backend=PIPER_DET, extra=extra), check=True)


def signatures(path):
    meta = json.loads(pq.read_schema(path).metadata[b"simulplay"])
    return [meta["signatures"][i] for i in meta["row_signature"]], meta


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """group (unsplit) → synth --requests --max-chars 12, and synth TRACE… --rule … --max-chars 12."""
    from tests.support.cli import run_cli as cli

    d = tmp_path_factory.mktemp("plan")
    a, f = write_traces(d)
    cli("group", a, f, *RULES, "--out", d / "req.parquet", check=True)
    synth_det(cli, d / "from_req.parquet", d / "st1", "--requests", d / "req.parquet", extra=("--max-chars", "12"))
    synth_det(cli, d / "from_trace.parquet", d / "st2", a, f, *RULES, extra=("--max-chars", "12"))
    return d


def test_group_accepts_several_traces_as_one(cli, runs, tmp_path):
    cli("group", runs / "both.csv", *RULES, "--out", tmp_path / "one.parquet", check=True)
    pd.testing.assert_frame_equal(pd.read_parquet(runs / "req.parquet"), pd.read_parquet(tmp_path / "one.parquet"))


def test_synth_requests_writes_the_manifest_synth_from_traces_writes(runs):
    from_req = pd.read_parquet(runs / "from_req.parquet")
    from_trace = pd.read_parquet(runs / "from_trace.parquet")
    assert list(from_req.columns) == list(from_trace.columns)
    pd.testing.assert_frame_equal(from_req[SAME], from_trace[SAME])
    # the splitter cut the 17-character word of A's timer group inside (glued continuation)
    cut = from_req[(from_req["system"] == "A") & (from_req["condition"] == "timer:w=2")]
    assert cut["text"].str.len().max() <= 12 and cut["glue"].any()
    chunk_cols = ["talk_id", "system", "condition", "backend", "realization", "seq", "chunk", "n_samples"]
    pd.testing.assert_frame_equal(pd.read_parquet(runs / "from_req.chunks.parquet")[chunk_cols],
                                  pd.read_parquet(runs / "from_trace.chunks.parquet")[chunk_cols])


def test_the_manifest_names_the_requests_file_and_carries_its_rules(cli, runs, tmp_path):
    sha = hashlib.sha256((runs / "req.parquet").read_bytes()).hexdigest()
    req_sigs, meta = signatures(runs / "from_req.parquet")
    trace_sigs, _ = signatures(runs / "from_trace.parquet")
    group_sig = signatures(runs / "req.parquet")[0][0]
    for got, want in zip(req_sigs, trace_sigs):  # the clock verdicts of two runs may differ
        assert {**got, "clock": None} == {**want, "clock": None, "requests": "req.parquet", "requests_sha256": sha[:12],
                                          "requests_rule": want["rule"], "requests_splitter": group_sig["splitter"]}
    assert meta["requests"]["sha256"] == sha and meta["signature"]["requests_sha256"] == sha[:12]
    cli("replay", runs / "from_req.parquet", "--out", tmp_path / "s.csv", check=True)
    assert f"requests_sha256:{sha[:12]}" in pd.read_csv(tmp_path / "s.csv")["signature"][0]


def test_an_edited_request_is_synthesized_with_its_new_text(cli, runs, tmp_path):
    plan = pd.read_parquet(runs / "req.parquet")
    edit = (plan["system"] == "F") & (plan["condition"] == "immediate") & (plan["seq"] == 1)
    assert plan.loc[edit, "text"].tolist() == ["friend. It was good."]
    plan.loc[edit, "text"] = "friend. It was a very good talk, and we all enjoyed it."
    plan.to_csv(tmp_path / "edited.csv", index=False)  # another tool's table: no structured signature
    synth_det(cli, tmp_path / "m.parquet", tmp_path / "st", "--requests", tmp_path / "edited.csv",
          extra=("--max-chars", "12"))
    got = pd.read_parquet(tmp_path / "m.parquet")
    before = pd.read_parquet(runs / "from_req.parquet")
    keys = ["talk_id", "system", "condition", "seq"]
    merged = got.merge(before, on=keys, suffixes=("", "_before"), how="outer", indicator=True)
    changed = merged[(merged["system"] == "F") & (merged["condition"] == "immediate") & (merged["seq"] >= 1)]
    # the edited request splits into more pieces than the original one under the 12-character limit
    assert " ".join(changed["text"].dropna()) == "friend. It was a very good talk, and we all enjoyed it."
    assert changed["n_samples"].sum() > changed["n_samples_before"].sum()
    same = merged.drop(changed.index)
    assert (same["_merge"] == "both").all() and (same["n_samples"] == same["n_samples_before"]).all()
    sigs, _ = signatures(tmp_path / "m.parquet")
    sha = hashlib.sha256((tmp_path / "edited.csv").read_bytes()).hexdigest()[:12]
    assert {s["requests_sha256"] for s in sigs} == {sha} and not any("requests_rule" in s for s in sigs)


def test_a_custom_condition_label_is_kept_and_signed(cli, runs, tmp_path):
    plan = pd.read_parquet(runs / "req.parquet")
    plan = plan[plan["condition"] == "timer:w=2"].assign(condition="timer:w=2+edited")
    plan.to_parquet(tmp_path / "mine.parquet")
    synth_det(cli, tmp_path / "m.parquet", tmp_path / "st", "--requests", tmp_path / "mine.parquet")
    m = pd.read_parquet(tmp_path / "m.parquet")
    assert set(m["condition"]) == {"timer:w=2+edited"}
    assert {s["rule"] for s in signatures(tmp_path / "m.parquet")[0]} == {"timer:w=2+edited"}


def refused(proc, tmp_path, *fragments):
    assert_one_line_error(proc, *fragments)
    assert not (tmp_path / "m.parquet").exists() and not (tmp_path / "st").exists()


@pytest.mark.parametrize("plan,fragment", [
    (("--requests", "{req}", "{a}"), "--requests: is given with TRACE"),
    (("--requests", "{req}", "--rule", "immediate"), "--requests: is given with --rule"),
    ((), "synth: no plan: TRACE and --rule missing"),
    (("{a}",), "synth: no plan: --rule missing"),
    (("--requests", "{req}", "--events", "drop"), "--events drop: is given with --requests"),
])
def test_synth_takes_requests_or_traces_with_rules(cli, runs, tmp_path, plan, fragment):
    args = [str(x).format(req=runs / "req.parquet", a=runs / "a.csv") for x in plan]
    proc = cli("synth", *args, "--store", tmp_path / "st", "--out", tmp_path / "m.parquet")
    refused(proc, tmp_path, fragment)


def test_a_bad_requests_table_is_refused_before_synthesis(cli, runs, tmp_path):
    plan = pd.read_parquet(runs / "req.parquet")
    plan.loc[3, "seq"] = 7  # data row 4: A's immediate requests are seq 0..3
    plan.to_csv(tmp_path / "bad.csv", index=False)
    proc = cli("synth", "--requests", tmp_path / "bad.csv", "--store", tmp_path / "st", "--out", tmp_path / "m.parquet")
    refused(proc, tmp_path, "bad.csv, row 4, field 'seq'", "seq 7 where 3 is due")


def test_group_refuses_a_stream_in_two_traces_naming_both(cli, runs, tmp_path):
    proc = cli("group", runs / "a.csv", runs / "both.csv", "--rule", "immediate", "--out", tmp_path / "r.parquet")
    assert_one_line_error(proc, "both.csv: stream (talk_id=t1, system=A) is also in", "a.csv")
    assert not (tmp_path / "r.parquet").exists()
