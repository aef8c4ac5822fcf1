"""Agreement with simulstream 1.0.0's own log reader (``simulstream.metrics.readers.LogReader``).

simulstream turns a metrics log into each talk's final text and per-word delays: ``ideal_delays``
(the ``total_audio_processed`` of the packet that last changed the word) and
``computational_aware_delays`` (that packet's ``total_audio_processed + computation_time``,
without queueing). Our trace gives each update a time; a word is available when its last
character is. On the source clock the two must agree word for word; on the
computation-aware clock ours also queues a packet behind a slow predecessor, so ours is
later by exactly that packet's queueing delay (zero where processing keeps up).
"""

import json
from types import SimpleNamespace

import pytest
from simulstream.metrics.readers import LogReader

from simulplay.traces.importers import import_simulstream
from tests.support.simulstream_logs import SPM, generate_talk, write_log


def simulstream_outputs(path, latency_unit="word"):
    """simulstream's reading of the log (its `simuleval` detokenizer on SentencePiece pieces)."""
    config = SimpleNamespace(detokenizer_type="simuleval", latency_unit="spm")
    return LogReader(config, str(path), latency_unit=latency_unit).final_outputs_and_latencies()


def char_times(res, talk):
    """Our assembled text of ``talk`` and each character's availability (a join space belongs
    to the update after it)."""
    rows = res.frame[res.frame["talk_id"] == talk]
    chars, times = [], []
    for i, (t, x, g) in enumerate(zip(rows["time_s"], rows["text"], rows["glue"])):
        if i and not g:
            chars.append(" ")
            times.append(t)
        chars.extend(x)
        times.extend([t] * len(x))
    return "".join(chars), times


def word_times(res, talk):
    """Our words (whitespace-separated) and each word's availability: its latest character's."""
    text, times = char_times(res, talk)
    words, avail, cur, cur_t = [], [], "", 0.0
    for c, t in zip(text + " ", times + [0.0]):
        if c.isspace():
            if cur:
                words.append(cur)
                avail.append(cur_t)
            cur, cur_t = "", 0.0
        else:
            cur, cur_t = cur + c, max(cur_t, t)
    return words, avail


def queue_delays(packets):
    """Each packet's wait behind its predecessor: start = max(arrival, previous end)."""
    out, end = [], 0.0
    for p in packets:
        start = max(p["total_audio_processed"], end)
        out.append(start - p["total_audio_processed"])
        end = start + p["computation_time"]
    return out


@pytest.fixture(scope="module")
def mixed_log(tmp_path_factory):
    """German talks (eager with many lone ▁ pieces, and batched) and a Chinese talk."""
    talks = [generate_talk("ted_de_eager", 300.4, 7, lone_spaces=0.08, talk=0),
             generate_talk("ted_de_batched", 300.4, 7, hold=3, lone_spaces=0.08, talk=1),
             generate_talk("ted_zh", 120.25, 9, language="zh", words_per_s=3.0, talk=2)]
    return write_log(tmp_path_factory.mktemp("agree") / "metrics.jsonl", talks)


def test_the_generated_log_has_the_real_quirks(mixed_log):
    """The agreement below is only worth something if the log holds what real logs hold."""
    de = mixed_log.talks[0].packets
    toks = [p["generated_tokens"] for p in de]
    lone = [k for k, t in enumerate(toks) if t and t[-1] == SPM]
    assert len(lone) >= 5 and any(toks[k + 1][:1] and toks[k + 1][0].startswith(SPM) for k in lone)
    starts = [t[0] for t in toks if t]
    assert any(s[0].isalpha() for s in starts)  # a word continued from the previous packet
    assert any(s in (",", ".", "“") for s in starts)  # punctuation attached across packets
    assert sum(not t for t in toks) >= 20  # empty packets
    text = mixed_log.talks[0].text
    assert "(Applaus)" in text and "(Gelächter)" in text and "„" in text and "“" in text
    assert "  " in "".join(sum(toks, [])).replace(SPM, " ")  # the log's own text holds double spaces
    assert all(p["total_audio_processed"] == k + 1 for k, p in enumerate(de[:-1]))
    assert de[-1]["total_audio_processed"] == 300.4
    assert "我" in mixed_log.talks[2].text or "们" in mixed_log.talks[2].text


