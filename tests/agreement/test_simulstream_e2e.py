"""From a simulstream log to an η table, through the real CLI (README: "From a simulstream log
to an η table").

Two generated systems, SeamlessStreamAtt-shaped (tests/support/simulstream_logs.py): A emits each
packet's pieces at once, F is the batched variant of the same talks (text held to every
third packet). Each log has a 20-minute talk and a 7-minute talk. Both logs are imported
under both clocks and grouped under the four rules; the first 30 s of each talk (two
minutes of source in all: 2 talks × 2 systems) are synthesized with real Piper, replayed,
and compared with η. Expected values come from the generator's plan, the log itself and
hand formulas (docs/concepts.md#the-comparison) applied to the tables the commands wrote.
"""

import json
import unicodedata

import numpy as np
import pandas as pd
import pytest

from simulplay.traces import join_texts
from tests.support.cli import run_cli
from tests.support.simulstream_logs import SPM, excerpt, seamless_log

pytestmark = pytest.mark.slow

TALKS_S = [1207.851375, 421.5]  # a 20-minute and a 7-minute talk; the last packet is fractional
EXCERPT_S = 30.0
RULES = ["immediate", "timer:w=4", "punct", "words"]
CANON = {"immediate": "immediate", "timer:w=4": "timer:w=4", "punct": "punct:cap=2,min_words=3",
         "words": "words:n=8,cap=2"}
PIPER = "piper:intra_op_threads=1"


def cli(*args, cwd):
    return run_cli(*args, cwd=cwd, check=True)


def log_text(packets):
    """The log's own detokenized output (SimulEval's spm rule), whitespace squeezed."""
    return " ".join("".join(t for p in packets for t in p["generated_tokens"]).replace(SPM, " ").split())


def packets_by_talk(path):
    """Packets per talk id, in log order (the log's metadata lines name the talks)."""
    names, out = {}, {}
    for line in path.read_text(encoding="utf-8").splitlines():
        obj = json.loads(line)
        if "metadata" in obj:
            names[obj["id"]] = obj["metadata"]["wav_name"][:-4]
            out[names[obj["id"]]] = []
        elif "id" in obj:
            out[names[obj["id"]]].append(obj)
    return out


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    d = tmp_path_factory.mktemp("e2e")
    logs = {"A": seamless_log(d / "A.jsonl", TALKS_S), "F": seamless_log(d / "F.jsonl", TALKS_S, hold=3)}
    out = {"dir": d, "logs": logs, "stdout": {}}
    for system in logs:
        for clock in ("source", "computation-aware"):
            trace = d / f"{system}.{clock}.parquet"
            out["stdout"][system, clock] = cli("import-simulstream", f"{system}.jsonl", "--system", system,
                                               "--clock", clock, "--out", trace.name, cwd=d).stdout
            cli("validate", trace.name, "--out", f"{system}.{clock}.stats.csv", cwd=d)
            cli("group", trace.name, *sum((["--rule", r] for r in RULES), []), "--out",
                f"{system}.{clock}.requests.parquet", cwd=d)
        excerpt(d / f"{system}.jsonl", d / f"{system}30.jsonl", EXCERPT_S)
        cli("import-simulstream", f"{system}30.jsonl", "--system", system, "--out", f"{system}30.parquet", cwd=d)
    cli("synth", "A30.parquet", "F30.parquet", "--rule", "immediate", "--rule", "punct", "--backend", PIPER,
        "--store", "store", "--out", "manifest.parquet", "--quiet", cwd=d)
    cli("replay", "manifest.parquet", "--out", "summary.parquet", cwd=d)
    out["eta_stdout"] = cli("eta", "summary.parquet", "--a", "A", "--f", "F", "--reference", "immediate",
                            "--draws", "2000", "--out", "eta.csv", "--per-talk", "per_talk.csv", cwd=d).stdout
    return out


def test_the_logs_are_shaped_like_seamless_streamatt(run):
    for log in run["logs"].values():
        lines = [json.loads(x) for x in log.path.read_text(encoding="utf-8").splitlines()]
        assert list(lines[0]) == ["model_loading_time"]
        assert [x for x in lines if "metadata" in x] == [
            {"id": 0, "metadata": {"wav_name": "ted_1096.wav"}}, {"id": 1, "metadata": {"wav_name": "ted_1103.wav"}}]
        for talk, seconds in zip(log.talks, TALKS_S):
            times = [p["total_audio_processed"] for p in talk.packets]
            assert times == [float(k) for k in range(1, int(seconds) + 1)] + [seconds]
            compute = [p["computation_time"] for p in talk.packets]
            assert 0.47 <= compute[0] <= 0.53 and all(0.18 <= c <= 0.25 for c in compute[1:])
            tokens = [t for p in talk.packets for t in p["generated_tokens"]]
            assert tokens.count(SPM) >= 1 and all(p["deleted_tokens"] == [] for p in talk.packets)
            for mark in ("„", "“", "(Applaus)", "(Gelächter)"):
                assert mark in talk.text
        assert sum(p["generated_tokens"][-1:] == [SPM] for t in log.talks for p in t.packets) >= 5  # lone ▁ ends


