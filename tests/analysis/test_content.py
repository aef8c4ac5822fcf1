"""Content scoring: normalizations, edit counts (jiwer), rates and pooled counts, pairs,
and fail-closed handling of incomplete transcripts (hand-made transcripts)."""

import jiwer
import numpy as np
import pandas as pd
import pytest

from simulplay.analysis.content import (
    DELETION_NOTE,
    edit_counts,
    normalize_token,
    score_content,
    tokens,
)
from simulplay.core.errors import IncompleteError, InputError
from simulplay.core.signature import format_signature
from simulplay.grouping import parse_pair


def test_punctuation_retaining_tokens_are_lowercased_whitespace_tokens():
    assert tokens("Hello, World!  It's — fine.", "punct") == ["hello,", "world!", "it's", "—", "fine."]


def test_normalized_tokens_keep_unicode_letters_numbers_and_ascii_apostrophes_only():
    assert tokens("Straße, café's 3½ U.S.-made — ‘quoted’ l’été 42!", "normalized") == [
        "straße", "café's", "3½", "usmade", "quoted", "lété", "42"]
    assert normalize_token("—") == "" and normalize_token("ÉCOLE") == "école"


def test_edit_counts_hand_example_and_rate_identity():
    c = edit_counts(["a", "b", "c", "d"], ["a", "x", "c", "e", "f"])
    assert (c["hits"], c["substitutions"], c["deletion_mismatches"], c["insertions"]) == (2, 2, 0, 1)
    assert c["intended_words"] == 4 and c["recognized_words"] == 5 and c["error_rate_pct"] == 75.0
    c = edit_counts(["a", "b", "c"], ["a"])
    assert c["deletion_mismatches"] == 2 and c["error_rate_pct"] == pytest.approx(200 / 3)


def test_empty_sides():
    assert edit_counts([], ["x", "y"])["insertions"] == 2 and np.isnan(edit_counts([], ["x"])["error_rate_pct"])
    assert edit_counts(["a"], [])["deletion_mismatches"] == 1
    assert edit_counts([], [])["intended_words"] == 0


@pytest.mark.parametrize("text,pair", [
    ("immediate,timer:w=4", ("immediate", "timer:w=4")),
    ("immediate,punct", ("immediate", "punct:cap=2,min_words=3")),
    ("punct:cap=2,min_words=3,timer:w=4", ("punct:cap=2,min_words=3", "timer:w=4")),
])
def test_pairs_parse_with_rule_parameters(text, pair):
    assert parse_pair(text) == pair


def test_a_pair_needs_two_conditions():
    with pytest.raises(InputError, match="is not two conditions"):
        parse_pair("immediate")


def transcripts(rows):
    """rows: (talk, condition, intended, recognized[, complete, error])."""
    out = []
    for r in rows:
        talk, cond, intended, recognized, *rest = r
        complete, error = rest if rest else (True, "")
        out.append({"talk_id": talk, "system": "A", "condition": cond, "backend": "b", "realization": 0,
                    "intended": intended, "recognized": recognized, "complete": complete, "error": error})
    return pd.DataFrame(out)


ROWS = [
    ("t1", "immediate", "The cat sat on the mat.", "the cat sat on the mat"),
    ("t1", "timer:w=4", "The cat sat on the mat.", "the cat on the mat"),
    ("t2", "immediate", "A dog barked loudly today.", "a dog barked loudly today extra words"),
    ("t2", "timer:w=4", "A dog barked loudly today.", "a frog barked today"),
    ("t3", "immediate", "Birds fly south.", "birds fly south"),
    ("t3", "timer:w=4", "Birds fly south.", "birds fly south"),
]


def test_rates_are_equal_talk_means_and_counts_are_pooled():
    df = transcripts(ROWS)
    res = score_content(df, [{"rule": c} for c in df["condition"]], pairs=[("immediate", "timer:w=4")])
    per = res.per_output[res.per_output["normalization"] == "normalized"].set_index(["talk_id", "condition"])
    assert per.loc[("t1", "timer:w=4"), "deletion_mismatches"] == 1
    assert per.loc[("t2", "immediate"), "insertions"] == 2
    assert per.loc[("t2", "timer:w=4"), ["substitutions", "deletion_mismatches"]].tolist() == [1, 1]
    row = res.table[(res.table["condition"] == "timer:w=4") & (res.table["normalization"] == "normalized")].iloc[0]
    assert row["intended_words"] == 14 and row["deletion_mismatches"] == 2 and row["n_talks"] == 3
    assert row["mean_error_rate_pct"] == pytest.approx((100 / 6 + 200 / 5 + 0) / 3)  # not the pooled 3/14
    assert row["pooled_error_rate_pct"] == pytest.approx(300 / 14)
    pair = res.pairs[res.pairs["normalization"] == "normalized"].iloc[0]
    assert (pair["deletion_mismatches_from"], pair["deletion_mismatches_to"]) == (0, 2)
    assert pair["n_talks_more_deletions"] == 2 and pair["n_talks_higher_rate"] == 1
    assert pair["mean_error_rate_change_pct"] == pytest.approx((100 / 6 + 200 / 5 - 0 - 40) / 3)
    punct = res.per_output[(res.per_output["normalization"] == "punct")].set_index(["talk_id", "condition"])
    assert punct.loc[("t1", "immediate"), "substitutions"] == 1  # lowercased, but "mat" ≠ "mat."


def test_every_table_labels_deletions_as_recognition_mismatches():
    df = transcripts(ROWS)
    res = score_content(df, [{} for _ in range(len(df))], pairs=[("immediate", "timer:w=4")])
    for table, sigs in ((res.table, res.table_signatures), (res.pairs, res.pair_signatures),
                        (res.per_output, res.per_output_signatures)):
        assert any(c.startswith("deletion_mismatches") for c in table.columns)
        assert "deletions" not in table.columns
        assert sigs and all(DELETION_NOTE in format_signature(s) for s in sigs)


def test_incomplete_transcripts_fail_closed_unless_allowed():
    df = transcripts(ROWS[:2] + [("t2", "immediate", "x y", "", False, "window 0: decoding capacity reached")]
                     + ROWS[3:])
    assert len(df) == len(ROWS)
    with pytest.raises(IncompleteError, match=r"1 incomplete transcript.*talk_id=t2.*condition=immediate.*"
                                              r"decoding capacity.*--allow-incomplete"):
        score_content(df, [{}] * len(df))
    res = score_content(df, [{}] * len(df), pairs=[("immediate", "timer:w=4")], allow_incomplete=True)
    assert len(res.excluded) == 1 and all(s["excluded"] == 1 for s in res.table_signatures)
    assert set(res.pairs["n_talks"]) == {2}  # t2 lacks its immediate output


def test_a_pair_must_name_conditions_that_exist():
    df = transcripts(ROWS)
    with pytest.raises(InputError, match="no condition 'punct:cap=2,min_words=3'"):
        score_content(df, [{}] * len(df), pairs=[("immediate", "punct")])


def test_rate_agrees_with_jiwer_wer():
    ref, hyp = "one two three four five six".split(), "one too three five six seven eight".split()
    c = edit_counts(ref, hyp)
    assert c["error_rate_pct"] == pytest.approx(100 * jiwer.wer(" ".join(ref), " ".join(hyp)))
