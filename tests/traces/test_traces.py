"""Trace readers, writers, glue and validation (docs/formats.md)."""

import json

import numpy as np
import pandas as pd
import pytest

from simulplay.core.errors import InputError
from simulplay.core.signature import base_signature
from simulplay.traces import read_trace, stream_stats, streams_from_frame, write_trace
from tests.support.factories import trace_frame


@pytest.fixture
def glued():
    df = trace_frame(n_streams=2, n_updates=4)
    df["glue"] = [False, True, False, False] * 2
    df.loc[1, "text"] = "'s café"
    df.loc[5, "text"] = ", naïve"
    return df


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".jsonl"])
def test_round_trip_preserves_every_character(tmp_path, glued, suffix):
    first = read_trace(_write_csv(tmp_path, glued))
    path = tmp_path / f"out{suffix}"
    write_trace(first, path, base_signature(table="trace"))
    again = read_trace(path)
    pd.testing.assert_frame_equal(first, again)
    joined = [s.joined for s in streams_from_frame(again)]
    assert joined[0] == "word0 more's café word2 more word3 more"
    assert joined[1] == "word0 more, naïve word2 more word3 more"


def test_row_per_update_jsonl(tmp_path):
    lines = [{"talk_id": "t", "system": "A", "seq": i, "time_s": i * 0.5, "text": f"w{i}", "source_s": 3}
             for i in range(3)]
    p = tmp_path / "t.jsonl"
    p.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    df = read_trace(p)
    assert df["text"].tolist() == ["w0", "w1", "w2"] and not df["glue"].any()


def test_rows_are_ordered_by_seq_and_streams_keep_file_order(tmp_path):
    df = trace_frame(n_streams=2, n_updates=3)
    df = df.iloc[[5, 4, 3, 2, 1, 0]]
    got = read_trace(_write_csv(tmp_path, df))
    assert got["system"].tolist() == ["F"] * 3 + ["A"] * 3
    assert got["seq"].tolist() == [0, 1, 2, 0, 1, 2]


def test_text_that_looks_like_missing_values_stays_text(tmp_path):
    df = trace_frame(n_streams=1, n_updates=3)
    df["text"] = ["NA", "null", "None"]
    assert read_trace(_write_csv(tmp_path, df))["text"].tolist() == ["NA", "null", "None"]


def test_updates_after_source_end_are_valid_and_counted(tmp_path):
    df = trace_frame(n_streams=1, n_updates=5, source_s=2.5)
    stats = stream_stats(read_trace(_write_csv(tmp_path, df)))
    assert stats.loc[0, "after_source_end"] == 2


def test_stream_stats():
    df = pd.DataFrame({"talk_id": "t", "system": "A", "seq": range(4), "time_s": [0, 1, 2, 3],
                       "text": ["one", "two words.", "three more words", 'and "four" five six!)'],
                       "source_s": 9.0, "glue": False})
    s = stream_stats(df).iloc[0]
    assert (s["updates"], s["words"], s["median_words"]) == (4, 10, 2.5)
    assert s["pct_le2_words"] == 50 and s["pct_terminal_punct"] == 50
    assert s["p90_words"] == pytest.approx(np.percentile([1, 2, 3, 4], 90))


def _write_csv(tmp_path, df, name="trace.csv"):
    p = tmp_path / name
    df.to_csv(p, index=False)
    return p


