"""Word timing: unambiguous alignment, availability from the trace, the compact →
playback map across idle, hand-computed added delays and the Table 17 summary."""

import itertools

import numpy as np
import pandas as pd
import pytest

from simulplay.analysis import Bootstrap
from simulplay.analysis.alignment import unambiguous_matches
from simulplay.analysis.wordtiming import output_words, to_playback, word_availability, word_timing
from simulplay.core.errors import IncompleteError, InputError
from tests.support.factories import stream


def brute_force(a, b):
    """Every alignment path (monotone, unit costs), keep the optimal ones; per intended
    unit the set of ('hit', j) / ('sub', j) / ('del',) edges used by optimal paths."""
    paths = []

    def walk(i, j, cost, edges):
        if i == len(a) and j == len(b):
            paths.append((cost, edges))
            return
        if i < len(a) and j < len(b):
            walk(i + 1, j + 1, cost + (a[i] != b[j]), edges + [(i, "hit" if a[i] == b[j] else "sub", j)])
        if i < len(a):
            walk(i + 1, j, cost + 1, edges + [(i, "del", None)])
        if j < len(b):
            walk(i, j + 1, cost + 1, edges)

    walk(0, 0, 0, [])
    best = min(c for c, _ in paths)
    used = [set() for _ in a]
    for c, edges in paths:
        if c == best:
            for i, kind, j in edges:
                used[i].add((kind, j))
    return used


def test_alignment_agrees_with_brute_force_enumeration_of_optimal_paths():
    rng = np.random.default_rng(5)
    for _ in range(300):
        a = list(rng.choice(list("abc"), rng.integers(0, 6)))
        b = list(rng.choice(list("abc"), rng.integers(0, 6)))
        match, status = unambiguous_matches(a, b)
        for i, edges in enumerate(brute_force(a, b)):
            if len(edges) == 1 and next(iter(edges))[0] == "hit":
                assert status[i] == "accepted" and match[i] == next(iter(edges))[1], (a, b, i)
            else:
                assert match[i] == -1, (a, b, i)
                assert status[i] == ("ambiguous" if any(k == "hit" for k, _ in edges) else "mismatch"), (a, b, i)


def test_ambiguous_repeated_words_are_rejected():
    match, status = unambiguous_matches(["go", "go", "now"], ["go", "now"])
    assert status == ["ambiguous", "ambiguous", "accepted"] and match.tolist() == [-1, -1, 1]
    match, status = unambiguous_matches("the cat and the dog".split(), ["the", "dog"])
    assert status == ["ambiguous", "mismatch", "mismatch", "ambiguous", "accepted"]
    match, status = unambiguous_matches(["the", "the"], ["the", "the"])  # repeated, but not ambiguous
    assert status == ["accepted", "accepted"] and match.tolist() == [0, 1]


def test_playback_mapping_across_an_idle_gap_is_exact():
    # part 0: compact [0, 2) plays from 1; part 1: compact [2, 5) waits for readiness at 10 (7 s idle)
    q, d, p = np.array([0.0, 2.0]), np.array([2.0, 3.0]), np.array([1.0, 10.0])
    u = np.array([0.5, 2.0, 2.5, 5.0, 0.0])
    t = to_playback(u, q, d, p)
    assert t[:4].tolist() == [1.5, 3.0, 10.5, 13.0]  # an end at the join belongs to the earlier part
    assert np.isnan(t[4]) and np.isnan(to_playback(np.array([1.0]), q[:0], d[:0], p[:0])[0])


def test_a_word_inherits_the_latest_availability_of_its_characters():
    s = stream([0.0, 1.5, 3.0], ["Hel", "lo world", "again."], glue=[False, True, False])
    words, avail = word_availability(s)
    assert words == ["Hello", "world", "again."] and avail.tolist() == [1.5, 1.5, 3.0]


