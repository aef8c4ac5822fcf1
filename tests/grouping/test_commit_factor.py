"""The commit policy as a factor of the experiment: ``--commit`` on group, synth, run and the
API; conditions ``POLICY+RULE``; append-only traces unchanged under ``eager``."""

import json
import os

import pandas as pd
import pytest

import simulplay
from simulplay.core.errors import InputError
from simulplay.grouping import Committing, commit_rules, parse_pair, parse_rule
from simulplay.grouping.vectorized import group_many, update_table
from simulplay.synthesis.run import synthesize_files
from simulplay.traces import read_traces, streams_from_frame
from tests.support.factories import small_trace
from tests.support.fakes import FakeSettings

# t1 of system A revises: "Das ist gut." → "Das ist gut, weil" → "Das ist gut" → "Das ist gut und"
REVISING = [
    {"talk_id": "t1", "system": "A", "source_s": 10.0, "updates": [
        {"time_s": 1.0, "text": "Das ist gut."}, {"time_s": 2.0, "text": ", weil", "glue": True, "retract": 1},
        {"time_s": 3.0, "text": "", "retract": 6}, {"time_s": 4.0, "text": "und"}]},
    {"talk_id": "t1", "system": "F", "source_s": 10.0, "updates": [
        {"time_s": 1.5, "text": "Das ist gut"}, {"time_s": 4.5, "text": "und"}]},
]


def write_lines(path, objs):
    path.write_text("".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objs), encoding="utf-8")
    return path


def test_a_condition_is_policy_then_rule_and_eager_is_left_out():
    r = parse_rule("stable+punct")
    assert isinstance(r, Committing) and r.canonical() == "stable:k=2+punct:cap=2,min_words=3"
    assert parse_rule(r.canonical()) == r
    assert parse_rule("eager+timer:w=2") == parse_rule("timer:w=2")
    assert r.to_dict() == {"rule": "punct", "cap": 2.0, "min_words": 3, "unit": "word",
                           "commit": {"commit": "stable", "k": 2, "unit": "word"}}
    assert parse_pair("stable:k=2+punct,final+punct") == ("stable:k=2+punct:cap=2,min_words=3",
                                                          "final+punct:cap=2,min_words=3")
    assert [x.canonical() for x in commit_rules([parse_rule("immediate")], ["eager", "mask:k=1"])] == [
        "immediate", "mask:k=1+immediate"]
    with pytest.raises(InputError, match="is given twice"):
        commit_rules([parse_rule("immediate")], ["stable", "stable:k=2"])


def test_group_keys_outputs_by_policy_and_rule(cli, tmp_path):
    trace = write_lines(tmp_path / "t.jsonl", REVISING)
    out = tmp_path / "r.csv"
    proc = cli("group", trace, "--rule", "immediate", "--commit", "eager", "--commit", "mask:k=1", "--commit",
               "final", "--out", out)
    assert proc.returncode == 0, proc.stderr
    df = pd.read_csv(out)
    got = {c: " | ".join(g.loc[g["system"] == "A", "text"]) for c, g in df.groupby("condition", sort=False)}
    # eager speaks every update, the "." and ", weil" included; mask:k=1 re-speaks "gut" after ", weil"
    # (spoken as "gut,") is taken back; final speaks each piece of the final hypothesis when last written
    assert got == {"immediate": "Das ist gut. | , weil | und", "mask:k=1+immediate": "Das ist | gut, | gut | und",
                   "final+immediate": "Das ist gut | und"}
    f = df[df["system"] == "F"].groupby("condition")["text"].apply(list).to_dict()
    # append-only F: eager and final speak its updates as they are; mask:k=1 holds its last word back
    assert f == {"immediate": ["Das ist gut", "und"], "final+immediate": ["Das ist gut", "und"],
                 "mask:k=1+immediate": ["Das ist", "gut", "und"]}


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_append_only_requests_are_byte_identical_with_and_without_eager(cli, tmp_path, suffix):
    small_trace(trace := tmp_path / "trace.jsonl", n_streams=4, n_updates=6)
    for name, extra in (("plain", ()), ("eager", ("--commit", "eager"))):
        out = tmp_path / f"{name}{suffix}"
        proc = cli("group", trace, "--rule", "punct", "--rule", "timer:w=2", *extra, "--out", out)
        assert proc.returncode == 0, proc.stderr
    assert (tmp_path / f"plain{suffix}").read_bytes() == (tmp_path / f"eager{suffix}").read_bytes()


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_append_only_manifests_are_byte_identical_with_and_without_eager(tmp_path, suffix, monkeypatch):
    # the machine's load average, which a manifest records (in Parquet also inside the base64
    # Arrow schema), held still: a loaded machine's moves between the two runs are not the policy's
    monkeypatch.setattr(os, "getloadavg", lambda: (0.5, 0.5, 0.5))
    small_trace(trace := tmp_path / "trace.jsonl", n_streams=4, n_updates=6)
    rules = [parse_rule("punct"), parse_rule("timer:w=2")]
    synthesize_files(FakeSettings(), tmp_path / "store", tmp_path / f"a{suffix}", traces=[trace], rules=rules)
    synthesize_files(FakeSettings(), tmp_path / "store", tmp_path / f"b{suffix}", traces=[trace],
                     rules=commit_rules(rules, ["eager"]), commit=["eager"])
    assert (tmp_path / f"a{suffix}").read_bytes() == (tmp_path / f"b{suffix}").read_bytes()
    assert (tmp_path / "a.chunks.parquet").read_bytes() == (tmp_path / "b.chunks.parquet").read_bytes()