BAD_CASES = {
    "missing column": (lambda df: df.drop(columns=["time_s"]), None, "missing column time_s"),
    "non-numeric time": (lambda df: df.assign(time_s=["x", 1, 2, 3]), (1, "time_s"), "'x' is not a number"),
    "NaN time": (lambda df: df.assign(time_s=[0, np.nan, 2, 3]), (2, "time_s"), "is empty or NaN"),
    "infinite time": (lambda df: df.assign(time_s=[0, 1, np.inf, 3]), (3, "time_s"), "inf is not finite"),
    "negative time": (lambda df: df.assign(time_s=[-1, 1, 2, 3]), (1, "time_s"), "-1 is negative"),
    "time backwards": (lambda df: df.assign(time_s=[0, 2, 1, 3]), (3, "time_s"), "is earlier than"),
    "duplicate seq": (lambda df: df.assign(seq=[0, 1, 1, 3]), (3, "seq"), "seq 1 repeats"),
    "fractional seq": (lambda df: df.assign(seq=[0, 1.5, 2, 3]), (2, "seq"), "1.5 is not a whole number"),
    "missing source": (lambda df: df.assign(source_s=[9, np.nan, 9, 9]), (2, "source_s"), "is empty or NaN"),
    "zero source": (lambda df: df.assign(source_s=[0, 0, 0, 0]), (1, "source_s"), "0 is not positive"),
    "varying source": (lambda df: df.assign(source_s=[9, 9, 8, 9]), (3, "source_s"), "differs from 9"),
    "empty talk_id": (lambda df: df.assign(talk_id=["t", "", "t", "t"]), (2, "talk_id"), "is empty"),
    "empty system": (lambda df: df.assign(system=["A", "A", "A", ""]), (4, "system"), "is empty"),
    "empty text": (lambda df: df.assign(text=["a", "b", "", "d"]), (3, "text"), "is empty"),
    "bad glue": (lambda df: df.assign(glue=["true", "maybe", "", "0"]), (2, "glue"), "'maybe' is not a boolean"),
}


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
@pytest.mark.parametrize("case", list(BAD_CASES))
def test_bad_traces_name_file_row_and_field(tmp_path, case, suffix):
    make, where, fragment = BAD_CASES[case]
    df = make(trace_frame(n_streams=1, n_updates=4, source_s=9.0))
    p = tmp_path / f"bad{suffix}"
    if suffix == ".csv":
        df.to_csv(p, index=False)
    else:
        mixed = [c for c in df if df[c].map(type).nunique() > 1 and df[c].map(type).eq(str).any()]
        df.astype({c: str for c in mixed}).to_parquet(p)  # a text column holding the bad cell
    with pytest.raises(InputError) as e:
        read_trace(p)
    message = str(e.value).splitlines()[0]
    assert message.startswith(str(p)) and fragment in message
    if where:
        assert f"row {where[0]}, field '{where[1]}'" in message
    assert "expected" in message


def test_jsonl_problems_name_the_line(tmp_path):
    good = {"talk_id": "t", "system": "A", "source_s": 5, "updates": [{"time_s": 0, "text": "hi"}]}
    p = tmp_path / "t.jsonl"
    p.write_text(json.dumps(good) + "\n{not json\n" + json.dumps({"talk_id": "t", "system": "B", "source_s": 5})
                 + "\n")
    with pytest.raises(InputError) as e:
        read_trace(p)
    lines = str(e.value).splitlines()
    assert "line 2" in lines[0] and "broken JSON" in lines[0]
    assert "line 3, field 'updates'" in lines[1] and "no 'updates'" in lines[1]


def test_jsonl_stream_update_fields_are_located(tmp_path):
    bad = {"talk_id": "t", "system": "A", "source_s": 5,
           "updates": [{"time_s": 0, "text": "hi"}, {"time_s": "soon", "text": "x"}]}
    p = tmp_path / "t.jsonl"
    p.write_text(json.dumps(bad) + "\n")
    with pytest.raises(InputError, match=r"line 1 \(update 1\), field 'time_s': 'soon' is not a number"):
        read_trace(p)


def test_non_utf8_text(tmp_path):
    p = tmp_path / "t.csv"
    p.write_bytes(b"talk_id,system,seq,time_s,text,source_s\nt,A,0,0,caf\xe9,5\n")
    with pytest.raises(InputError, match="is not UTF-8"):
        read_trace(p)
    j = tmp_path / "t.jsonl"
    j.write_bytes(b'{"talk_id":"t","system":"A","source_s":5,"updates":[{"time_s":0,"text":"caf\xe9"}]}\n')
    with pytest.raises(InputError, match="line 1: is not UTF-8"):
        read_trace(j)


@pytest.mark.parametrize("content,fragment", [
    (b"", "is empty"),
    (b"talk_id,system,seq,time_s,text,source_s\n", "has no rows"),
    (b"PAR1garbage", "not a readable Parquet file"),
])
def test_empty_and_unreadable_files(tmp_path, content, fragment):
    p = tmp_path / ("t.parquet" if content.startswith(b"PAR1") else "t.csv")
    p.write_bytes(content)
    with pytest.raises(InputError, match=fragment):
        read_trace(p)


def test_directory_missing_and_unknown_format(tmp_path):
    with pytest.raises(InputError, match="is a directory"):
        read_trace(tmp_path)
    with pytest.raises(InputError, match="no such file"):
        read_trace(tmp_path / "nope.csv")
    (tmp_path / "t.xlsx").write_text("x")
    with pytest.raises(InputError, match=r"unknown file format '.xlsx' \(expected .parquet, .csv, .jsonl\)"):
        read_trace(tmp_path / "t.xlsx")
