"""The manifest's per-output checks (seq numbering, dispatch order, one source duration,
ready_s on all or none), made over the whole table at once: each problem still names its
row and field, and a sound table of many outputs comes back sorted by output and seq."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from simulplay.core.errors import InputError
from simulplay.manifest import validate_manifest


def manifest(n_outputs: int = 2, n: int = 4) -> pd.DataFrame:
    """``n_outputs`` outputs (talks t0, t1, …) of ``n`` requests, dispatched 1 s apart, rows in order."""
    rows = [{"talk_id": f"t{o}", "system": "A", "condition": "immediate", "seq": k, "dispatch_s": float(k),
             "service_s": 0.1, "audio_s": 0.5, "source_s": 10.0, "error": ""}
            for o in range(n_outputs) for k in range(n)]
    return pd.DataFrame(rows)


def edit(col, row, value):
    def apply(df):
        df = df.copy()
        df.loc[row, col] = value
        return df
    return apply


# rows are numbered from 1 in messages (row 1 is the first data row); output t1 holds rows 5–8
@pytest.mark.parametrize("change, where, what", [
    (edit("seq", 6, 0), "row 7, field 'seq'", "seq 0 repeats in output (t1, A, immediate)"),
    (edit("seq", 7, 5), "row 8, field 'seq'", "seq 5 where 3 is expected: output (t1, A, immediate) has 4 requests"),
    (edit("dispatch_s", 6, 0.5), "row 7, field 'dispatch_s'",
     "dispatch_s 0.5 of seq 2 is earlier than 1 of seq 1 in output (t1, A, immediate)"),
    (edit("source_s", 7, 11.0), "row 8, field 'source_s'", "source_s 11 differs from 10 in output (t1, A, immediate)"),
])
def test_each_per_output_problem_names_its_row_and_field(change, where, what):
    with pytest.raises(InputError) as e:
        validate_manifest(change(manifest()), "m.csv")
    assert where in str(e.value) and what in str(e.value), str(e.value)


def test_ready_s_on_some_requests_of_an_output_is_refused():
    df = manifest().assign(ready_s=[0.1, 1.1, 2.1, 3.1, 0.2, np.nan, 2.2, 3.2])
    with pytest.raises(InputError) as e:
        validate_manifest(df, "m.csv")
    assert "row 6, field 'ready_s'" in str(e.value) and "is empty while other requests of output (t1" in str(e.value)
    # on none of an output's requests, or on every one, is fine
    validate_manifest(manifest().assign(ready_s=[0.1, 1.1, 2.1, 3.1] + [np.nan] * 4), "m.csv")


def test_an_unknown_dispatch_between_known_ones_is_skipped_by_the_order_check():
    df = manifest().assign(ready_s=[0.1, 1.1, 2.1, 3.1] * 2)
    df.loc[5, "dispatch_s"] = np.nan  # seq 1 of t1: known 0, ?, 2, 3 is in order
    assert len(validate_manifest(df, "m.csv")) == 8
    df.loc[6, "dispatch_s"] = -1.0  # 0, ?, −1: backwards against the last known one
    with pytest.raises(InputError, match="dispatch_s -1 of seq 2 is earlier than 0 of seq 0"):
        validate_manifest(df, "m.csv")


def test_shuffled_rows_of_many_outputs_come_back_in_output_and_seq_order():
    df = manifest(n_outputs=50, n=7)
    shuffled = df.sample(frac=1.0, random_state=3).reset_index(drop=True)
    out = validate_manifest(shuffled, "m.csv")
    # outputs in the order of their first appearance in the file, then seq
    first = list(dict.fromkeys(shuffled["talk_id"]))
    expected = sorted(zip(df["talk_id"], df["seq"]), key=lambda r: (first.index(r[0]), r[1]))
    assert list(zip(out["talk_id"], out["seq"])) == expected
