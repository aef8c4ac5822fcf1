"""`simulplay textlatency`: OmniSTEval's long-form text latency beside speech completion
(item 5). Expected values are worked by hand or come from the real
`omnisteval longform` CLI run on each talk alone.
"""

import json
import random
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

OMNISTEVAL = str(Path(sys.executable).with_name("omnisteval"))
HAND_A = [(1.5, "Hello world,"), (2.5, "this is"), (4.2, "test."), (6.0, "Second sentence"), (8.0, "here.")]
HAND_A_CA = [(1.7, "Hello world,"), (2.9, "this is"), (4.8, "test."), (6.5, "Second sentence"), (8.6, "here.")]
HAND_F = [(5.0, "Hello world, this is a test."), (8.5, "Second sentence here.")]
HAND_F_CA = [(5.2, "Hello world, this is a test."), (8.9, "Second sentence here.")]


def write_trace(path, streams):
    """streams: {(talk, system): (source_s, [(time_s, text), …])} as stream-per-line JSONL."""
    with open(path, "w", encoding="utf-8") as fh:
        for (talk, system), (source, ups) in streams.items():
            fh.write(json.dumps({"talk_id": talk, "system": system, "source_s": source,
                                 "updates": [{"time_s": t, "text": x} for t, x in ups]}) + "\n")
    return path


def write_segments(folder, segments, refs):
    """segments: [(wav, offset_s, duration_s)]; one reference per segment."""
    (folder / "ref.yaml").write_text("".join(f"- {{wav: {w}, offset: {o}, duration: {d}}}\n"
                                             for w, o, d in segments))
    (folder / "ref.txt").write_text("".join(r + "\n" for r in refs))
    return folder / "ref.yaml", folder / "ref.txt"


def write_summary(path, rows):
    pd.DataFrame(rows, columns=["talk_id", "system", "condition", "first_play_s", "offset_s", "source_s"]).to_csv(
        path, index=False)
    return path


@pytest.fixture
def hand(tmp_path):
    cu = write_trace(tmp_path / "cu.jsonl", {("talk0", "A"): (9.0, HAND_A), ("talk0", "F"): (9.0, HAND_F)})
    ca = write_trace(tmp_path / "ca.jsonl", {("talk0", "A"): (9.0, HAND_A_CA), ("talk0", "F"): (9.0, HAND_F_CA)})
    yml, txt = write_segments(tmp_path, [("talk0.wav", 1.0, 3.0), ("talk0.wav", 5.0, 2.5)],
                              ["Hello world, this is a test.", "Second sentence here."])
    summary = write_summary(tmp_path / "summary.csv", [("talk0", "A", "immediate", 2.0, 3.0, 9.0),
                                                        ("talk0", "F", "immediate", 5.5, 1.0, 9.0),
                                                        ("talk0", "A", "timer:w=4", 3.0, 2.0, 9.0),
                                                        ("talk0", "F", "timer:w=4", 5.5, 1.5, 9.0)])
    return {"cu": cu, "ca": ca, "yaml": yml, "txt": txt, "summary": summary, "dir": tmp_path}


def run(cli, h, *extra, out="cmp.csv"):
    return cli("textlatency", h["cu"], "--ca-trace", h["ca"], "--references", h["txt"], "--segmentation", h["yaml"],
               "--summary", h["summary"], "--a", "A", "--f", "F", "--out", h["dir"] / out, *extra, check=True)


