"""What the listener got under each commit policy, worked by hand on the stream of
tests/grouping/test_commit.py (final hypothesis "Das ist gut, weil es schneit.")."""

import json

import numpy as np
import pandas as pd
import pytest

from simulplay.analysis.spoken import spoken_table
from simulplay.grouping import parse_commit
from tests.grouping.test_commit import revising


def rows(*policies):
    table, sig = spoken_table([revising()], [parse_commit(p) for p in policies])
    return table.set_index("commit"), sig


def test_eager_speaks_a_word_the_final_hypothesis_does_not_hold():
    t, _ = rows("eager")
    r = t.loc["eager"]
    # spoken "Das ist gut., weil es regnet schneit." against "Das ist gut, weil es schneit.": normalized,
    # [das ist gut weil es regnet schneit] against 6 words: one insertion, 1/6; characters: "regnet " is 7 of 27
    counts = ("words_final", "words_spoken", "spoken_then_retracted", "retracted_chars_spoken")
    assert [r[c] for c in counts] == [6, 7, 2, 8]
    assert r["wer_pct"] == pytest.approx(100 / 6) and r["cer_pct"] == pytest.approx(700 / 27)
    assert (r["lag_p50_s"], r["lag_p90_s"], r["lag_max_s"]) == (0.0, 0.0, 0.0)
    # the stream retracts "." (a word cut into) and " regnet": 2 of the final 6 words
    assert r["normalized_erasure"] == pytest.approx(2 / 6)


def test_local_agreement_speaks_the_final_text_later():
    t, sig = rows("stable:k=2", "final")
    r = t.loc["stable:k=2"]
    assert (r["words_spoken"], r["spoken_then_retracted"], r["wer_pct"], r["cer_pct"]) == (6, 0, 0.0, 0.0)
    # lags 1 2 1 2 1 0: sorted 0 1 1 1 2 2, p50 = 1, p90 at rank 4.5 = 2
    assert (r["lag_p50_s"], r["lag_p90_s"], r["lag_max_s"]) == (1.0, 2.0, 2.0)
    assert t.loc["final (oracle)", "lag_max_s"] == 0.0
    assert sig["commit"] == ["stable:k=2", "final"] and sig["oracle"] == "non-causal: final"


def test_the_spoken_command_prints_and_writes_the_table(cli, tmp_path):
    s = revising()
    line = {"talk_id": s.talk_id, "system": s.system, "source_s": s.source_s,
            "updates": [{"time_s": float(t), "text": x, "glue": bool(g), "retract": int(r)}
                        for t, x, g, r in zip(s.times, s.texts, s.glue, s.retract)]}
    (tmp_path / "t.jsonl").write_text(json.dumps(line) + "\n", encoding="utf-8")
    proc = cli("spoken", tmp_path / "t.jsonl", "--commit", "eager", "--commit", "hold:t=1",
               "--out", tmp_path / "s.csv")
    assert proc.returncode == 0, proc.stderr
    df = pd.read_csv(tmp_path / "s.csv")
    assert df["commit"].tolist() == ["eager", "hold:t=1"]
    assert df["spoken_then_retracted"].tolist() == [2, 0]
    assert np.isclose(df.loc[1, "lag_max_s"], 2.0)


def test_commit_families_take_the_grid_syntax_of_the_sweep(cli, tmp_path):
    from simulplay.core.errors import InputError
    from simulplay.grouping.grid import parse_commit_grids

    grids = parse_commit_grids(["stable:k=1..4", "hold:t=0.25..1:0.25", "mask:k=0,3"])
    assert [p.canonical() for g in grids for p in g.rules()] == [
        "stable:k=1", "stable:k=2", "stable:k=3", "stable:k=4", "hold:t=0.25", "hold:t=0.5", "hold:t=0.75",
        "hold:t=1", "mask:k=0", "mask:k=3"]
    with pytest.raises(InputError, match="unknown parameter 'n' for commit policy 'mask'"):
        parse_commit_grids(["mask:n=1..3"])
    s = revising()
    line = {"talk_id": s.talk_id, "system": s.system, "source_s": s.source_s,
            "updates": [{"time_s": float(t), "text": x, "glue": bool(g), "retract": int(r)}
                        for t, x, g, r in zip(s.times, s.texts, s.glue, s.retract)]}
    (tmp_path / "t.jsonl").write_text(json.dumps(line) + "\n", encoding="utf-8")
    proc = cli("spoken", tmp_path / "t.jsonl", "--commit", "mask:k=0..2", "--out", tmp_path / "s.csv")
    assert proc.returncode == 0, proc.stderr
    df = pd.read_csv(tmp_path / "s.csv")
    # mask:k=0 re-speaks the words cut into (2 retracted); k=1 and k=2 wait long enough to take nothing back
    assert df["commit"].tolist() == ["mask:k=0", "mask:k=1", "mask:k=2"]
    assert df["spoken_then_retracted"].tolist() == [2, 0, 0]


def test_the_error_rates_are_jiwers():
    """WER and CER as rapidfuzz's Levenshtein distances equal jiwer's on random word lists
    (the banded algorithm a hint picks is exact too)."""
    import random

    import jiwer

    from simulplay.analysis.content import edit_counts
    from simulplay.analysis.spoken import char_error_pct, word_error_pct

    rng = random.Random(1)
    vocab = ["das", "ist", "gut", "weil", "es", "regnet", "schneit", "ä", "straße"]
    for _ in range(100):
        ref = [rng.choice(vocab) for _ in range(rng.randint(1, 12))]
        hyp = [rng.choice(vocab) for _ in range(rng.randint(0, 14))]
        assert word_error_pct(ref, hyp) == pytest.approx(edit_counts(ref, hyp)["error_rate_pct"])
        cer = 100 * jiwer.cer(" ".join(ref), " ".join(hyp)) if hyp else 100.0
        assert char_error_pct(ref, hyp) == pytest.approx(cer) == pytest.approx(char_error_pct(ref, hyp, hint=1))
