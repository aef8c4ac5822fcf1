"""Importing SimulEval instances.log files (speech-to-text traces, speech-to-speech manifests).

The logs are written by hand in SimulEval 1.1's ``Instance.summarize()`` shape, and one
test drives SimulEval's own ``SpeechToTextInstance`` to write the log it would write.
"""

import json
import time

import pandas as pd
import pyarrow.parquet as pq
import pytest
from simuleval.data.segments import TextSegment
from simuleval.evaluator.instance import SpeechToTextInstance

from simulplay.core.errors import InputError
from simulplay.grouping import parse_rule, requests_frame
from simulplay.traces import join_texts, read_trace, streams_from_frame
from simulplay.traces.importers import import_simuleval
from tests.support.checks import assert_one_line_error
from tests.support.factories import reference_playback, trace_updates, write_jsonl


def s2t(index, prediction, delays, *, elapsed=None, wav="/data/mustc/ted_1096_{}.wav", source_length=4000.0,
        **extra):
    """One speech-to-text line as SimulEval writes it (source = soundfile info lines)."""
    line = {"index": index, "prediction": prediction, "delays": delays,
            "elapsed": elapsed if elapsed is not None else [d + 100.0 for d in delays],
            "prediction_length": len(delays), "reference": "ref",
            "source": [wav.format(index), "samplerate: 16000 Hz", "channels: 1"],
            "source_length": source_length}
    line.update(extra)
    return line


def write_log(tmp_path, lines, name="instances.log"):
    return write_jsonl(tmp_path, lines, name, ensure_ascii=False)


WORD_LOG = [
    s2t(0, "Hallo Welt , wie geht's ? </s>", [500.0, 500.0, 1500.0, 1500.0, 1500.0, 2000.0, 4000.0]),
    s2t(1, "Guten Tag", [250.0, 3750.0], elapsed=[900.0, 4100.0], source_length=3900.0),
]
CHAR_LOG = [s2t(0, "你好，世界。</s>", [300.0, 300.0, 800.0, 800.0, 800.0, 1200.0] + [4000.0] * 4)]
SPM_LOG = [s2t(0, "Tornando a New York, io sono l'insegnante. </s>",
               [500.0, 500.0, 1000.0, 1000.0, 1000.0, 1500.0, 2000.0, 2000.0, 2000.0, 2500.0, 2500.0, 3000.0, 3000.0,
                3500.0, 3500.0],
               prediction_spm=["▁Tor", "na", "ndo", "▁a", "▁New", "▁York", ",", "▁io", "▁sono", "▁l", "'", "in",
                               "segnante", ".", "▁</s>"])]
OUTPUTS = {
    "word": {"ted_1096_0": "Hallo Welt , wie geht's ?", "ted_1096_1": "Guten Tag"},
    "char": {"ted_1096_0": "你好，世界。"},
    "spm": {"ted_1096_0": "Tornando a New York, io sono l'insegnante."},
}
LOGS = {"word": WORD_LOG, "char": CHAR_LOG, "spm": SPM_LOG}


def test_units_with_equal_delays_form_one_update_and_eos_is_dropped(tmp_path):
    res = import_simuleval(write_log(tmp_path, WORD_LOG), system="A")
    assert trace_updates(res.frame, "ted_1096_0") == [(0.5, "Hallo Welt", False), (1.5, ", wie geht's", False),
                                          (2.0, "?", False)]
    assert trace_updates(res.frame, "ted_1096_1") == [(0.25, "Guten", False), (3.75, "Tag", False)]
    assert res.frame.groupby("talk_id")["source_s"].first().to_dict() == {"ted_1096_0": 4.0, "ted_1096_1": 3.9}
    assert set(res.frame["system"]) == {"A"}
    sig = res.signature
    assert (sig["importer"], sig["clock"], sig["time_source"], sig["source_s_from"], sig["unit"]) == (
        "simuleval", "source", "delays", "source_length", "word")