def test_hand_worked_text_latency_beside_completion(cli, hand):
    """By hand (OmniSTEval's long-form definitions, ms relative to each segment's offset).
    A, segment 1 (offset 1000, X = 3000, |Y| = 6 words, 5 emitted: 1/γ = 3000/6 = 500):
    delays 500, 500, 1500, 1500, 3200 → YAAL = (500 + 0 + 500 + 0 + 1200)/5 = 440. Segment 2
    (offset 5000, X = 2500, |Y| = 3, 1/γ = 833.3, recording end R = 7500 − 5000 = 2500):
    1000, 1000, 3000; YAAL stops before 3000 ≥ R: (1000 + 166.7)/2 = 583.3; AL includes it:
    (1000 + 166.7 + 1333.3)/3 = 833.3. LongYAAL = 511.667, LongAL = LongLAAL = 636.667.
    F: segment 1, six words at 4000 → YAAL = 4000 − 500·(0+…+5)/6 = 2750; AL: 4000 > X, so
    d₀ = 4000. Segment 2 starts at 8500 − 5000 = 3500 ≥ R: YAAL leaves it out (its 3 words
    are late), AL scores d₀ = 3500. LongYAAL = 2750, LongAL = (4000 + 3500)/2 = 3750.
    The CA clock (A: 1.7, 2.9, 4.8, 6.5, 8.6 s) gives 941.667 and 1083.333 the same way."""
    run(cli, hand, "--per-output", hand["dir"] / "per.csv", "--lang", "en")
    per = pd.read_csv(hand["dir"] / "per.csv").set_index(["system", "condition"])
    a, f = per.loc[("A", "immediate")], per.loc[("F", "immediate")]
    assert a["long_yaal_ms"] == pytest.approx(511.6666667) and a["long_al_ms"] == pytest.approx(636.6666667)
    assert a["long_laal_ms"] == pytest.approx(636.6666667) and a["ca_long_yaal_ms"] == pytest.approx(941.6666667)
    assert a["ca_long_al_ms"] == pytest.approx(1083.333333)
    assert f["long_yaal_ms"] == 2750 and f["long_al_ms"] == 3750
    assert (a["n_units"], a["n_units_late"], f["n_units"], f["n_units_late"]) == (8, 1, 9, 3)
    assert (a["first_play_s"], a["offset_s"]) == (2.0, 3.0)
    cmp = pd.read_csv(hand["dir"] / "cmp.csv").set_index(["condition", "measure"])
    # A produces its text earlier and still finishes speaking later: δ = 3.0 − 1.0 = 2.0 s
    assert cmp.loc[("immediate", "long_yaal_ms"), "mean_a_minus_f"] == pytest.approx(511.6666667 - 2750)
    assert cmp.loc[("immediate", "long_yaal_ms"), "n_a_lower"] == 1
    assert cmp.loc[("immediate", "offset_s"), "mean_a_minus_f"] == 2.0
    assert cmp.loc[("timer:w=4", "offset_s"), "mean_a_minus_f"] == 0.5
    sig = cmp["signature"].iloc[0]
    for part in ("table:text-latency-compare", "a:A", "f:F", "text_latency:omnisteval-0.1.10/longform",
                 "tokenizer:moses:en", "unit:word", "ca_trace:ca.jsonl@", "segmentation:ref.yaml@"):
        assert part in sig, part


def talk_data(rng, talk):
    """A talk of 3 reference segments and two systems' streams (words dropped, added, delayed;
    some text after the last segment ends)."""
    refs = ["The quick brown fox jumps over the lazy dog.", "Nobody expected that, did they?",
            "Finally, we went home and slept for a long time."]
    rng.shuffle(refs)
    segs = [(f"{talk}.wav", 0.5, 3.0), (f"{talk}.wav", 4.0, 2.0), (f"{talk}.wav", 7.0, 3.5)]
    streams, aware = {}, {}
    for system, lag in (("A", 0.6), ("F", 2.5)):
        t, ups = 0.0, []
        for (_, off, dur), ref in zip(segs, refs):
            words = ref.split()
            if rng.random() < 0.5:
                words.pop(rng.randrange(len(words)))
            if rng.random() < 0.5:
                words.insert(rng.randrange(len(words)), "um,")
            k = 0
            while k < len(words):
                n = rng.randint(1, 4)
                t = max(t, off + lag + rng.uniform(0, dur))
                ups.append((round(t, 3), " ".join(words[k:k + n])))
                k += n
        streams[(talk, system)] = (11.0, ups)
        done, late = 0.0, []  # computation-aware: each update done some compute time later, in order
        for t, x in ups:
            done = round(max(done, t) + rng.uniform(0.05, 0.9), 3)
            late.append((done, x))
        aware[(talk, system)] = (11.0, late)
    return segs, refs, streams, aware


def omnisteval_cli(folder, segs, refs, words, times_ms, ca_ms, char_level, lang):
    """The real `omnisteval longform` on one talk; its scores.tsv (4 decimals)."""
    folder.mkdir()
    yml, txt = write_segments(folder, segs, refs)
    sep = "" if char_level else " "
    (folder / "hyp.jsonl").write_text(json.dumps({"source": segs[0][0], "prediction": sep.join(words),
                                                  "delays": times_ms, "elapsed": ca_ms}) + "\n")
    cmd = [OMNISTEVAL, "longform", "--speech_segmentation", str(yml), "--ref_sentences_file", str(txt),
           "--hypothesis_file", str(folder / "hyp.jsonl"), "--char_level" if char_level else "--word_level",
           "--no_quality", "--output_folder", str(folder / "out")] + (["--lang", lang] if lang else [])
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [line.split("\t") for line in (folder / "out" / "scores.tsv").read_text().splitlines()[1:]]
    return {k: float(v) for k, v in rows}