def transcript_row(words, starts, ends, pieces=((0.0, 100.0),), word_piece=None):
    return {"word": words, "word_start_s": np.array(starts, float), "word_end_s": np.array(ends, float),
            "word_piece": np.array(word_piece if word_piece is not None else [0] * len(words)),
            "piece_start_s": np.array([a for a, _ in pieces]), "piece_end_s": np.array([b for _, b in pieces])}


def test_hand_computed_added_delays():
    intended = "Hello, big world — again!"
    avail = np.array([1.0, 1.0, 2.0, 2.0, 4.0])
    tr = transcript_row(["hello", "big", "world", "again"], [0.1, 0.6, 1.2, 2.0], [0.4, 1.0, 1.5, 2.5])
    q, d, p = np.array([0.0, 1.0]), np.array([1.0, 2.0]), np.array([2.0, 6.5])
    w = output_words(intended, avail, tr, q, d, p)
    assert w["status"].tolist() == ["accepted", "accepted", "accepted", "punctuation", "accepted"]
    assert w["unit"].tolist() == ["hello", "big", "world", "", "again"]
    assert w["play_end_s"].tolist()[:3] == [2.4, 3.0, 7.0] and w["play_end_s"][4] == pytest.approx(8.0)
    expected = [2.4 - 1.0, 3.0 - 1.0, 7.0 - 2.0, np.nan, 6.5 + 1.5 - 4.0]
    np.testing.assert_allclose(w["added_delay_s"], expected, rtol=0, atol=1e-12)


def test_invalid_times_stay_unknown_never_zero():
    tr = transcript_row(["a", "b", "c", "d"], [0.1, 0.5, np.nan, 2.9], [0.3, 0.5, 1.0, 3.2],
                        pieces=((0.0, 3.0),))
    w = output_words("a b c d", np.zeros(4), tr, np.array([0.0]), np.array([3.0]), np.array([0.0]))
    assert w["status"].tolist() == ["accepted", "invalid_time", "invalid_time", "invalid_time"]
    assert w["added_delay_s"].isna().tolist() == [False, True, True, True]


# ---- the Table 17 summary --------------------------------------------------------------

TALKS = {"t1": "alpha beta gamma delta", "t2": "one two three four five", "t3": "red green blue"}
SHIFT = {"t1": 2.0, "t2": -1.0, "t3": 3.0}  # playback start of the grouped condition minus the reference's


def table17_inputs(drop_word=None):
    trows, prows, streams = [], [], []
    for talk, text in TALKS.items():
        words = text.split()
        streams.append(stream(np.arange(len(words), dtype=float), words, talk_id=talk, system="A", source_s=20.0))
        for cond, start in (("immediate", 5.0), ("timer:w=4", 5.0 + SHIFT[talk])):
            rec = list(words)
            if drop_word == (talk, cond):
                rec[1] = "zzz"  # recognized wrongly in one condition only: out of the common subset
            ends = 0.5 + np.arange(len(words))
            trows.append({"talk_id": talk, "system": "A", "condition": cond, "intended": text, "complete": True,
                          "error": "", "request_seq": np.array([0]), "request_n_samples": np.array([10_000]),
                          "sample_rate": 1000, **transcript_row(rec, ends - 0.3, ends)})
            prows.append({"talk_id": talk, "system": "A", "condition": cond, "seq": 0, "audio_s": 10.0,
                          "play_s": start})
    return pd.DataFrame(trows), pd.DataFrame(prows), streams