def test_computation_aware_clock_reads_elapsed(tmp_path):
    res = import_simuleval(write_log(tmp_path, WORD_LOG), system="A", clock="computation-aware")
    assert trace_updates(res.frame, "ted_1096_1") == [(0.9, "Guten", False), (4.1, "Tag", False)]
    assert [t for t, _, _ in trace_updates(res.frame, "ted_1096_0")] == [0.6, 1.6, 2.1]
    assert res.signature["clock"] == "computation-aware" and res.signature["time_source"] == "elapsed"


def test_character_level_log_imports_with_glue(tmp_path):
    res = import_simuleval(write_log(tmp_path, CHAR_LOG), system="A")
    assert trace_updates(res.frame, "ted_1096_0") == [(0.3, "你好", False), (0.8, "，世界", True), (1.2, "。", True)]
    assert res.signature["unit"] == "char"
    assert res.stats.loc[0, "chars"] == 6 and res.stats.loc[0, "words"] == 1


def test_spm_pieces_glue_word_continuations_and_attached_punctuation(tmp_path):
    res = import_simuleval(write_log(tmp_path, SPM_LOG), system="A")
    assert trace_updates(res.frame, "ted_1096_0") == [
        (0.5, "Torna", False), (1.0, "ndo a New", True), (1.5, "York", False), (2.0, ", io sono", True),
        (2.5, "l'", False), (3.0, "insegnante", True), (3.5, ".", True)]
    assert res.signature["unit"] == "spm"


def test_talk_id_is_the_index_without_source(tmp_path):
    line = s2t(7, "eins zwei", [100.0, 200.0])
    del line["source"]
    res = import_simuleval(write_log(tmp_path, [line]), system="A")
    assert res.frame["talk_id"].tolist() == ["7", "7"]


def simuleval_log_line(unit, emissions, wav="/data/wavs/ted_7_2.wav", n_samples=64000):
    """The line SimulEval 1.1.4 writes for a speech-to-text instance given (samples read, text) emissions."""
    ins = SpeechToTextInstance.__new__(SpeechToTextInstance)
    ins.index, ins.finish_prediction, ins.reference = 2, False, "reference"
    ins.reset()
    ins.latency_unit = unit
    ins.sample_rate_value, ins.sample_list = 16000, [0.0] * n_samples
    ins.audio_info = f"{wav}\nsamplerate: 16000 Hz\nchannels: 1"
    ins.start_time = time.time()
    for step, text in emissions:
        ins.step = step
        ins.receive_prediction(TextSegment(content=text, finished=False))
    return ins, json.dumps(ins.summarize())


@pytest.mark.parametrize("unit,emissions,expected", [
    ("word", [(8000, "So it"), (16000, ""), (24000, "begins , again."), (64000, "</s>")],
     [(0.5, "So it"), (1.5, "begins , again.")]),
    ("char", [(8000, "日本"), (24000, "語 です"), (64000, "。</s>")], [(0.5, "日本"), (1.5, "語です"), (4.0, "。")]),
])
def test_agrees_with_the_log_simuleval_writes(tmp_path, unit, emissions, expected):
    ins, line = simuleval_log_line(unit, emissions)
    res = import_simuleval(write_log(tmp_path, [line]), system="A")
    assert res.frame["talk_id"].unique().tolist() == ["ted_7_2"]
    assert [(t, x) for t, x, _ in trace_updates(res.frame, "ted_7_2")] == expected
    assert join_texts(res.frame["text"], res.frame["glue"]) == ins.prediction.replace("</s>", "").strip()
    assert res.frame["source_s"].iloc[0] == ins.source_length / 1000 == 4.0
    elapsed = import_simuleval(write_log(tmp_path, [line], "e.log"), system="A", clock="computation-aware")
    assert elapsed.frame["time_s"].iloc[0] == pytest.approx(ins.elapsed[0] / 1000)


