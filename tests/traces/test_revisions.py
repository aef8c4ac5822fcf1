"""Revising traces: ``retract`` per update, its validation and statistics, and importing
simulstream's ``deleted_tokens`` as retractions (agreeing with simulstream's own
``NormalizedErasure``)."""

import json
from types import SimpleNamespace

import pandas as pd
import pytest
from simulstream.metrics.readers import LogReader
from simulstream.metrics.stats import NormalizedErasure

from simulplay.core.errors import InputError
from simulplay.traces import read_trace, read_traces, streams_from_frame, trace_stats, write_trace
from simulplay.traces.importers import import_simulstream
from simulplay.traces.revisions import final_hypothesis
from tests.support.checks import assert_one_line_error
from tests.support.retranslation_logs import revising_log
from tests.support.simulstream_logs import seamless_log

# "Das ist gut." → drop "." and glue ", weil" → drop ", weil" (a pure retraction) → " und"
REVISING = {"talk_id": "t1", "system": "S", "source_s": 10.0, "updates": [
    {"time_s": 1.0, "text": "Das ist gut."},
    {"time_s": 2.0, "text": ", weil", "glue": True, "retract": 1},
    {"time_s": 3.0, "text": "", "retract": 6},
    {"time_s": 4.0, "text": "und"}]}


def write_lines(path, *objs):
    path.write_text("".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objs), encoding="utf-8")
    return path


def test_hypothesis_applies_each_retraction_before_appending(tmp_path):
    (s,) = streams_from_frame(read_trace(write_lines(tmp_path / "t.jsonl", REVISING)), revising=True)
    assert s.revising and s.retract.tolist() == [0, 1, 6, 0]
    # H1 "Das ist gut." → H2 "Das ist gut, weil" → H3 "Das ist gut" → H4 "Das ist gut und"
    assert final_hypothesis(s) == s.joined == "Das ist gut und"


def test_validate_reports_revisions_characters_and_normalized_erasure(tmp_path):
    other = {"talk_id": "t2", "system": "S", "source_s": 10.0, "updates": [
        {"time_s": 1.0, "text": "Hallo"}, {"time_s": 2.0, "text": "Welt", "retract": 5}]}
    stats = trace_stats([read_trace(write_lines(tmp_path / "t.jsonl", REVISING, other))]).set_index("talk_id")
    # t1 retracts "." (1 word, cut into) and ", weil" (2 whitespace words) of a 4-word final hypothesis
    assert stats.loc["t1", ["words", "revisions", "retracted_chars", "normalized_erasure"]].tolist() == [4, 2, 7, 0.75]
    assert stats.loc["t2", ["words", "revisions", "retracted_chars", "normalized_erasure"]].tolist() == [1, 1, 5, 1.0]


def test_append_only_traces_keep_todays_columns_and_bytes(tmp_path):
    plain = {"talk_id": "t1", "system": "S", "source_s": 5.0,
             "updates": [{"time_s": 1.0, "text": "Hallo"}, {"time_s": 2.0, "text": "Welt"}]}
    a = write_lines(tmp_path / "a.jsonl", plain)
    zeros = write_lines(tmp_path / "z.jsonl", {**plain, "updates": [{**u, "retract": 0} for u in plain["updates"]]})
    df = read_trace(a)
    assert "retract" not in df.columns and "revisions" not in trace_stats([df]).columns
    pd.testing.assert_frame_equal(read_trace(zeros), df)
    for suffix in (".jsonl", ".csv", ".parquet"):
        write_trace(df, tmp_path / f"out{suffix}", {"table": "trace"})
        write_trace(read_trace(tmp_path / f"out{suffix}"), tmp_path / f"again{suffix}", {"table": "trace"})
        assert (tmp_path / f"out{suffix}").read_bytes() == (tmp_path / f"again{suffix}").read_bytes()
    assert "retract" not in (tmp_path / "out.jsonl").read_text(encoding="utf-8")


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_revising_trace_round_trips_through_every_format(tmp_path, suffix):
    df = read_trace(write_lines(tmp_path / "t.jsonl", REVISING))
    write_trace(df, tmp_path / f"out{suffix}", {"table": "trace"})
    back = read_trace(tmp_path / f"out{suffix}")
    pd.testing.assert_frame_equal(back, df)


def test_a_retraction_longer_than_the_hypothesis_is_a_located_one_line_error(cli, tmp_path):
    bad = {**REVISING, "updates": [REVISING["updates"][0], {"time_s": 2.0, "text": "x", "retract": 13}]}
    path = write_lines(tmp_path / "t.jsonl", bad)
    proc = cli("validate", path)
    assert_one_line_error(proc, f"{path}, line 1 (update 1), field 'retract'",
                          "retract 13 is more than the 12 character(s) of the hypothesis so far")


def test_negative_retract_and_empty_text_without_retraction_are_refused(tmp_path):
    rows = pd.DataFrame({"talk_id": "t", "system": "S", "seq": [0, 1, 2], "time_s": [0.0, 1.0, 2.0],
                         "text": ["a", "", "b"], "source_s": 5.0, "retract": [0, 0, -1]})
    rows.to_csv(tmp_path / "t.csv", index=False)
    with pytest.raises(InputError) as e:
        read_trace(tmp_path / "t.csv")
    lines = e.value.lines()
    assert any("row 3, field 'retract'" in x and "-1 is negative" in x for x in lines), lines
    assert any("row 2, field 'text'" in x and "empty only when it retracts" in x for x in lines), lines