def test_table17_changes_bootstrap_and_lower_median_count():
    tr, parts, streams = table17_inputs(drop_word=("t2", "timer:w=4"))
    boot = Bootstrap(draws=5, seed=7, method="linear")  # few draws: the ends depend on which talks were drawn
    res = word_timing(tr, [{}] * len(tr), parts, streams, reference="immediate", boot=boot)
    row = res.table.iloc[0]
    assert row["condition"] == "timer:w=4" and row["n_talks"] == 3 and row["n_lower_median"] == 1
    shifts = np.array([SHIFT[t] for t in sorted(TALKS)])
    assert row["delta_median_s"] == pytest.approx(shifts.mean()) and row["delta_p90_s"] == pytest.approx(shifts.mean())
    # the documented convention drawn with NumPy alone: default_rng(seed), one draws × talks matrix
    idx = np.random.default_rng(7).integers(0, 3, size=(5, 3))
    low, high = np.quantile(shifts[idx].mean(axis=1), [0.025, 0.975], method="linear")
    assert (row["median_ci_low_s"], row["median_ci_high_s"]) == pytest.approx((low, high))
    assert row["n_common_words"] == 4 + 4 + 3  # t2's second word is unmatched in one condition
    per = res.per_talk.set_index(["talk_id", "condition"])
    assert per.loc[("t2", "immediate"), "n_accepted"] == 5 and per.loc[("t2", "immediate"), "n_common"] == 4
    # reference delays by hand: word i of t1 ends at 5 + 0.5 + i, available at i → 5.5 s each
    assert per.loc[("t1", "immediate"), "median_s"] == pytest.approx(5.5)
    common = res.words[res.words["common"]]
    assert (common["status"] == "accepted").all() and len(common) == 2 * 11


def test_timing_needs_the_trace_of_the_same_text():
    tr, parts, streams = table17_inputs()
    streams[0] = stream([0.0, 1.0], ["alpha beta", "gamma omega"], talk_id="t1", system="A", source_s=20.0)
    with pytest.raises(InputError, match=r"intended text of output \(talk_id=t1.*differs from the trace's "
                                         r"joined text at word 4"):
        word_timing(tr, [{}] * len(tr), parts, streams[:], reference="immediate")
    tr, parts, streams = table17_inputs()
    with pytest.raises(InputError, match="no trace stream for talk t2"):
        word_timing(tr, [{}] * len(tr), parts, streams[:1], reference="immediate")


def test_incomplete_transcripts_are_refused_and_allowed_ones_drop_their_talk():
    tr, parts, streams = table17_inputs()
    tr.loc[1, ["complete", "error"]] = [False, "window 0: decoding capacity reached"]
    with pytest.raises(IncompleteError, match="talk_id=t1"):
        word_timing(tr, [{}] * len(tr), parts, streams, reference="immediate")
    res = word_timing(tr, [{}] * len(tr), parts, streams, reference="immediate", allow_incomplete=True)
    assert res.table.iloc[0]["n_talks"] == 2 and len(res.excluded) == 2  # the output and its talk
    assert all(s["excluded"] == 2 for s in res.table_signatures)


def test_unknown_reference_is_named():
    tr, parts, streams = table17_inputs()
    with pytest.raises(InputError, match="no condition 'punct:cap=2,min_words=3'"):
        word_timing(tr, [{}] * len(tr), parts, streams, reference="punct")


@pytest.mark.parametrize("n", [1, 2, 3])
def test_alignment_of_identical_sequences_accepts_everything(n):
    words = list(itertools.islice(itertools.cycle(["x", "y"]), n * 3))
    match, status = unambiguous_matches(words, words)
    assert status == ["accepted"] * len(words) and match.tolist() == list(range(len(words)))


def test_common_words_are_counted_per_panel_not_across_backends():
    import pandas as pd

    from simulplay.analysis.wordtiming import ACCEPTED, _mark_common

    rows = []
    for backend, conds in (("x", ["immediate", "timer:w=2", "timer:w=4"]), ("y", ["immediate", "timer:w=4"])):
        for c in conds:
            rows.append({"talk_id": "t", "system": "A", "condition": c, "backend": backend, "word_index": 0,
                         "status": ACCEPTED, "added_delay_s": 1.0})
    words = pd.DataFrame(rows)
    keys = ["talk_id", "system", "condition", "backend"]
    marked, labels = _mark_common(words, keys, ["immediate", "timer:w=2", "timer:w=4"], False, "t")
    assert labels == [] and marked["common"].all() and len(marked) == 5