def test_a_unit_is_emitted_with_the_update_that_completes_it():
    """By hand: "Geb" at 1 s glued to "äude," at 2 s is one word "Gebäude," emitted at 2000 ms;
    with unit=char each character keeps its own update's time and whitespace is no unit."""
    from simulplay.analysis.textlatency import hypothesis_line, unit_emissions
    from tests.support.factories import stream

    s = stream([1.0, 2.0, 3.5], ["wir Geb", "äude,", "Brücken"], glue=[False, True, False])
    assert unit_emissions(s) == (["wir", "Gebäude,", "Brücken"], [1000.0, 2000.0, 3500.0])
    chars, times = unit_emissions(s, "char")
    assert "".join(chars) == "wirGebäude,Brücken" and times[:7] == [1000.0] * 6 + [2000.0] and times[-1] == 3500.0
    assert hypothesis_line("t.wav", chars, times, None, "char")["prediction"] == "wirGebäude,Brücken"


@pytest.mark.slow
@pytest.mark.parametrize("unit,lang", [("word", "en"), ("char", None)])
def test_per_talk_scores_equal_omnisteval_on_each_talk_alone(cli, tmp_path, unit, lang):
    rng = random.Random(17 if unit == "word" else 18)
    segs, refs, streams, aware = [], [], {}, {}
    for talk in ("t1", "t2"):
        s, r, st, aw = talk_data(rng, talk)
        segs, refs, streams, aware = segs + s, refs + r, streams | st, aware | aw
    cu = write_trace(tmp_path / "cu.jsonl", streams)
    ca = write_trace(tmp_path / "ca.jsonl", aware)
    yml, txt = write_segments(tmp_path, segs + [("unused.wav", 0.0, 1.0)], refs + ["Not replayed."])
    summary = write_summary(tmp_path / "s.csv", [(t, s, "immediate", 1.0, 2.0, 11.0) for t, s in streams])
    proc = cli("textlatency", cu, "--ca-trace", ca, "--references", txt, "--segmentation", yml, "--summary", summary,
               "--a", "A", "--f", "F", "--out", tmp_path / "cmp.parquet", "--per-output", tmp_path / "per.csv",
               "--unit", unit, *(["--lang", lang] if lang else []), check=True)
    assert "1 segmented talk(s) without a stream ignored" in proc.stdout
    per = pd.read_csv(tmp_path / "per.csv").set_index(["talk_id", "system"])
    for (talk, system), (_, ups) in streams.items():
        # units by hand: no update is glued, so each word (or character) has its update's time
        def units(updates):
            return [(u, t * 1000) for t, x in updates for w in x.split() for u in ([w] if unit == "word" else list(w))]

        cu_units, ca_units = units(ups), units(aware[(talk, system)][1])
        want = omnisteval_cli(tmp_path / f"{talk}{system}", [s for s in segs if s[0] == f"{talk}.wav"],
                              [r for s, r in zip(segs, refs) if s[0] == f"{talk}.wav"], [u for u, _ in cu_units],
                              [t for _, t in cu_units], [t for _, t in ca_units], unit == "char", lang)
        got = per.loc[(talk, system)]
        for metric in ("yaal", "al", "laal"):
            name = {"yaal": "LongYAAL", "al": "LongAL", "laal": "LongLAAL"}[metric]
            assert round(got[f"long_{metric}_ms"], 4) == want[f"{name} (CU)"], (talk, system, metric)
            assert round(got[f"ca_long_{metric}_ms"], 4) == want[f"{name} (CA)"], (talk, system, metric)
        assert got["n_units"] == len(cu_units)
    cmp = pd.read_parquet(tmp_path / "cmp.parquet")
    yaal = cmp[cmp["measure"] == "long_yaal_ms"].iloc[0]
    assert yaal["n_talks"] == 2 and yaal["mean_a"] == pytest.approx(per.xs("A", level="system")["long_yaal_ms"].mean())


@pytest.mark.slow


