"""Validation of requests tables read with `synth --requests`.

Expected rows were counted by hand: data rows are 1-based, in file order.
"""

import numpy as np
import pandas as pd
import pytest

from simulplay.core.errors import InputError
from simulplay.grouping import Splitter, parse_rule, requests_frame, split_requests
from simulplay.grouping.requests_file import read_requests
from tests.support.factories import stream


def good() -> pd.DataFrame:
    """Two outputs of talk t1: (A, immediate) with 3 requests and (F, immediate) with 2."""
    return pd.DataFrame({
        "talk_id": ["t1"] * 5, "system": ["A", "A", "A", "F", "F"], "condition": ["immediate"] * 5,
        "seq": [0, 1, 2, 0, 1], "dispatch_s": [0.0, 1.0, 1.0, 0.5, 2.0],
        "text": ["Hello there,", "my friend.", "…", "Hi", "there."], "source_s": [5.0] * 5,
        "glue": [False] * 5, "trigger": ["immediate"] * 5, "n_updates": [1] * 5, "group": [0, 1, 2, 0, 1]})


def refusal(tmp_path, df, suffix=".csv") -> str:
    path = tmp_path / f"req{suffix}"
    df.to_csv(path, index=False) if suffix == ".csv" else df.to_parquet(path)
    with pytest.raises(InputError) as e:
        read_requests(path)
    return str(e.value)


def changed(col, row, value):
    df = good()
    df[col] = df[col].astype(object)
    df.loc[row - 1, col] = value
    return df


@pytest.mark.parametrize("df,where,fragment", [
    (good().drop(columns=["text"]), None, "missing column text"),
    (changed("seq", 3, 3), "row 3, field 'seq'", "seq 3 where 2 is due"),
    (changed("seq", 2, 0), "row 2, field 'seq'", "seq 0 repeats in output (talk_id=t1, system=A"),
    (changed("seq", 2, 1.5), "row 2, field 'seq'", "1.5 is not a whole number"),
    (changed("dispatch_s", 3, 0.5), "row 3, field 'dispatch_s'", "dispatch_s 0.5 is earlier than seq 1's 1"),
    (changed("dispatch_s", 1, -0.1), "row 1, field 'dispatch_s'", "-0.1 is negative"),
    (changed("dispatch_s", 4, "inf"), "row 4, field 'dispatch_s'", "inf is not finite"),
    (changed("text", 2, ""), "row 2, field 'text'", "is empty"),
    (changed("text", 2, " \t "), "row 2, field 'text'", "is only whitespace"),
    (changed("source_s", 5, 6.0), "row 5, field 'source_s'", "source_s 6 differs from 5 (row 1) for talk t1"),
    (changed("source_s", 1, 0.0), "row 1, field 'source_s'", "0 is not positive"),
    (changed("condition", 4, "immediate:"), "row 4, field 'condition'",
     "condition 'immediate:' and 'immediate' (earlier rows) are the same rule 'immediate'"),
    (changed("condition", 4, " "), "row 4, field 'condition'", "is only whitespace"),
    (changed("n_updates", 2, 0), "row 2, field 'n_updates'", "0 is below 1"),
    (changed("group", 2, -1), "row 2, field 'group'", "-1 is below 0"),
    (changed("glue", 2, "maybe"), "row 2, field 'glue'", "'maybe' is not a boolean"),
])
def test_bad_requests_are_refused_naming_file_row_and_field(tmp_path, df, where, fragment):
    msg = refusal(tmp_path, df)
    assert msg.startswith(str(tmp_path / "req.csv")) and fragment in msg
    if where:
        assert where in msg


def test_two_labels_of_one_rule_are_refused(tmp_path):
    df = changed("condition", 4, "punct")
    df.loc[:2, "condition"] = "punct:cap=2,min_words=3"
    msg = refusal(tmp_path, df)
    assert "row 4, field 'condition'" in msg and "are the same rule 'punct:cap=2,min_words=3'" in msg


def test_every_problem_is_reported_at_once(tmp_path):
    df = changed("text", 1, "")
    df.loc[4, "dispatch_s"] = np.nan
    msg = refusal(tmp_path, df, ".parquet")
    assert len(msg.splitlines()) == 2 and "row 1, field 'text'" in msg and "row 5, field 'dispatch_s'" in msg


def test_rows_in_any_order_labels_and_defaults(tmp_path):
    df = good().drop(columns=["glue", "trigger", "n_updates", "group"]).iloc[[4, 0, 2, 3, 1]]
    df["condition"] = ["mine", "punct", "punct", "mine", "punct"]
    df.to_csv(tmp_path / "r.csv", index=False)
    got = read_requests(tmp_path / "r.csv").frame
    # outputs in order of first appearance ((t1, F, mine) first), rows in seq order
    assert got["system"].tolist() == ["F", "F", "A", "A", "A"] and got["seq"].tolist() == [0, 1, 0, 1, 2]
    assert got["_row"].tolist() == [4, 1, 2, 5, 3]
    assert got["condition"].tolist() == ["mine", "mine"] + ["punct:cap=2,min_words=3"] * 3
    assert not got["glue"].any() and (got["trigger"] == "").all() and got["n_updates"].isna().all()
    assert got["group"].tolist() == got["seq"].tolist()  # no group column: each request its own group


def test_a_good_table_reads_back_with_its_punctuation_only_request(tmp_path):
    good().to_csv(tmp_path / "r.csv", index=False)
    got = read_requests(tmp_path / "r.csv")
    assert got.frame["text"].tolist() == good()["text"].tolist()  # "…" yields no audio but is a request
    assert got.signatures is None and len(got.sha256) == 64


def test_splitting_a_grouped_table_equals_grouping_with_the_splitter():
    s = [stream([0.0, 1.0, 1.5, 3.0], ["It was extra", "ordinarily", "good, my", "friend."],
                glue=[False, True, False, False], source_s=4.0)]
    rules = [parse_rule("timer:w=2"), parse_rule("immediate")]
    for limit in (5, 12, 100):
        one_step = requests_frame(s, rules, Splitter(limit))
        two_steps = split_requests(requests_frame(s, rules), Splitter(limit))
        pd.testing.assert_frame_equal(one_step, two_steps)
    # worked out by hand: the timer group "It was extraordinarily good, my" (released at 2 s)
    # cut at 12 characters: at the space after "was", then inside the 15-letter word
    cut = requests_frame(s, rules[:1], Splitter(12))
    assert cut["text"].tolist() == ["It was", "extraordinar", "ily good, my", "friend."]
    assert cut["glue"].tolist() == [False, False, True, False]
    assert cut["seq"].tolist() == [0, 1, 2, 3] and cut["group"].tolist() == [0, 0, 0, 1]
    assert cut["dispatch_s"].tolist() == [2.0, 2.0, 2.0, 3.0]
    # immediate: one request per update; the second continues the first's word
    assert requests_frame(s, rules[1:], Splitter(12))["glue"].tolist() == [False, True, False, False]
