"""Seeded mutations of input files: what a damaged disk, a careless edit, another tool or a
hostile user can hand simulplay (used by ``tests/robustness/test_fuzz.py`` and ``bench/fuzz.py``).

A mutator takes a file's bytes and a ``random.Random`` and returns the mutated bytes and a
few words saying what it did (printed with a failing case so it can be understood and
replayed). Families, chosen by the file's format:

* any file: byte flips, truncation, non-UTF-8 bytes, NUL bytes;
* text lines (CSV, JSON lines): deleted, duplicated and swapped lines;
* JSON lines: a deleted field, a value of another type, a huge, negative, NaN or infinite
  number, integer literals too long to convert, a long string, deep nesting, a lone
  surrogate — anywhere in the object, nested lists and objects included;
* CSV: a renamed or removed column, a cell made extreme, columns swapped;
* Parquet: a column cast to another type (text, float with NaN, huge unsigned, bool,
  timestamp, list, binary, null), dropped or renamed, extreme values, and the ``simulplay``
  or ``pandas`` metadata made broken, nested, of the wrong type or out of range.
"""

from __future__ import annotations

import csv
import io
import json
import random
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

Mutator = Callable[[bytes, random.Random], tuple[bytes, str]]

SENTINEL = "@@simulplay-fuzz@@"

#: JSON tokens written in place of a value (raw text, so non-standard ones are possible).
JSON_TOKENS = [
    "9223372036854775807", "-9223372036854775808", "18446744073709551616", "-1", "-0.0", "0", "2.5",
    "1e308", "-1e308", "1e400", "-1e400", "NaN", "Infinity", "-Infinity", "1e-320", "1" * 400, "1" * 5000,
    "true", "false", "null", '""', '" "', '"x"', '"1.5"', "[]", "{}", "[1, 2]", '{"a": 1}', '"\\ud800"',
    '"a\\udfffb"', '"\\u0000"', '"\u2581"', '"\U0001f600"',
]

#: CSV cells written in place of a value.
CSV_CELLS = [
    "", " ", "nan", "NaN", "-nan", "inf", "-inf", "Infinity", "1e308", "1e400", "-1", "-0", "0",
    "9223372036854775807", "18446744073709551616", "1" * 400, "1" * 5000, "abc", "1,5", "0x10", "TRUE",
    "\x00", "é", "\u2581", "1e-320", "2.5", "  7  ",
]


def long_string(rng: random.Random) -> str:
    return rng.choice("ab ▁.") * rng.choice((1_000, 100_000))


def deep_json(rng: random.Random) -> str:
    n = rng.choice((70, 500, 5_000, 100_000))
    return "[" * n + "]" * n if rng.random() < 0.5 else '{"a":' * n + "1" + "}" * n


# ---- any file ---------------------------------------------------------------------


