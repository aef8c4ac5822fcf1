"""Importing simulstream metric logs (JSON lines: model loading, talk metadata, packets)."""

import json
import wave

import numpy as np
import pyarrow.parquet as pq
import pytest
import soundfile
from simuleval.evaluator.instance import TextOutputInstance

from simulplay.core.errors import InputError
from simulplay.grouping import parse_rule, requests_frame
from simulplay.traces import join_texts, read_trace, streams_from_frame
from simulplay.traces.importers import import_simulstream
from simulplay.traces.importers.wavinfo import wav_frames
from tests.support.checks import assert_one_line_error
from tests.support.factories import trace_updates, write_jsonl


def packet(talk, audio, compute, generated, deleted=()):
    return {"id": talk, "total_audio_processed": audio, "computation_time": compute,
            "generated_tokens": list(generated), "deleted_tokens": list(deleted)}


def meta(talk, wav):
    return {"id": talk, "metadata": {"wav_name": wav}}


# Two interleaved talks; client id 11 is reused by a third talk after the first ends.
LOG = [
    {"model_loading_time": 3.25},
    meta(11, "tst/talk_a.wav"),
    packet(11, 1.0, 0.4, ["▁Tor", "na"]),
    meta(22, "tst/talk_b.wav"),
    packet(11, 2.0, 1.5, []),  # an empty packet: no update, but it occupies the processor
    packet(22, 1.0, 0.25, ["▁Hello"]),
    packet(11, 3.0, 0.5, ["ndo", "▁a", "▁New", "▁York"]),  # continues the word "Torna"
    packet(11, 4.0, 0.25, [",", "▁io", "▁sono", "."]),  # attaching punctuation first
    packet(22, 2.5, 0.25, ["▁world", "!"]),
    packet(11, 4.5, 0.125, []),
    meta(11, "tst/talk_d.wav"),
    packet(11, 0.5, 0.25, ["▁Ciao", "!"]),
]
OUTPUTS = {"talk_a": "Tornando a New York, io sono.", "talk_b": "Hello world!", "talk_d": "Ciao!"}

# A re-translation: packet 2 retracts "▁a ▁tu" and re-emits "▁a ▁tutti .".
RETRANSLATION = [
    meta(5, "talk_c.wav"),
    packet(5, 1.0, 0.5, ["▁Grazie", "▁a", "▁tu"]),
    packet(5, 2.0, 1.5, ["▁a", "▁tutti", "."], deleted=["▁a", "▁tu"]),
    packet(5, 3.0, 0.25, ["▁Ciao"]),
]


def write_log(tmp_path, lines, name="metrics.jsonl"):
    return write_jsonl(tmp_path, lines, name)


def test_source_clock_one_update_per_packet_with_text(tmp_path):
    res = import_simulstream(write_log(tmp_path, LOG), system="B")
    assert trace_updates(res.frame, "talk_a") == [(1.0, "Torna", False), (3.0, "ndo a New York", True),
                                                  (4.0, ", io sono.", True)]
    assert trace_updates(res.frame, "talk_b") == [(1.0, "Hello", False), (2.5, "world!", False)]
    assert trace_updates(res.frame, "talk_d") == [(0.5, "Ciao!", False)]
    assert res.frame["talk_id"].unique().tolist() == ["talk_a", "talk_b", "talk_d"]
    assert res.frame.groupby("talk_id", sort=False)["source_s"].first().tolist() == [4.5, 2.5, 0.5]
    sig = res.signature
    assert (sig["importer"], sig["clock"], sig["source_s_from"], sig["retractions"]) == (
        "simulstream", "source", "last total_audio_processed", "keep")
    assert "offline_upper_bound" not in sig


def test_computation_aware_clock_queues_packets(tmp_path):
    res = import_simulstream(write_log(tmp_path, LOG), system="B", clock="computation-aware")
    # talk_a: 1.0+0.4 = 1.4; the empty packet runs 2.0–3.5; packet 3 waits for it: 3.5+0.5 = 4.0; then 4.0+0.25.
    assert [t for t, _, _ in trace_updates(res.frame, "talk_a")] == [1.4, 4.0, 4.25]
    assert [t for t, _, _ in trace_updates(res.frame, "talk_b")] == [1.25, 2.75]
    assert res.signature["time_source"] == "queued computation_time"


def test_stats_count_updates_words_retractions_and_characters(tmp_path):
    res = import_simulstream(write_log(tmp_path, LOG + RETRANSLATION), system="B", retractions="final")
    s = res.stats.set_index("talk_id")
    assert s.loc["talk_a", ["updates", "words", "retractions", "chars"]].tolist() == [3, 6, 0, 29]
    assert s.loc["talk_c", ["updates", "words", "retractions", "retracted_tokens"]].tolist() == [3, 4, 1, 2]


