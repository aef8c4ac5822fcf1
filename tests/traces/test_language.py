"""The text's language against the voice's: each talk's language is identified
(py3langid), compared with the language the voice speaks (a Piper voice's JSON, an eSpeak
NG voice code, XTTS's language, a served backend's declared language), and a mismatch is
one warning line with counts, in the manifest's signature and in the synthesis record.

The German text is the SeamlessStreamAtt-shaped generator's (tests/support/simulstream_logs.py),
the English text the bundled sample traces."""

import json
import random
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from simulplay.backends import parse_backend
from simulplay.backends.http_client import HttpSettings
from simulplay.traces import read_traces, streams_from_frame
from simulplay.traces.language import base_code, mismatch_line, talk_languages
from simulplay.traces.model import Stream
from tests.support.simulstream_logs import german_words

ROOT = Path(__file__).resolve().parents[2]


def german_stream(talk: str, seed: int, n_updates: int = 40) -> Stream:
    words = german_words(random.Random(seed), 4 * n_updates)
    texts = tuple(" ".join(words[i:i + 4]) for i in range(0, 4 * n_updates, 4))
    return Stream(talk, "A", 100.0, np.arange(float(len(texts))), texts, np.zeros(len(texts), bool))


@pytest.mark.parametrize(("tag", "code"), [("en_US", "en"), ("en-us", "en"), ("de", "de"), ("de+f2", "de"),
                                           ("zh-cn", "zh"), ("cmn", "zh"), ("pt_BR", "pt")])
def test_codes_of_voice_tags(tag, code):
    assert base_code(tag) == code


def test_what_each_backend_says_its_voice_speaks():
    assert parse_backend("piper").voice_language() == ("en", "en_US-joe-medium")  # its JSON: family "en"
    assert parse_backend("espeak").voice_language() == ("en", "espeak:voice=en-us")
    assert parse_backend("espeak:voice=de+f2").voice_language() == ("de", "espeak:voice=de+f2")
    assert HttpSettings(base_url="http://127.0.0.1:9/v1").voice_language() is None  # nothing declared
    assert HttpSettings(base_url="http://127.0.0.1:9/v1", language="de", voice="thorsten").voice_language()[0] == "de"
    assert HttpSettings(base_url="http://127.0.0.1:9/v1").spec() == \
        HttpSettings(base_url="http://127.0.0.1:9/v1", language="").spec()  # an undeclared language changes no spec


def test_german_talks_against_an_english_voice():
    streams = [german_stream("ted_1171", 1), german_stream("ted_1172", 2, 30)]
    talks = talk_languages(streams, "en")
    assert [(t.talk_id, t.language, t.updates) for t in talks] == [("ted_1171", "de", 40), ("ted_1172", "de", 30)]
    assert all(t.in_language >= 0.9 * t.updates for t in talks)  # nearly every update is closer to German
    line = mismatch_line(talks, "en", "en_US-joe-medium")
    first = talks[0]
    assert line.startswith(f"{first.in_language} of 40 updates of talk ted_1171 are German (and 1 more talk(s): "
                           f"{talks[1].in_language} of 30 updates); voice en_US-joe-medium speaks English: give "
                           "--backend espeak:voice=de or piper:voice=PATH")
    assert mismatch_line(talk_languages(streams, "de"), "de", "espeak:voice=de") == ""


def test_english_sample_traces_match_the_default_voice():
    streams = streams_from_frame(read_traces([ROOT / "traces" / "sample_traces.jsonl"]))
    talks = talk_languages(streams, "en")
    assert talks and {t.language for t in talks} == {"en"}
    assert mismatch_line(talks, "en", "en_US-joe-medium") == ""