def test_text_and_word_availability_agree_with_simulstream_on_the_source_clock(mixed_log):
    theirs = simulstream_outputs(mixed_log.path)
    res = import_simulstream(mixed_log.path, system="B")
    assert list(theirs) == [t.talk_id for t in mixed_log.talks]
    for plan in mixed_log.talks:
        text, _ = char_times(res, plan.talk_id)
        assert text == " ".join(theirs[plan.talk_id].final_text.split()) == plan.text
        words, avail = word_times(res, plan.talk_id)
        assert words == theirs[plan.talk_id].text_items("word") == plan.words
        assert avail == theirs[plan.talk_id].ideal_delays
        arrival = [p["total_audio_processed"] for p in plan.packets]
        assert avail == [arrival[k] for k in plan.word_packets]  # the generator's plan, a third witness


def test_character_availability_agrees_with_simulstream_char_delays_for_chinese(mixed_log):
    theirs = simulstream_outputs(mixed_log.path, latency_unit="char")["ted_zh"]
    text, times = char_times(import_simulstream(mixed_log.path, system="B"), "ted_zh")
    ours = [(c, t) for c, t in zip(text, times) if not c.isspace()]
    assert ours == [(c, t) for c, t in zip(theirs.final_text, theirs.ideal_delays) if not c.isspace()]
    assert len(ours) > 300


def test_computation_aware_agrees_where_processing_keeps_up(mixed_log):
    for plan in mixed_log.talks:
        assert max(queue_delays(plan.packets)) == 0  # every packet ends before the next arrives
    theirs = simulstream_outputs(mixed_log.path)
    res = import_simulstream(mixed_log.path, system="B", clock="computation-aware")
    for plan in mixed_log.talks:
        assert word_times(res, plan.talk_id)[1] == theirs[plan.talk_id].computational_aware_delays


def test_computation_aware_is_later_by_exactly_the_queueing_delay(tmp_path):
    talks = [generate_talk("ted_slow", 240.5, 21, slow=0.15, slow_compute=1.6, lone_spaces=0.05, talk=0),
             generate_talk("ted_slow_batched", 240.5, 21, hold=4, slow=0.1, slow_compute=2.9, talk=1)]
    log = write_log(tmp_path / "slow.jsonl", talks)
    theirs = simulstream_outputs(log.path)
    words_res = import_simulstream(log.path, system="B", clock="computation-aware")
    for plan in talks:
        queue = queue_delays(plan.packets)
        ours = word_times(words_res, plan.talk_id)[1]
        waits = [queue[k] for k in plan.word_packets]
        assert sum(w > 0 for w in waits) > 30  # the processor really falls behind
        assert ours == pytest.approx([a + w for a, w in zip(theirs[plan.talk_id].computational_aware_delays, waits)],
                                     abs=1e-9, rel=0)


def test_hand_worked_queue(tmp_path):
    """Packets (arrival, computation): (1, 0.5) 'Das', (2, 1.75) 'ist ▁', (3, 0.25) 'gut.', (4, 0.25) empty,
    (4.5, 0.25) '(Applaus)'. By hand, simulstream: 1.5, 3.75, 3.25, 4.75. Queued: packet 3 waits
    for packet 2 until 3.75 and ends 4.0; packet 4 runs 4.0–4.25; packet 5 starts on arrival: 4.75."""
    packets = [(1.0, 0.5, ["▁Das"]), (2.0, 1.75, ["▁ist", SPM]), (3.0, 0.25, ["▁gut", "."]), (4.0, 0.25, []),
               (4.5, 0.25, ["▁(", "App", "laus", ")"])]
    lines = [{"id": 0, "total_audio_processed": a, "computation_time": c, "generated_tokens": t,
              "deleted_tokens": []} for a, c, t in packets]
    head = [{"model_loading_time": 1.0}, {"id": 0, "metadata": {"wav_name": "h.wav"}}]
    log = tmp_path / "hand.jsonl"
    log.write_text("".join(json.dumps(x) + "\n" for x in head + lines), encoding="utf-8")
    theirs = simulstream_outputs(log)["h"]
    assert theirs.computational_aware_delays == [1.5, 3.75, 3.25, 4.75]
    ours = import_simulstream(log, system="B", clock="computation-aware")
    assert word_times(ours, "h") == (["Das", "ist", "gut.", "(Applaus)"], [1.5, 3.75, 4.0, 4.75])
    assert word_times(import_simulstream(log, system="B"), "h")[1] == theirs.ideal_delays == [1.0, 2.0, 3.0, 4.5]