def test_synth_groups_what_each_policy_commits(tmp_path):
    trace = write_lines(tmp_path / "t.jsonl", REVISING)
    rules = commit_rules([parse_rule("immediate")], ["stable:k=2", "final"])
    res = synthesize_files(FakeSettings(), tmp_path / "store", tmp_path / "m.parquet", traces=[trace], rules=rules,
                           commit=["stable:k=2", "final"])
    man = pd.read_parquet(tmp_path / "m.parquet")
    assert set(man["condition"]) == {"stable:k=2+immediate", "final+immediate"} and res is not None
    a = man[(man["system"] == "A") & (man["condition"] == "stable:k=2+immediate")].sort_values("seq")
    # stable:k=2: "Das ist" agreed at 2 s (hypotheses 1 and 2 share "Das ist gut" but no space after "gut");
    # "gut" never has an agreed space after it (hypothesis 3 ends with it): the end of the stream speaks the rest
    assert list(zip(a["dispatch_s"], a["text"])) == [(2.0, "Das ist"), (4.0, "gut und")]


def test_api_group_takes_commit_policies(tmp_path):
    trace = write_lines(tmp_path / "t.jsonl", REVISING)
    t = simulplay.group(trace, "immediate", commit="hold:t=1").to_frame()
    assert set(t["condition"]) == {"hold:t=1+immediate"}
    with pytest.raises(InputError, match="revises its output"):
        simulplay.group(trace, "immediate")


def test_the_vectorized_engine_refuses_a_commit_condition_on_raw_updates(tmp_path):
    small_trace(trace := tmp_path / "trace.jsonl", n_streams=2, n_updates=4)
    table = update_table(streams_from_frame(read_traces([trace])))
    with pytest.raises(InputError, match="not this table's updates"):
        group_many(table, [parse_rule("stable+punct")])


def test_a_requests_file_marks_the_oracle_and_synthesizes_beside_causal_conditions(cli, tmp_path):
    trace = write_lines(tmp_path / "t.jsonl", REVISING)
    proc = cli("group", trace, "--rule", "immediate", "--commit", "eager", "--commit", "final",
               "--out", tmp_path / "r.parquet")
    assert proc.returncode == 0, proc.stderr
    from simulplay.api.checks import read_signed

    df, sigs = read_signed(tmp_path / "r.parquet")
    marks = {(c, s.get("oracle")) for c, s in zip(df["condition"], sigs)}
    assert marks == {("immediate", None), ("final+immediate", "non-causal")}
    synthesize_files(FakeSettings(), tmp_path / "store", tmp_path / "m.parquet", requests=tmp_path / "r.parquet")
    assert set(pd.read_parquet(tmp_path / "m.parquet")["condition"]) == {"immediate", "final+immediate"}


def test_a_rule_written_with_its_policy_groups_a_revising_trace_without_commit(cli, tmp_path):
    trace = write_lines(tmp_path / "t.jsonl", REVISING)
    proc = cli("group", trace, "--rule", "final+immediate", "--out", tmp_path / "r.csv")
    assert proc.returncode == 0, proc.stderr
    assert set(pd.read_csv(tmp_path / "r.csv")["condition"]) == {"final+immediate"}