def test_retraction_is_refused_on_request_naming_talk_and_packet(tmp_path):
    log = write_log(tmp_path, RETRANSLATION)
    with pytest.raises(InputError) as e:
        import_simulstream(log, system="B", retractions="refuse")
    assert str(e.value) == (f"{log}, line 3, field 'deleted_tokens': talk talk_c: packet 2 retracts 2 token(s) "
                            "emitted earlier (a re-translation policy) (expected no deleted tokens, or --retractions "
                            "keep (a revising trace for a commit policy) or final (keeps only text never deleted, "
                            "an offline upper bound))")


def test_final_keeps_text_never_deleted_available_when_last_emitted(tmp_path):
    res = import_simulstream(write_log(tmp_path, RETRANSLATION), system="B", retractions="final")
    assert trace_updates(res.frame, "talk_c") == [(1.0, "Grazie", False), (2.0, "a tutti.", False),
                                                  (3.0, "Ciao", False)]
    assert res.signature["retractions"] == "final" and res.signature["offline_upper_bound"] is True


def spm_reference(lines):
    """Surviving pieces per talk, detokenized by SimulEval's spm convention (simulstream's `simuleval`)."""
    tokens, talk_of, out = {}, {}, {}
    for x in lines:
        if "metadata" in x:
            talk_of[x["id"]] = x["metadata"]["wav_name"].rsplit("/", 1)[-1][:-4]
            tokens[talk_of[x["id"]]] = []
        elif "id" in x:
            kept = tokens[talk_of[x["id"]]]
            del kept[len(kept) - len(x["deleted_tokens"]):]
            kept.extend(x["generated_tokens"])
    for talk, pieces in tokens.items():
        ins = TextOutputInstance.__new__(TextOutputInstance)
        ins.latency_unit, ins.prediction_list = "spm", pieces
        out[talk] = ins.prediction
    return out


def test_joined_updates_agree_with_simuleval_spm_detokenization(tmp_path):
    lines = LOG + RETRANSLATION
    res = import_simulstream(write_log(tmp_path, lines), system="B", retractions="final")
    expected = spm_reference(lines)
    assert expected == {**OUTPUTS, "talk_c": "Grazie a tutti. Ciao"}
    for talk, text in expected.items():
        rows = res.frame[res.frame["talk_id"] == talk]
        assert join_texts(rows["text"].tolist(), rows["glue"].tolist()) == text


def test_whitespace_only_packet_still_separates_words(tmp_path):
    lines = [meta(1, "w.wav"), packet(1, 1.0, 0.1, ["▁Anno"]), packet(1, 2.0, 0.1, ["▁"]),
             packet(1, 3.0, 0.1, ["1", "9"])]
    res = import_simulstream(write_log(tmp_path, lines), system="B")
    assert trace_updates(res.frame, "w") == [(1.0, "Anno", False), (3.0, "19", False)]


@pytest.mark.parametrize("unit,tokens,expected", [
    ("word", [["Hello", "world"], ["again"]], [(1.0, "Hello world", False), (2.0, "again", False)]),
    ("char", [["你", "好"], ["世", "界", "。"]], [(1.0, "你好", False), (2.0, "世界。", True)]),
])
def test_word_and_char_tokens(tmp_path, unit, tokens, expected):
    lines = [meta(1, "u.wav")] + [packet(1, k + 1.0, 0.1, t) for k, t in enumerate(tokens)]
    log = write_log(tmp_path, lines)
    assert trace_updates(import_simulstream(log, system="B", unit=unit).frame, "u") == expected
    with pytest.raises(InputError, match=r"are not SentencePiece pieces \(expected --unit word or --unit char"):
        import_simulstream(log, system="B")


def write_wav(path, seconds, rate=16000):
    path.parent.mkdir(parents=True, exist_ok=True)
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(b"\0\0" * int(round(seconds * rate)))


def test_wavs_give_the_source_duration(tmp_path):
    wavs = tmp_path / "wavs"
    write_wav(wavs / "talk_a.wav", 4.25)  # found by base name
    write_wav(wavs / "tst" / "talk_b.wav", 3.0, rate=8000)  # found by the logged relative path
    write_wav(wavs / "talk_d.wav", 0.75)
    res = import_simulstream(write_log(tmp_path, LOG), system="B", wavs=wavs)
    assert res.frame.groupby("talk_id", sort=False)["source_s"].first().tolist() == [4.25, 3.0, 0.75]
    assert res.signature["source_s_from"] == "wav duration"


def test_wav_frames_agree_with_soundfile_for_float_and_stereo(tmp_path):
    p = tmp_path / "f.wav"
    soundfile.write(p, np.zeros((12345, 2), dtype=np.float32), 22050, subtype="FLOAT")
    info = soundfile.info(p)
    assert wav_frames(p) == (info.frames, info.samplerate) == (12345, 22050)