def test_refusals_are_one_line_and_write_nothing(cli, hand, tmp_path):
    h = hand
    (h["dir"] / "short.txt").write_text("Only one line.\n")
    proc = cli("textlatency", h["cu"], "--references", h["dir"] / "short.txt", "--segmentation", h["yaml"],
               "--summary", h["summary"], "--a", "A", "--f", "F", "--out", h["dir"] / "x.csv")
    assert proc.returncode == 2 and "has 1 line(s), the segmentation 2 segment(s)" in proc.stderr
    other = write_trace(h["dir"] / "other.jsonl", {("talk0", "A"): (9.0, [(1.0, "Something else entirely.")]),
                                                   ("talk0", "F"): (9.0, HAND_F_CA)})
    proc = cli("textlatency", h["cu"], "--ca-trace", other, "--references", h["txt"], "--segmentation", h["yaml"],
               "--summary", h["summary"], "--a", "A", "--f", "F", "--out", h["dir"] / "x.csv")
    assert proc.returncode == 2 and "holds other text than on the source clock" in proc.stderr
    only_a = write_summary(h["dir"] / "only_a.csv", [("talk0", "A", "immediate", 2.0, 3.0, 9.0),
                                                     ("talk0", "F", "timer:w=4", 5.5, 1.5, 9.0),
                                                     ("talk0", "A", "timer:w=4", 3.0, 2.0, 9.0)])
    proc = cli("textlatency", h["cu"], "--references", h["txt"], "--segmentation", h["yaml"], "--summary", only_a,
               "--a", "A", "--f", "F", "--out", h["dir"] / "x.csv")
    assert proc.returncode == 2 and "lacks the output of A or F for 1 talk(s)" in proc.stderr
    assert all(p.count("\n") == 1 for p in [proc.stderr]) and not (h["dir"] / "x.csv").exists()
    cli("textlatency", h["cu"], "--references", h["txt"], "--segmentation", h["yaml"], "--summary", only_a,
        "--a", "A", "--f", "F", "--out", h["dir"] / "x.csv", "--allow-incomplete", check=True)
    cmp = pd.read_csv(h["dir"] / "x.csv")
    assert set(cmp[cmp["condition"] == "immediate"]["n_talks"]) == {0} and "excluded:1" in cmp["signature"][0]
    dup = h["dir"] / "dup.csv"
    dup.write_text(h["summary"].read_text() + h["summary"].read_text().splitlines()[-1] + "\n")
    proc = cli("textlatency", h["cu"], "--references", h["txt"], "--segmentation", h["yaml"], "--summary", dup,
               "--a", "A", "--f", "F", "--out", h["dir"] / "y.csv")
    assert proc.returncode == 2 and "dup.csv, row 5, field 'talk_id': repeats an output" in proc.stderr
    proc = cli("textlatency", h["cu"], "--references", h["txt"], "--segmentation", h["yaml"], "--summary",
               h["summary"], "--a", "A", "--f", "F", "--out", h["dir"] / "y.csv", "--unit", "syllable")
    assert proc.returncode == 2 and "expected word or char" in proc.stderr


def test_a_computation_aware_trace_is_refused_as_the_source_clock(cli, hand, tmp_path):
    """A Parquet trace from an importer names its clock in its signature."""
    from simulplay.core.signature import base_signature
    from simulplay.traces import read_trace
    from simulplay.traces.writers import write_trace as write_parquet

    aware = write_parquet(read_trace(hand["ca"]), tmp_path / "aware.parquet",
                          base_signature(table="trace", importer="simulstream", clock="computation-aware"))
    proc = cli("textlatency", aware, "--references", hand["txt"], "--segmentation", hand["yaml"], "--summary",
               hand["summary"], "--a", "A", "--f", "F", "--out", tmp_path / "x.csv")
    assert proc.returncode == 2 and "is on the computation-aware clock" in proc.stderr


@pytest.mark.slow


def test_moses_tokenization_without_perl_is_a_one_line_error(cli, hand):
    env = {"PATH": str(Path(sys.executable).parent)}  # no perl on the path
    proc = cli("textlatency", hand["cu"], "--references", hand["txt"], "--segmentation", hand["yaml"], "--summary",
               hand["summary"], "--a", "A", "--f", "F", "--out", hand["dir"] / "x.csv", "--lang", "de", env=env)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "runs perl" in proc.stderr
    assert not (hand["dir"] / "x.csv").exists()
    cli("textlatency", hand["cu"], "--references", hand["txt"], "--segmentation", hand["yaml"], "--summary",
        hand["summary"], "--a", "A", "--f", "F", "--out", hand["dir"] / "x.csv", "--lang", "zh", env=env, check=True)