@pytest.mark.parametrize("kind", list(LOGS))
@pytest.mark.slow
def test_round_trip_import_validate_group_joins_to_the_log_output(cli, tmp_path, kind):
    log = write_log(tmp_path, LOGS[kind])
    out = tmp_path / "trace.parquet"
    proc = cli("import-simuleval", log, "--system", "sysA", "--out", out, check=True)
    assert "ted_1096_0" in proc.stdout and "retractions" in proc.stdout and "chars" in proc.stdout
    meta = json.loads(pq.read_schema(out).metadata[b"simulplay"])
    assert meta["signatures"][0]["importer"] == "simuleval"
    cli("validate", out, check=True)
    requests = requests_frame(streams_from_frame(read_trace(out)), [parse_rule("immediate")])
    for talk, expected in OUTPUTS[kind].items():
        r = requests[requests["talk_id"] == talk]
        assert join_texts(r["text"].tolist(), r["glue"].tolist()) == expected


def s2s(index, delays, durations, source_length=6000.0):
    return {"index": index, "prediction": f"/out/wavs/{index}_pred.wav", "delays": delays, "durations": durations,
            "prediction_offset": delays[0], "elapsed": [], "intervals": [], "prediction_length": 1.0,
            "source_length": source_length, "reference": None, "source": f"/data/talk_{index}.wav"}


@pytest.mark.slow


def test_speech_to_speech_log_becomes_a_manifest_that_replays(cli, tmp_path):
    log = write_log(tmp_path, [s2s(0, [1000.0, 2500.0, 2600.0], [2000.0, 500.0, 1000.0]),
                               s2s(1, [500.0], [7000.0], source_length=7000.0)])
    manifest = tmp_path / "manifest.csv"
    cli("import-simuleval", log, "--system", "S2S", "--as-manifest", "--out", manifest, check=True)
    m = pd.read_csv(manifest)
    assert m[["talk_id", "seq", "ready_s", "audio_s", "dispatch_s"]].values.tolist() == [
        ["talk_0", 0, 1.0, 2.0, 1.0], ["talk_0", 1, 2.5, 0.5, 2.5], ["talk_0", 2, 2.6, 1.0, 2.6],
        ["talk_1", 0, 0.5, 7.0, 0.5]]
    assert set(m["condition"]) == {"logged"} and m["service_s"].isna().all()
    summary = tmp_path / "summary.csv"
    cli("replay", manifest, "--out", summary, check=True)
    s = pd.read_csv(summary).set_index("talk_id")
    ref = reference_playback([1.0, 2.5, 2.6], [2.0, 0.5, 1.0])
    assert s.loc["talk_0", "end_s"] == pytest.approx(ref["end"])
    assert s.loc["talk_0", "offset_s"] == pytest.approx(ref["end"] - 6.0)
    assert s.loc["talk_1", "offset_s"] == pytest.approx(0.5)


def test_manifest_computation_aware_clock_reads_elapsed(tmp_path):
    line = {**s2s(0, [1000.0, 2000.0], [500.0, 500.0]), "elapsed": [1300.0, 2600.0]}
    res = import_simuleval(write_log(tmp_path, [line]), system="S2S", as_manifest=True, clock="computation-aware")
    assert res.kind == "manifest"
    assert res.frame[["ready_s", "dispatch_s"]].values.tolist() == [[1.3, 1.0], [2.6, 2.0]]
    assert res.stats[["requests", "audio_s", "source_s"]].values.tolist() == [[2, 1.0, 6.0]]


def test_manifest_signature_reaches_the_replay_summary(cli, tmp_path):
    log = write_log(tmp_path, [s2s(0, [1000.0], [2000.0])])
    manifest = tmp_path / "manifest.parquet"
    cli("import-simuleval", log, "--system", "S2S", "--as-manifest", "--out", manifest, check=True)
    summary = tmp_path / "summary.parquet"
    cli("replay", manifest, "--out", summary, check=True)
    sig = json.loads(pq.read_schema(summary).metadata[b"simulplay"])["signatures"][0]
    assert sig["importer"] == "simuleval" and sig["rule"] == "logged" and "table" not in sig