def write_german_trace(path: Path) -> Path:
    rows = [{"talk_id": s.talk_id, "system": "A", "seq": i, "time_s": float(i), "text": x, "source_s": 60.0}
            for s in (german_stream("ted_1171", 3, 12),) for i, x in enumerate(s.texts)]
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def test_synth_warns_once_and_records_the_mismatch(cli, tmp_path):
    trace = write_german_trace(tmp_path / "de.jsonl")
    proc = cli("synth", trace, "--rule", "punct", "--backend", "espeak", "--store", tmp_path / "s",
               "--out", tmp_path / "m.parquet", "--quiet", check=True)
    lines = [x for x in proc.stderr.splitlines() if "speaks English" in x]
    assert len(lines) == 1 and "of 12 updates of talk ted_1171 are German" in lines[0]
    assert "give --backend espeak:voice=de or piper:voice=PATH" in lines[0]
    sig = json.loads(pq.read_schema(tmp_path / "m.parquet").metadata[b"simulplay"])["signature"]
    assert (sig["text_language"], sig["voice_language"]) == ("de", "en")
    proc = cli("synth", trace, "--rule", "punct", "--backend", "espeak:voice=de", "--store", tmp_path / "s",
               "--out", tmp_path / "m2.parquet", "--quiet", check=True)
    assert "speaks" not in proc.stderr
    sig = json.loads(pq.read_schema(tmp_path / "m2.parquet").metadata[b"simulplay"])["signature"]
    assert "text_language" not in sig and "voice_language" not in sig


def test_the_synthesis_record_holds_the_check(tmp_path):
    from simulplay.synthesis.run import synthesize_files

    trace = write_german_trace(tmp_path / "de.jsonl")
    with pytest.warns(UserWarning, match="are German; voice espeak:voice=en-us speaks English"):
        res = synthesize_files(parse_backend("espeak"), tmp_path / "s", tmp_path / "m.parquet", traces=[trace],
                               rules=[__import__("simulplay.grouping", fromlist=["x"]).parse_rule("punct")])
    assert res.language["voice_language"] == "en" and res.language["mismatched"] == ["ted_1171"]
    assert res.language["talks"]["ted_1171"]["language"] == "de"


def test_a_live_plan_checks_the_voice_and_records_it(tmp_path):
    from simulplay.grouping import parse_rule
    from simulplay.live.run import plan_live

    trace = write_german_trace(tmp_path / "de.jsonl")
    with pytest.warns(UserWarning, match="of talk ted_1171 are German; voice espeak:voice=en-us speaks English"):
        plan = plan_live([trace], [parse_rule("immediate")], speed=1.0, config=parse_backend("espeak"))
    assert plan.recorded == {"text_language": "de", "voice_language": "en"}
    assert plan.language["mismatched"] == ["ted_1171"]
    quiet = plan_live([trace], [parse_rule("immediate")], speed=1.0, config=parse_backend("espeak:voice=de"))
    assert quiet.recorded == {} and quiet.language["mismatched"] == []


def test_the_store_keeps_the_findings_so_a_rerun_does_not_identify_again(tmp_path, monkeypatch):
    """Identifying loads py3langid's model (most of a second); the audio store keeps each
    check's findings under a hash of the texts and the voice, so the same texts are not
    identified twice, while changed texts or another voice are."""
    import simulplay.synthesis.language as language
    from simulplay.store.store import AudioStore

    store = AudioStore.open(tmp_path / "store", field="store")
    streams = [german_stream("t1", 1), german_stream("t2", 2)]
    calls = []
    monkeypatch.setattr(language, "talk_languages", lambda s, v: (calls.append(v), talk_languages(s, v))[1])
    first = language.identified(streams, "en", store)
    assert [(t.talk_id, t.language) for t in first] == [("t1", "de"), ("t2", "de")] and calls == ["en"]
    assert language.identified(streams, "en", store) == first and calls == ["en"]  # kept: not identified again
    language.identified(streams, "de", store)
    assert calls == ["en", "de"]  # another voice
    changed = [streams[0], german_stream("t2", 3)]
    language.identified(changed, "en", store)
    assert calls == ["en", "de", "en"]  # another text
    (tmp_path / "store" / "language").joinpath(next(p.name for p in (tmp_path / "store" / "language").iterdir())) \
        .write_text("not json", encoding="utf-8")
    assert len(language.identified(streams, "en", store)) == 2  # a damaged entry: identified again