def test_grouping_a_revising_trace_without_a_commit_policy_is_refused(cli, tmp_path):
    path = write_lines(tmp_path / "t.jsonl", REVISING)
    proc = cli("group", path, "--rule", "immediate", "--out", tmp_path / "r.csv")
    assert_one_line_error(proc, "stream (talk_id=t1, system=S) revises its output (update seq 1 retracts 1",
                          "a commit policy (--commit")


def packet(audio, generated, deleted=()):
    return {"id": 0, "total_audio_processed": audio, "computation_time": 0.2,
            "generated_tokens": list(generated), "deleted_tokens": list(deleted)}


def test_keep_turns_deleted_tokens_into_retractions_through_the_detokenization(tmp_path):
    log = write_lines(tmp_path / "m.jsonl", {"model_loading_time": 1.0}, {"id": 0, "metadata": {"wav_name": "a.wav"}},
                      packet(1.0, ["▁Wir", "▁bau", "en", "▁Geb", "ä", "ude", "."]),
                      packet(2.0, ["ude", ",", "▁", "▁die"], deleted=["ude", "."]),  # a word cut into, a lone ▁
                      packet(3.0, [], deleted=["▁die"]),  # only retracts
                      packet(4.0, ["▁und", "▁Brücken", "."], deleted=["▁"]))  # deletes whitespace: 0 characters
    res = import_simulstream(log, system="R")
    rows = res.frame
    got = list(zip(rows["time_s"], rows["text"], rows["glue"], rows["retract"]))
    assert got == [(1.0, "Wir bauen Gebäude.", False, 0), (2.0, "ude, die", True, 4), (3.0, "", False, 4),
                   (4.0, "und Brücken.", False, 0)]
    write_trace(rows, tmp_path / "t.jsonl", res.signature)
    (s,) = streams_from_frame(read_trace(tmp_path / "t.jsonl"), revising=True)
    assert s.joined == "Wir bauen Gebäude, und Brücken."
    assert res.signature["retractions"] == "keep"


def test_keep_leaves_append_only_logs_as_they_were(tmp_path):
    log = seamless_log(tmp_path / "a.jsonl", [30.4, 12.6]).path
    keep, refuse = import_simulstream(log, system="A"), import_simulstream(log, system="A", retractions="refuse")
    pd.testing.assert_frame_equal(keep.frame, refuse.frame)
    assert "retract" not in keep.frame.columns


def test_keep_then_validate_round_trips_a_revising_log(tmp_path):
    talks = revising_log(tmp_path / "r.jsonl", [41.3, 20.7])
    res = import_simulstream(tmp_path / "r.jsonl", system="R")
    write_trace(res.frame, tmp_path / "t.parquet", res.signature)
    streams = streams_from_frame(read_trace(tmp_path / "t.parquet"), revising=True)
    assert [s.joined for s in streams] == [t.text for t in talks]
    assert all(s.revising for s in streams)


def test_normalized_erasure_agrees_with_simulstream(tmp_path):
    """simulstream 1.0.0's NormalizedErasure on the same log: retracted words (of each
    packet's detokenized deleted tokens) over the words of the final outputs."""
    talks = revising_log(tmp_path / "r.jsonl", [61.3, 33.7, 25.2], rate=0.3)
    assert all(sum(t.kinds.values()) for t in talks)
    config = SimpleNamespace(detokenizer_type="simuleval", latency_unit="spm")
    expected = NormalizedErasure().compute(LogReader(config, str(tmp_path / "r.jsonl"), latency_unit="word"))
    res = import_simulstream(tmp_path / "r.jsonl", system="R")
    stats = trace_stats([res.frame])
    ours = (stats["normalized_erasure"] * stats["words"]).sum() / stats["words"].sum()
    assert expected > 0.1 and ours == pytest.approx(expected, rel=1e-12)


def test_a_revising_trace_read_with_an_append_only_one_keeps_the_other_append_only(tmp_path):
    plain = {"talk_id": "t1", "system": "F", "source_s": 10.0, "updates": [{"time_s": 1.0, "text": "Hallo"}]}
    df = read_traces([write_lines(tmp_path / "r.jsonl", REVISING), write_lines(tmp_path / "p.jsonl", plain)])
    assert df["retract"].tolist() == [0, 1, 6, 0, 0] and df["retract"].dtype == "int64"
    r, p = streams_from_frame(df, revising=True)
    assert r.revising and not p.revising and p.joined == "Hallo"


@pytest.mark.parametrize("unit", ["spm", "word", "char"])
def test_the_kept_output_is_the_squeezed_detokenization_after_any_pushes_and_pops(unit):
    import random

    from simulplay.traces.importers.detokenize import Shown, detokenize, squeeze

    rng = random.Random(7)
    pieces = ["▁wir", "▁", "ä", "ude", ".", "▁▁", " ", "", "a b", "\t", "▁Geb", ",", "x "]
    shown, tokens = Shown(unit), []
    for _ in range(400):
        if tokens and rng.random() < 0.35:
            k = rng.randint(1, len(tokens))
            shown.pop(k)
            del tokens[len(tokens) - k:]
        else:
            new = [rng.choice(pieces) for _ in range(rng.randint(0, 4))]
            shown.push(new)
            tokens.extend(new)
        assert shown.text == squeeze(detokenize(tokens, unit)) and shown.tokens == tokens