def test_import_keeps_every_character_and_makes_no_empty_update(run):
    d = run["dir"]
    for (system, clock), stdout in run["stdout"].items():
        assert "2 stream(s) imported" in stdout
        trace = pd.read_parquet(d / f"{system}.{clock}.parquet")
        assert (trace["text"].str.strip() != "").all()
        assert (trace["text"] == trace["text"].map(lambda t: " ".join(t.split()))).all()  # no whitespace runs
        for talk in run["logs"][system].talks:
            rows = trace[trace["talk_id"] == talk.talk_id]
            assert join_texts(rows["text"].tolist(), rows["glue"].tolist()) == talk.text
            speaking = [p for p in talk.packets if "".join(p["generated_tokens"]).replace(SPM, "").strip()]
            assert len(rows) == len(speaking)  # one update per packet with text
            assert rows["source_s"].iloc[0] == talk.seconds


def test_computation_aware_clock_puts_one_update_after_each_talks_end(run):
    d = run["dir"]
    for system in run["logs"]:
        source = pd.read_csv(d / f"{system}.source.stats.csv")
        aware = pd.read_csv(d / f"{system}.computation-aware.stats.csv")
        assert source["after_source_end"].tolist() == [0, 0]
        assert aware["after_source_end"].tolist() == [1, 1]  # the last packet's computation ends after it


def test_grouping_under_all_four_rules_preserves_the_text(run):
    d = run["dir"]
    for system, log in run["logs"].items():
        for clock in ("source", "computation-aware"):
            req = pd.read_parquet(d / f"{system}.{clock}.requests.parquet")
            trace = pd.read_parquet(d / f"{system}.{clock}.parquet")
            assert sorted(req["condition"].unique()) == sorted(CANON.values())
            for talk in log.talks:
                updates = trace[trace["talk_id"] == talk.talk_id]
                for rule, cond in CANON.items():
                    r = req[(req["talk_id"] == talk.talk_id) & (req["condition"] == cond)]
                    assert join_texts(r["text"].tolist(), r["glue"].tolist()) == talk.text
                    groups = r.drop_duplicates("group")
                    assert groups["n_updates"].sum() == len(updates)
                    assert (np.diff(r["dispatch_s"].to_numpy()) >= 0).all()
                    check_triggers(rule, groups, updates["time_s"].to_numpy())


def check_triggers(rule, groups, times):
    """docs/formats.md#grouping-rules by hand: immediate sends each update at its time; a timer group leaves at its
    first update + 4 s; a words group holds ≥ 8 whitespace words; punct groups end a sentence."""
    first = np.concatenate([[0], np.cumsum(groups["n_updates"].to_numpy())[:-1]])
    trig = groups["trigger"].to_numpy()
    if rule == "immediate":
        assert set(trig) == {"immediate"} and groups["dispatch_s"].tolist() == times.tolist()
    elif rule == "timer:w=4":
        t = trig == "timer"
        assert set(trig) <= {"timer", "eos"} and t.sum() > 20
        assert np.allclose(groups["dispatch_s"].to_numpy()[t], times[first[t]] + 4.0, atol=1e-9)
    elif rule == "words":
        assert (trig == "words").sum() > 20
        assert all(len(x.split()) >= 8 for x in groups["text"].to_numpy()[trig == "words"])
    else:
        assert (trig == "punct").sum() >= 1  # rare for F: its 3-s batches seldom end a sentence
        assert all(ends_sentence(x) for x in groups["text"].to_numpy()[trig == "punct"])


def ends_sentence(text):
    """A sentence terminator followed by closing marks (Unicode Pe, Pf, Pi, straight quotes) and spaces."""
    y = text
    while y and (y[-1].isspace() or y[-1] in "\"'" or unicodedata.category(y[-1]) in ("Pe", "Pf", "Pi")):
        y = y[:-1]
    return y.endswith((".", "?", "!", "…", "。", "？", "！", "؟", "।"))