def flip_bytes(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    if not data:
        return data, "flip: empty file"
    b = bytearray(data)
    k = rng.randint(1, 8)
    for _ in range(k):
        b[rng.randrange(len(b))] = rng.randrange(256)
    return bytes(b), f"flip {k} byte(s)"


def truncate(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    n = rng.randrange(len(data) + 1)
    return data[:n], f"truncate to {n} of {len(data)} bytes"


def insert_bytes(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    junk = rng.choice((b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00", b"\xfe\xff", b"\r", b"\x1b[31m"))
    at = rng.randrange(len(data) + 1)
    return data[:at] + junk + data[at:], f"insert {junk!r} at byte {at}"


BYTES: list[Mutator] = [flip_bytes, truncate, insert_bytes]

# ---- text lines ------------------------------------------------------------------


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


def delete_line(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    lines = _lines(data)
    i = rng.randrange(len(lines))
    return b"\n".join(lines[:i] + lines[i + 1:]), f"delete line {i + 1}"


def duplicate_line(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    lines = _lines(data)
    i = rng.randrange(len(lines))
    return b"\n".join(lines[:i + 1] + lines[i:]), f"duplicate line {i + 1}"


def swap_lines(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    lines = _lines(data)
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    return b"\n".join(lines), f"swap lines {i + 1} and {j + 1}"


LINES: list[Mutator] = [delete_line, duplicate_line, swap_lines]

# ---- JSON lines ------------------------------------------------------------------


def _slots(obj, path=()):
    """Every (container, key, path) inside a parsed JSON value."""
    out = []
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    for k, v in items:
        out.append((obj, k, path + (k,)))
        out.extend(_slots(v, path + (k,)))
    return out


def _json_line_edit(data: bytes, rng: random.Random, edit) -> tuple[bytes, str]:
    lines = _lines(data)
    candidates = [i for i, line in enumerate(lines) if line.strip()]
    if not candidates:
        return data, "no JSON line"
    i = rng.choice(candidates)
    try:
        obj = json.loads(lines[i])
        slots = _slots(obj)
    except (ValueError, RecursionError):  # broken by an earlier mutation
        return data, f"line {i + 1} is not JSON"
    if not slots:
        return data, f"line {i + 1} has no fields"
    container, key, path = rng.choice(slots)
    token, what = edit(container, key, rng)
    try:
        text = json.dumps(obj, ensure_ascii=False)
    except (ValueError, RecursionError):
        return data, f"line {i + 1} cannot be written back"
    if token is not None:
        text = text.replace(json.dumps(SENTINEL), token, 1)
    lines[i] = text.encode("utf-8", "surrogatepass")
    return b"\n".join(lines), f"line {i + 1} at {'/'.join(map(str, path))}: {what}"


def _delete(container, key, rng):
    if isinstance(container, dict):
        del container[key]
    else:
        container.pop(key)
    return None, "delete"


def _replace_with(token: str):
    def edit(container, key, rng):
        container[key] = SENTINEL
        return token, f"replace with {token[:30]}{'…' if len(token) > 30 else ''}"
    return edit


def json_delete(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    return _json_line_edit(data, rng, _delete)


def json_token(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    return _json_line_edit(data, rng, _replace_with(rng.choice(JSON_TOKENS)))


def json_long_string(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    return _json_line_edit(data, rng, _replace_with(json.dumps(long_string(rng))))


def json_deep(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    return _json_line_edit(data, rng, _replace_with(deep_json(rng)))


def json_scale(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """A number scaled (×−1, ×1e6, ×1e300, ÷1e6): plausible-looking but wrong values."""
    def edit(container, key, rng):
        v = container[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return None, "not a number (unchanged)"
        f = rng.choice((-1, 1e6, 1e300, 1e-6, 0))
        container[key] = SENTINEL
        return repr(float(v) * f), f"× {f:g}"
    return _json_line_edit(data, rng, edit)


JSONL: list[Mutator] = [json_delete, json_token, json_token, json_long_string, json_deep, json_scale]

# ---- CSV -------------------------------------------------------------------------


def _csv_edit(data: bytes, rng: random.Random, edit) -> tuple[bytes, str]:
    try:
        rows = list(csv.reader(io.StringIO(data.decode("utf-8"))))
    except (UnicodeDecodeError, csv.Error):
        return data, "not CSV"
    if len(rows) < 2:
        return data, "no data rows"
    what = edit(rows, rng)
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    return buf.getvalue().encode("utf-8", "surrogatepass"), what


def _rename(rows, rng):
    j = rng.randrange(len(rows[0]))
    old, rows[0][j] = rows[0][j], rng.choice(("", "x", rows[0][j].upper(), rows[0][j] + " ", rows[0][0]))
    return f"rename column {old!r} to {rows[0][j]!r}"


def _remove(rows, rng):
    j = rng.randrange(len(rows[0]))
    name = rows[0][j]
    for r in rows:
        if j < len(r):
            del r[j]
    return f"remove column {name!r}"


def _cell(rows, rng):
    i = rng.randrange(1, len(rows))
    if not rows[i]:
        return "empty row"
    j = rng.randrange(len(rows[i]))
    value = rng.choice(CSV_CELLS + [long_string(rng)])
    rows[i][j] = value
    return f"row {i} column {rows[0][j] if j < len(rows[0]) else j}: {value[:30]!r}"


def _swap_columns(rows, rng):
    j, k = rng.randrange(len(rows[0])), rng.randrange(len(rows[0]))
    for r in rows[1:]:
        if max(j, k) < len(r):
            r[j], r[k] = r[k], r[j]
    return f"swap the values of columns {j} and {k}"


def csv_rename(data, rng):
    return _csv_edit(data, rng, _rename)


def csv_remove(data, rng):
    return _csv_edit(data, rng, _remove)


def csv_cell(data, rng):
    return _csv_edit(data, rng, _cell)


def csv_swap(data, rng):
    return _csv_edit(data, rng, _swap_columns)


CSV: list[Mutator] = [csv_rename, csv_remove, csv_cell, csv_cell, csv_cell, csv_swap]

# ---- Parquet ---------------------------------------------------------------------


def _parquet_edit(data: bytes, rng: random.Random, edit) -> tuple[bytes, str]:
    try:
        table = pq.read_table(pa.BufferReader(data))
    except (pa.ArrowException, OSError):
        return data, "not Parquet"
    table, what = edit(table, rng)
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue(), what


def _cast_array(col: pa.ChunkedArray, n: int, rng: random.Random) -> tuple[pa.Array, str]:
    kind = rng.choice(("string", "float-nan", "uint64", "int64-max", "bool", "timestamp", "list", "binary",
                       "null", "dictionary", "float-extreme", "int8"))
    values = col.to_pylist()
    if kind == "string":
        return pa.array([None if v is None else str(v) for v in values], pa.string()), kind
    if kind == "float-nan":
        return pa.array([float("nan")] * n, pa.float64()), kind
    if kind == "uint64":
        return pa.array([2**64 - 1 - i for i in range(n)], pa.uint64()), kind
    if kind == "int64-max":
        return pa.array([2**63 - 1] * n, pa.int64()), kind
    if kind == "bool":
        return pa.array([i % 2 == 0 for i in range(n)], pa.bool_()), kind
    if kind == "timestamp":
        return pa.array(np.arange(n).astype("datetime64[s]")), kind
    if kind == "list":
        return pa.array([[i, i] for i in range(n)], pa.list_(pa.int64())), kind
    if kind == "binary":
        return pa.array([b"\xff\xfe" + bytes([i % 256]) for i in range(n)], pa.binary()), kind
    if kind == "null":
        return pa.nulls(n), kind
    if kind == "dictionary":
        return pa.array([str(v) for v in values]).dictionary_encode(), kind
    if kind == "int8":
        return pa.array([i % 100 for i in range(n)], pa.int8()), kind
    extreme = [rng.choice((1e308, -1e308, float("inf"), -1.0, 0.0, 5e-324, 2.0**63)) for _ in range(n)]
    return pa.array(extreme, pa.float64()), kind


def _pq_cast(table, rng):
    if not table.num_columns:
        return table, "no columns"
    j = rng.randrange(table.num_columns)
    arr, kind = _cast_array(table.column(j), table.num_rows, rng)
    name = table.column_names[j]
    return table.set_column(j, pa.field(name, arr.type), arr), f"column {name!r} as {kind}"


def _pq_drop(table, rng):
    if not table.num_columns:
        return table, "no columns"
    j = rng.randrange(table.num_columns)
    return table.remove_column(j), f"drop column {table.column_names[j]!r}"


def _pq_rename(table, rng):
    names = list(table.column_names)
    if not names:
        return table, "no columns"
    j = rng.randrange(len(names))
    old, names[j] = names[j], rng.choice(("x", names[j].upper(), names[0], ""))
    return table.rename_columns(names), f"rename column {old!r} to {names[j]!r}"


META_VALUES = [
    b"{not json", b"\xff\xfe", b"3", b'"text"', b"null", b"[]", b"[" * 5000 + b"]" * 5000,
    b'{"signature": "abc"}', b'{"signature": 5}', b'{"signature": {"rule": "\\ud800"}}',
    b'{"signatures": [1], "row_signature": [0]}', b'{"signatures": [{}], "row_signature": [7, -1]}',
    b'{"signatures": "x"}', b'{"row_signature": {"a": 1}}', b'{"table": 5}', b'{"traces": 5}',
    b'{"identity": []}', b'{"signature": {"a":' + b"[" * 60 + b"]" * 60 + b"}}",
    b'{"signature": {"n": ' + b"1" * 5000 + b"}}", b'{"signatures": [{"a": 1e400}], "row_signature": [0]}',
]


def _pq_metadata(table, rng):
    key = rng.choice((b"simulplay", b"simulplay", b"pandas"))
    value = rng.choice(META_VALUES)
    md = dict(table.schema.metadata or {})
    md[key] = value
    return table.replace_schema_metadata(md), f"metadata {key.decode()} = {value[:30]!r}"


def _pq_signature_field(table, rng):
    """One field of the stored signatures replaced by a value of another type."""
    md = dict(table.schema.metadata or {})
    if b"simulplay" not in md:
        return table, "no simulplay metadata"
    try:
        meta = json.loads(md[b"simulplay"])
        slots = _slots(meta)
    except (ValueError, RecursionError):
        return table, "metadata is not JSON"
    if not slots:
        return table, "empty metadata"
    container, key, path = rng.choice(slots)
    token = rng.choice(JSON_TOKENS)
    container[key] = SENTINEL
    md[b"simulplay"] = json.dumps(meta).replace(json.dumps(SENTINEL), token, 1).encode("utf-8", "surrogatepass")
    return table.replace_schema_metadata(md), f"metadata simulplay/{'/'.join(map(str, path))} = {token[:30]}"


def pq_cast(data, rng):
    return _parquet_edit(data, rng, _pq_cast)


def pq_drop(data, rng):
    return _parquet_edit(data, rng, _pq_drop)


def pq_rename(data, rng):
    return _parquet_edit(data, rng, _pq_rename)


def pq_metadata(data, rng):
    return _parquet_edit(data, rng, _pq_metadata)


def pq_signature_field(data, rng):
    return _parquet_edit(data, rng, _pq_signature_field)


PARQUET: list[Mutator] = [pq_cast, pq_cast, pq_cast, pq_drop, pq_rename, pq_metadata, pq_signature_field]

FAMILIES = {
    ".jsonl": JSONL * 2 + LINES + BYTES,
    ".log": JSONL * 2 + LINES + BYTES,
    ".csv": CSV * 2 + LINES + BYTES,
    ".parquet": PARQUET * 3 + BYTES,
}


def mutate(data: bytes, suffix: str, rng: random.Random, *, n: int | None = None) -> tuple[bytes, list[str]]:
    """``data`` (a file with ``suffix``) after 1–3 mutators of its format (or ``n``), and
    what each did."""
    steps = []
    for _ in range(n if n is not None else rng.choice((1, 1, 1, 2, 3))):
        mutator = rng.choice(FAMILIES[suffix])
        data, what = mutator(data, rng)
        steps.append(f"{mutator.__name__}: {what}")
    return data, steps