@pytest.mark.parametrize("clock", ["source", "computation-aware"])
@pytest.mark.slow
def test_round_trip_import_validate_group_joins_to_the_log_output(cli, tmp_path, clock):
    log = write_log(tmp_path, LOG + RETRANSLATION)
    out = tmp_path / "trace.parquet"
    proc = cli("import-simulstream", log, "--system", "sysB", "--out", out, "--clock", clock,
               "--retractions", "final", check=True)
    assert "talk_c" in proc.stdout and "retractions" in proc.stdout and "offline_upper_bound:yes" in proc.stdout
    meta_ = json.loads(pq.read_schema(out).metadata[b"simulplay"])
    assert meta_["signatures"][0]["clock"] == clock
    cli("validate", out, check=True)
    requests = requests_frame(streams_from_frame(read_trace(out)), [parse_rule("immediate")])
    for talk, expected in {**OUTPUTS, "talk_c": "Grazie a tutti. Ciao"}.items():
        r = requests[requests["talk_id"] == talk]
        assert join_texts(r["text"].tolist(), r["glue"].tolist()) == expected


def test_jsonl_trace_output(cli, tmp_path):
    out = tmp_path / "trace.jsonl"
    cli("import-simulstream", write_log(tmp_path, LOG), "--system", "B", "--out", out, check=True)
    first = json.loads(out.read_text().splitlines()[0])
    assert first["talk_id"] == "talk_a" and first["updates"][1] == {"time_s": 3.0, "text": "ndo a New York",
                                                                     "glue": True}


BAD = {
    "broken JSON": ([meta(1, "a.wav"), '{"id": 1, "total_audio'], (), ["line 2", "broken JSON"]),
    "missing key": ([meta(1, "a.wav"), {k: v for k, v in packet(1, 1.0, 0.1, ["▁a"]).items()
                                        if k != "computation_time"}], (),
                    ["line 2, field 'computation_time'", "is missing"]),
    "tokens not a list": ([meta(1, "a.wav"), {**packet(1, 1.0, 0.1, []), "generated_tokens": "▁a"}], (),
                          ["field 'generated_tokens'", "is not a list of strings"]),
    "no metadata first": ([packet(1, 1.0, 0.1, ["▁a"])], (), ["line 1, field 'id'", "has no metadata line"]),
    "no wav name": ([{"id": 1, "metadata": {}}], (), ["field 'metadata'", "has no wav_name"]),
    "unknown line": ([{"hello": 1}], (), ["line 1", "is not a simulstream log line"]),
    "retraction": (RETRANSLATION, ("--retractions", "refuse"), ["line 3", "talk talk_c: packet 2 retracts 2 token(s)"]),
    "deleted tokens do not match": ([meta(1, "a.wav"), packet(1, 1.0, 0.1, ["▁a", "▁b"]),
                                     packet(1, 2.0, 0.1, ["▁c"], deleted=["▁a"])], ("--retractions", "final"),
                                    ["line 3", "not the last ones emitted"]),
    "deleted tokens do not match, kept": ([meta(1, "a.wav"), packet(1, 1.0, 0.1, ["▁a", "▁b"]),
                                           packet(1, 2.0, 0.1, ["▁c"], deleted=["▁a"])], (),
                                          ["line 3, field 'deleted_tokens'", "talk a: packet 2 deletes 1 token(s) "
                                           "that are not the last ones emitted"]),
    "time backwards": ([meta(1, "a.wav"), packet(1, 2.0, 0.1, ["▁a"]), packet(1, 1.0, 0.1, ["▁b"])], (),
                       ["line 3, field 'total_audio_processed'", "earlier than the previous packet's 2 s"]),
    "negative compute": ([meta(1, "a.wav"), packet(1, 1.0, -0.1, ["▁a"])], (),
                         ["field 'computation_time'", "-0.1 is not ≥ 0"]),
    "no text": ([meta(1, "a.wav"), packet(1, 1.0, 0.1, [])], (), ["line 1", "talk a has no output text"]),
    "same talk twice": ([meta(1, "a.wav"), packet(1, 1.0, 0.1, ["▁x"]), meta(2, "other/a.wav")], (),
                        ["line 3", "talk a already appears at line 1"]),
    "missing wav": ([meta(1, "a.wav"), packet(1, 1.0, 0.1, ["▁x"])], ("--wavs", "."),
                    ["line 1, field 'metadata'", "talk a: no wav at"]),
    "bad retractions value": (LOG, ("--retractions", "drop"), ["--retractions 'drop'", "keep or refuse or final"]),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_logs_give_one_line_errors_and_write_nothing(cli, tmp_path, case):
    lines, extra, fragments = BAD[case]
    log = write_log(tmp_path, lines)
    proc = cli("import-simulstream", log, "--system", "B", "--out", tmp_path / "trace.parquet", *extra,
               cwd=tmp_path)
    assert_one_line_error(proc, *fragments)
    assert list(tmp_path.iterdir()) == [log]