def test_synthesized_excerpt_holds_the_first_thirty_seconds(run):
    d = run["dir"]
    m = pd.read_parquet(d / "manifest.parquet")
    assert (m["error"] == "").all() and set(m["backend"]) == {"piper:en_US-joe-medium"}
    assert sorted(m["condition"].unique()) == ["immediate", "punct:cap=2,min_words=3"]
    for system in ("A", "F"):
        packets = packets_by_talk(d / f"{system}30.jsonl")
        for talk, pk in packets.items():
            assert pk[-1]["total_audio_processed"] == EXCERPT_S
            for cond in m["condition"].unique():
                r = m[(m["system"] == system) & (m["talk_id"] == talk) & (m["condition"] == cond)]
                assert join_texts(r["text"].tolist(), r["glue"].tolist()) == log_text(pk)
                assert (r["source_s"] == EXCERPT_S).all()
    assert m["audio_s"].sum() > 60  # real speech, not silence
    assert np.allclose(m["audio_s"], m["n_samples"] / m["sample_rate"])


def test_replay_summary_obeys_the_playback_identities(run):
    d = run["dir"]
    s = pd.read_parquet(d / "summary.parquet")
    m = pd.read_parquet(d / "manifest.parquet")
    assert len(s) == 2 * 2 * 2  # talks × systems × conditions
    audio = m.groupby(["talk_id", "system", "condition"])["audio_s"].sum()
    for _, row in s.iterrows():
        assert row["audio_s"] == pytest.approx(audio[row["talk_id"], row["system"], row["condition"]], abs=1e-9)
        assert row["offset_s"] == pytest.approx(row["audio_s"] + row["idle_s"] - row["source_s"], abs=1e-9)
        assert row["offset_s"] == pytest.approx(row["end_s"] - row["source_s"], abs=1e-9)


def test_eta_table_follows_from_the_summary_by_hand(run):
    d = run["dir"]
    eta = pd.read_csv(d / "eta.csv")
    per_talk = pd.read_csv(d / "per_talk.csv")
    s = pd.read_parquet(d / "summary.parquet").set_index(["talk_id", "system", "condition"])
    assert list(eta.columns)[-13:] == ["condition", "n_talks", "delta_ref_s", "delta_s", "eta_s", "ci_low_s",
                                       "ci_high_s", "n_negative", "n_zero", "n_positive", "duration_part_s",
                                       "idle_part_s", "signature"]
    assert len(eta) == 1
    row = eta.iloc[0]
    ref, cond = "immediate", "punct:cap=2,min_words=3"
    talks = ["ted_1096", "ted_1103"]

    def delta(col, c):  # per talk: A − F of a summary column under condition c
        return np.array([s.loc[(t, "A", c), col] - s.loc[(t, "F", c), col] for t in talks])

    eta_talk = delta("offset_s", cond) - delta("offset_s", ref)
    eta_talk[np.abs(eta_talk) < 1e-6] = 0.0  # a tie within the default tolerance (1 µs) is 0
    assert row["condition"] == cond and row["n_talks"] == 2
    assert row["delta_ref_s"] == pytest.approx(delta("offset_s", ref).mean(), abs=1e-9)
    assert row["delta_s"] == pytest.approx(delta("offset_s", cond).mean(), abs=1e-9)
    assert row["eta_s"] == pytest.approx(eta_talk.mean(), abs=1e-9)
    assert row["eta_s"] == pytest.approx(row["delta_s"] - row["delta_ref_s"], abs=1e-9)
    dur = (delta("audio_s", cond) - delta("audio_s", ref)).mean()
    idle = (delta("idle_s", cond) - delta("idle_s", ref)).mean()
    assert row["duration_part_s"] == pytest.approx(dur, abs=1e-9)
    assert row["idle_part_s"] == pytest.approx(idle, abs=1e-9)
    assert row["eta_s"] == pytest.approx(row["duration_part_s"] + row["idle_part_s"], abs=1e-6)
    assert (row["n_negative"], row["n_zero"], row["n_positive"]) == \
        ((eta_talk < 0).sum(), (eta_talk == 0).sum(), (eta_talk > 0).sum())
    # two talks: every bootstrap mean lies between the two talks' η
    assert eta_talk.min() - 1e-9 <= row["ci_low_s"] <= row["eta_s"] <= row["ci_high_s"] <= eta_talk.max() + 1e-9
    assert per_talk.set_index("talk_id").loc[talks, "eta_s"].to_numpy() == pytest.approx(eta_talk, abs=1e-9)
    assert "draws:2000" in row["signature"] and "A vs F" in run["eta_stdout"]