BAD = {
    "broken JSON": (["{\"index\": 0, \"prediction\": "], (), ["line 1", "broken JSON", "one JSON object per line"]),
    "missing delays": ([{k: v for k, v in s2t(0, "a b", [1.0, 2.0]).items() if k != "delays"}], (),
                       ["line 1", "field 'delays'", "is missing"]),
    "lengths differ": ([WORD_LOG[1], s2t(2, "a b c", [1.0, 2.0])], (),
                       ["line 2", "field 'prediction'", "3 words", "2 delays"]),
    "elapsed shorter": ([s2t(0, "a b", [1.0, 2.0], elapsed=[1.0])], ("--clock", "computation-aware"),
                        ["line 1", "field 'elapsed'", "has 1 items but delays has 2"]),
    "delay not a number": ([s2t(0, "a b", [1.0, "soon"], elapsed=[1.0, 2.0])], (),
                           ["line 1", "field 'delays'", "is not a number"]),
    "delays backwards": ([s2t(0, "a b", [2.0, 1.0])], (), ["field 'delays'", "item 1 (1) is earlier"]),
    "zero source": ([s2t(0, "a", [1.0], source_length=0)], (), ["field 'source_length'", "is not positive"]),
    "speech output": ([s2s(0, [1.0], [2.0])], (), ["field 'durations'", "--as-manifest"]),
    "speech output, elapsed clock": ([s2s(0, [1.0], [2.0])], ("--as-manifest", "--clock", "computation-aware"),
                                     ["field 'elapsed'", "writes no elapsed times", "--clock source"]),
    "text output as manifest": ([WORD_LOG[1]], ("--as-manifest",), ["field 'durations'", "is missing"]),
    "repeated talk": ([WORD_LOG[1], WORD_LOG[1]], (), ["line 2", "talk ted_1096_1 already appears at line 1"]),
    "empty output": ([s2t(0, "</s>", [1.0])], (), ["talk ted_1096_0 has no output text"]),
    "text input": ([{**s2t(0, "a", [1.0]), "source": "ein Satz"}], (), ["field 'source'", "looks like source text"]),
    "unknown clock": ([WORD_LOG[1]], ("--clock", "wall"), ["--clock 'wall'", "source or computation-aware"]),
    "empty system": ([WORD_LOG[1]], ("--system", " "), ["--system", "is empty"]),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_logs_give_one_line_errors_and_write_nothing(cli, tmp_path, case):
    lines, extra, fragments = BAD[case]
    log = write_log(tmp_path, lines)
    out = tmp_path / ("m.csv" if "--as-manifest" in extra else "trace.parquet")
    proc = cli("import-simuleval", log, "--system", "A", "--out", out, *extra)
    assert_one_line_error(proc, str(log) if not case.startswith(("unknown", "empty system")) else "", *fragments)
    assert list(tmp_path.iterdir()) == [log]


def test_library_reports_each_bad_line(tmp_path):
    log = write_log(tmp_path, ["[1, 2]", s2t(1, "a b", [1.0]), WORD_LOG[1]])
    with pytest.raises(InputError) as e:
        import_simuleval(log, system="A")
    lines = str(e.value).splitlines()
    assert len(lines) == 2 and "line 1: is not a JSON object" in lines[0] and "line 2, field 'prediction'" in lines[1]


def test_explicit_unit_must_fit_the_log(tmp_path):
    with pytest.raises(InputError, match="--unit char"):
        import_simuleval(write_log(tmp_path, [s2t(0, "ab cd", [1.0, 2.0])]), system="A", unit="char")
    res = import_simuleval(write_log(tmp_path, [s2t(0, "ab", [1.0, 2.0])]), system="A", unit="char")
    assert res.frame["text"].tolist() == ["a", "b"] and res.frame["glue"].tolist() == [False, True]
