"""One parser for condition pairs FROM,TO (eta --contrast, edges --pair, content --pairs):
rule strings may hold commas, so the cut is where both sides are rules."""

import numpy as np
import pandas as pd
import pytest

from simulplay.core.errors import InputError
from simulplay.grouping import parse_pair


@pytest.mark.parametrize("text,pair", [  # expected sides written by hand (docs/formats.md#rule-strings)
    ("immediate,timer:w=4", ("immediate", "timer:w=4")),
    ("punct,timer:w=2", ("punct:cap=2,min_words=3", "timer:w=2")),
    ("punct:cap=2,min_words=3,timer:w=2", ("punct:cap=2,min_words=3", "timer:w=2")),
    ("words:n=2,cap=3,timer:w=4", ("words:n=2,cap=3", "timer:w=4")),
    ("timer:w=4,words:n=2,cap=3", ("timer:w=4", "words:n=2,cap=3")),
    ("logged , immediate", ("logged", "immediate")),  # a free condition name: one comma, kept as written
])
def test_a_pair_is_cut_where_both_sides_are_rule_strings(text, pair):
    assert parse_pair(text) == pair


@pytest.mark.parametrize("text", ["immediate", "a,b,c", "immediate,timer:w=4,cap=3", ",immediate"])
def test_anything_else_is_refused_naming_the_flag(text):
    with pytest.raises(InputError, match=f"--contrast '{text}': is not two conditions"):
        parse_pair(text, "--contrast")


SIDES = "words:n=2,cap=3,timer:w=4"
BAD = "immediate,timer:w=4,cap=3"  # timer has no cap: no cut gives two rules, and it has two commas


def summary_csv(path):
    """Two talks, systems A and F, three conditions; offsets chosen so δ differs per condition."""
    rows = []
    for t, talk in enumerate(("t1", "t2")):
        for c, cond in enumerate(("immediate", "words:n=2,cap=3", "timer:w=4")):
            for system, extra in (("A", 0.0), ("F", 1.0 + c + t)):
                rows.append({"talk_id": talk, "system": system, "condition": cond, "audio_s": 5.0 + extra,
                             "idle_s": 1.0, "offset_s": 2.0 + extra, "source_s": 10.0})
    pd.DataFrame(rows).to_csv(path, index=False)


def transcripts_parquet(path):
    rows = []
    for talk in ("t1", "t2"):
        for cond in ("immediate", "words:n=2,cap=3", "timer:w=4"):
            rows.append({"talk_id": talk, "system": "A", "condition": cond, "intended": "a b c",
                         "recognized": "a b" if cond == "timer:w=4" else "a b c", "complete": True, "error": "",
                         "audio_s": 1.0, "request_seq": np.array([0]), "request_n_samples": np.array([100]),
                         "sample_rate": 100, "piece_start_s": np.array([0.0]), "piece_end_s": np.array([1.0]),
                         "piece_error": np.array([""]), "word": np.array([], dtype=str),
                         "word_start_s": np.array([], float), "word_end_s": np.array([], float),
                         "word_piece": np.array([], np.int64)})
    pd.DataFrame(rows).to_parquet(path)


@pytest.mark.slow


def test_eta_and_content_read_the_same_pair_alike(cli, tmp_path):
    summary_csv(tmp_path / "s.csv")
    transcripts_parquet(tmp_path / "tr.parquet")
    cli("eta", tmp_path / "s.csv", "--a", "A", "--f", "F", "--reference", "immediate", "--draws", "20",
        "--contrast", SIDES, "--out", tmp_path / "e.csv", check=True)
    cli("content", tmp_path / "tr.parquet", "--pairs", SIDES, "--out", tmp_path / "c.csv", check=True)
    contrast = pd.read_csv(tmp_path / "e.contrasts.csv")
    pairs = pd.read_csv(tmp_path / "c.pairs.csv")
    assert (contrast["p1"][0], contrast["p2"][0]) == ("words:n=2,cap=3", "timer:w=4")
    assert set(zip(pairs["from_condition"], pairs["to_condition"])) == {("words:n=2,cap=3", "timer:w=4")}
    eta = cli("eta", tmp_path / "s.csv", "--a", "A", "--f", "F", "--reference", "immediate", "--contrast", BAD,
              "--out", tmp_path / "e2.csv")
    content = cli("content", tmp_path / "tr.parquet", "--pairs", BAD, "--out", tmp_path / "c2.csv")
    assert eta.returncode == content.returncode == 2
    assert f"--contrast '{BAD}': is not two conditions" in eta.stderr
    assert f"--pairs '{BAD}': is not two conditions" in content.stderr
    assert eta.stderr.split(": is not", 1)[1] == content.stderr.split(": is not", 1)[1]  # the same explanation
