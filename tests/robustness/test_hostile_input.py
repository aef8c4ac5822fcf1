"""Inputs that used to end in a traceback or a NumPy warning, each run
through the real command line: one error line naming file, line/row and field, exit code
2, no output file. The subprocesses run with RuntimeWarnings as errors, so a warning of an
invalid cast fails the test too. The parameters of each case were written by hand."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support.checks import assert_one_line_error

UPDATE = {"talk_id": "t1", "system": "A", "seq": 0, "time_s": 1.0, "text": "hello there", "source_s": 10.0}
NO_WARNINGS = {"PYTHONWARNINGS": "error::RuntimeWarning"}


def jsonl(path, *lines: str):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


class Raw(str):
    """JSON text written as it is (a token no JSON writer produces)."""


def update_line(**fields) -> str:
    """A row-per-update trace line; a :class:`Raw` value is written as it is."""
    parts = [f'"{k}": {v if isinstance(v, Raw) else json.dumps(v)}' for k, v in {**UPDATE, **fields}.items()]
    return "{" + ", ".join(parts) + "}"


def simuleval_line(**raw) -> str:
    fields = {"index": "0", "prediction": '"hello world </s>"', "delays": "[1000.0, 2000.0, 3000.0]",
              "elapsed": "[1100.0, 2100.0, 3100.0]", "source": '["/d/t1.wav"]', "source_length": "4000.0", **raw}
    return "{" + ", ".join(f'"{k}": {v}' for k, v in fields.items()) + "}"


def simulstream_log(path, tokens: str = '["\\u2581hallo", "\\u2581welt"]', extra: str = ""):
    return jsonl(path, '{"model_loading_time": 1.0}', '{"id": 0, "metadata": {"wav_name": "t1.wav"}}',
                 '{"id": 0, "total_audio_processed": 1.0, "computation_time": 0.2, "generated_tokens": '
                 f'{tokens}, "deleted_tokens": []{extra}}}')


def parquet_trace(path, meta: bytes | None = None, **columns):
    df = pd.DataFrame({k: [v] for k, v in UPDATE.items()})
    table = pa.Table.from_pandas(df, preserve_index=False)
    for name, array in columns.items():
        table = table.set_column(table.column_names.index(name), name, array)
    if meta is not None:
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), b"simulplay": meta})
    pq.write_table(table, path)
    return path


def manifest_parquet(path, meta: bytes | None = None, **columns):
    df = pd.DataFrame({"talk_id": ["t1", "t1"], "system": ["A", "A"], "condition": ["c", "c"], "seq": [0, 1],
                       "dispatch_s": [0.0, 1.0], "service_s": [0.1, 0.1], "audio_s": [1.0, 1.0],
                       "source_s": [10.0, 10.0]})
    table = pa.Table.from_pandas(df, preserve_index=False)
    for name, array in columns.items():
        if name in table.column_names:
            table = table.set_column(table.column_names.index(name), name, array)
        else:
            table = table.append_column(name, array)
    if meta is not None:
        table = table.replace_schema_metadata({b"simulplay": meta})
    pq.write_table(table, path)
    return path


DEEP = "[" * 100_000 + "]" * 100_000
LONG_INT = "1" * 5000  # beyond Python's 4,300-digit conversion limit
HUGE_INT = "1" * 400  # converts, but not to a float


CASES = {
    "trace JSON nested too deep": (
        lambda d: jsonl(d / "t.jsonl", update_line(x=Raw(DEEP))), ["validate"], ["line 1", "nested deeper than 64"]),
    "simulstream JSON nested too deep": (
        lambda d: simulstream_log(d / "s.jsonl", extra=f', "x": {DEEP}'), ["import-simulstream", "--system", "A"],
        ["line 3", "nested deeper than 64"]),
    "trace integer beyond 4300 digits": (
        lambda d: jsonl(d / "t.jsonl", update_line(time_s=Raw(LONG_INT))), ["validate"], ["line 1", "4300 digits"]),
    "simuleval integer beyond 4300 digits": (
        lambda d: jsonl(d / "i.log", simuleval_line(source_length=LONG_INT)), ["import-simuleval", "--system", "A"],
        ["line 1", "4300 digits"]),
    "simuleval number overflowing a float": (
        lambda d: jsonl(d / "i.log", simuleval_line(source_length=HUGE_INT)), ["import-simuleval", "--system", "A"],
        ["line 1, field 'source_length'", "too large"]),
    "simuleval delay overflowing a float": (
        lambda d: jsonl(d / "i.log", simuleval_line(delays=f"[1000.0, {HUGE_INT}, 3000.0]")),
        ["import-simuleval", "--system", "A"], ["line 1, field 'delays'", "item 1", "too large"]),
    "trace time overflowing a float": (
        lambda d: jsonl(d / "t.jsonl", update_line(time_s=Raw(HUGE_INT))), ["group", "--rule", "immediate"],
        ["line 1, field 'time_s'", "too large"]),
    "trace lone surrogate": (
        lambda d: jsonl(d / "t.jsonl", update_line(text=Raw('"hi \\ud800"'))), ["group", "--rule", "immediate"],
        ["line 1", "lone surrogate"]),
    "simulstream lone surrogate": (
        lambda d: simulstream_log(d / "s.jsonl", tokens='["\\u2581hallo", "\\udc00"]'),
        ["import-simulstream", "--system", "A"], ["line 3", "lone surrogate"]),
    "Parquet metadata not JSON": (
        lambda d: parquet_trace(d / "t.parquet", b"{not json"), ["validate"],
        ["Parquet metadata 'simulplay'", "broken JSON"]),
    "Parquet metadata not UTF-8": (
        lambda d: parquet_trace(d / "t.parquet", b"\xff\xfe{}"), ["validate"],
        ["Parquet metadata 'simulplay'", "not UTF-8"]),
    "Parquet metadata nested too deep": (
        lambda d: parquet_trace(d / "t.parquet", b"[" * 5000 + b"]" * 5000), ["group", "--rule", "immediate"],
        ["Parquet metadata 'simulplay'", "nested deeper"]),
    "Parquet metadata a number": (
        lambda d: manifest_parquet(d / "m.parquet", b"3"), ["replay"],
        ["Parquet metadata 'simulplay'", "a JSON number, not an object"]),
    "replay signature a string": (
        lambda d: manifest_parquet(d / "m.parquet", b'{"signature": "abc"}'), ["replay"],
        ["Parquet metadata 'simulplay'", "'signature' is a JSON string", "as a JSON object"]),
    "signature index out of range": (
        lambda d: manifest_parquet(d / "m.parquet", b'{"signatures": [{}], "row_signature": [0, 9]}'), ["replay"],
        ["'row_signature' holds a value that is not an index 0..0"]),
    "seq 2^63-1": (
        lambda d: parquet_trace(d / "t.parquet", seq=pa.array([2**63 - 1], pa.int64())),
        ["group", "--rule", "immediate"], ["row 1, field 'seq'", "too large (beyond ±2^53)"]),
    "seq 1e308": (
        lambda d: jsonl(d / "t.jsonl", update_line(seq=Raw("1e308"))), ["validate"],
        ["line 1, field 'seq'", "1e+308 is too large"]),
    "n_samples unsigned 2^64-1": (
        lambda d: manifest_parquet(d / "m.parquet", n_samples=pa.array([2**64 - 1, 16000], pa.uint64()),
                                   sample_rate=pa.array([16000, 16000], pa.int64())), ["replay"],
        ["row 1, field 'n_samples'", "is not a whole number 0..2^53"]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_hostile_input_is_one_line_error(cli, tmp_path, name):
    make, args, fragments = CASES[name]
    src = make(tmp_path)
    out = tmp_path / "out.csv"
    proc = cli(args[0], src, *args[1:], "--out", out, env=NO_WARNINGS)
    assert_one_line_error(proc, str(src), *fragments)
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [src.name]  # no temporary file left either


def test_many_problems_show_the_first_ten_and_a_count(cli, tmp_path):
    """25 rows with a negative time: ten lines name rows 1–10, the eleventh counts 15 more."""
    rows = "".join(f"t1,A,{i},-{i + 1},word{i},10\n" for i in range(25))
    src = tmp_path / "t.csv"
    src.write_text("talk_id,system,seq,time_s,text,source_s\n" + rows, encoding="utf-8")
    proc = cli("validate", src, env=NO_WARNINGS)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert len(lines) == 11, proc.stderr
    for i, line in enumerate(lines[:10]):
        assert line.startswith(f"simulplay: error: {src}, row {i + 1}, field 'time_s': -{i + 1} is negative")
    assert lines[10] == f"simulplay: error: {src}: … and 15 more problems"


def test_a_quoted_cell_is_cut_to_stay_readable(cli, tmp_path):
    src = tmp_path / "t.csv"
    src.write_text("talk_id,system,seq,time_s,text,source_s\n" f"t1,A,0,{'x' * 100_000},hello,10\n",
                   encoding="utf-8")
    proc = cli("validate", src)
    assert_one_line_error(proc, "row 1, field 'time_s'", "'xxxxxxxx", "…' is not a number")
    assert len(proc.stderr) < 1000


def test_digits_beyond_a_float_in_csv_say_so(cli, tmp_path):
    src = tmp_path / "t.csv"
    src.write_text("talk_id,system,seq,time_s,text,source_s\n" f"t1,A,0,{'9' * 5000},hello,10\n", encoding="utf-8")
    proc = cli("validate", src)
    assert_one_line_error(proc, "row 1, field 'time_s'", "has 5000 digits, too many for a number")


@pytest.mark.slow


def test_parquet_text_that_is_not_utf8_is_one_line_error(cli, tmp_path):
    """A byte flipped inside a Parquet string (found by bench/fuzz.py, seed 20261201, cases
    5310 and 7748): pandas only meets the bad bytes when it converts the column, long after
    the file was read; read_table validates the whole table first."""
    good = [b"t1", b"A", b"Hello"]
    bad = b"wor\xffld"  # not UTF-8
    def column(values):
        data = b"".join(values)
        offsets = pa.array([0, *np.cumsum([len(v) for v in values])], pa.int32()).buffers()[1]
        return pa.Array.from_buffers(pa.string(), len(values), [None, offsets, pa.py_buffer(data)])
    table = pa.table({"talk_id": column([good[0], good[0]]), "system": column([good[1], good[1]]),
                      "seq": pa.array([0, 1]), "time_s": pa.array([0.5, 1.0]),
                      "text": column([good[2], bad]), "source_s": pa.array([2.0, 2.0])})
    pq.write_table(table, tmp_path / "t.parquet")
    for args in (("validate", tmp_path / "t.parquet"),
                 ("group", tmp_path / "t.parquet", "--rule", "immediate", "--out", tmp_path / "r.csv")):
        proc = cli(*args)
        assert_one_line_error(proc, "t.parquet", "not a readable Parquet file", "Invalid UTF8")
    assert not (tmp_path / "r.csv").exists()
