"""Non-speech event tags: found (also when a tag's pieces arrive in two updates), counted
by validate and the importers, spoken under ``--events keep`` with one warning naming the
counts, removed under ``--events drop`` before grouping (an update left empty is skipped,
word boundaries kept), and recorded in the signature.

The real-shaped log is the SeamlessStreamAtt-shaped German simulstream log of
tests/support/simulstream_logs.py: its words include ``(Applaus)``, ``(Gelächter)``,
``(Lachen)`` and ``(Video)`` as SentencePiece pieces that flow over packets, and the
generator records the words it meant, so the expected counts come from its plan."""

import json
from collections import Counter

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from simulplay.traces.events import drop_events, event_counts, find_events
from simulplay.traces.model import Stream
from simulplay.workflows.experiment import experiment_from_dict
from tests.support.simulstream_logs import DE_EVENTS, seamless_log


def stream(texts, glue, talk="t1"):
    return Stream(talk, "A", 20.0, np.arange(float(len(texts))), tuple(texts), np.asarray(glue, bool))


@pytest.mark.parametrize(("text", "tags"), [
    ("Danke. (Applaus) Und", ["(Applaus)"]),
    ("(Gelächter) (Lachen) (Laughter) [Music] (Applaus und Jubel)",
     ["(Gelächter)", "(Lachen)", "(Laughter)", "[Music]", "(Applaus und Jubel)"]),
    ("（笑声） [Inaudible] (laughter)", ["（笑声）", "[Inaudible]", "(laughter)"]),
    ("die Bundesrepublik (Deutschland) (siehe oben) [sic] (2019) (Applaus]", []),
])
def test_what_is_a_tag(text, tags):
    assert [t for _, _, t in find_events(text)] == tags


def test_drop_removes_a_tag_split_over_two_updates_and_keeps_word_boundaries():
    s = stream(["Danke.", "(App", "laus)", "Und so (Gelächter)", ",", "weiter. (Applaus)"],
               [False, False, True, False, True, False])
    counts = event_counts([s])
    assert counts.tags == Counter({"(Applaus)": 2, "(Gelächter)": 1})
    assert counts.updates_with == 4 and counts.updates == 6  # "(App", "laus)", "Und so (…)", "weiter. (…)"
    d = drop_events(s)
    assert d.texts == ("Danke.", "Und so", ",", "weiter.")
    assert d.glue.tolist() == [False, False, True, False]  # the comma stays attached
    assert d.times.tolist() == [0.0, 3.0, 4.0, 5.0]  # the emptied updates 1 and 2 are skipped
    assert d.joined == "Danke. Und so, weiter."


def test_a_stream_without_tags_is_unchanged_and_one_of_only_tags_is_refused():
    s = stream(["Guten", "Tag."], [False, False])
    assert drop_events(s) is s
    with pytest.raises(Exception, match="holds only non-speech event tags"):
        drop_events(stream(["(Applaus)", "(Gelächter)"], [False, False]))


@pytest.fixture(scope="module")
def log(tmp_path_factory):
    d = tmp_path_factory.mktemp("events")
    generated = seamless_log(d / "A.jsonl", [70.0, 50.0])
    return d, generated


def planned(generated):
    """The event words the generator put in each talk, and its text with them removed."""
    tags = {t.talk_id: [w for w in t.text.split() if w.strip(".,") in DE_EVENTS] for t in generated.talks}
    clean = {t.talk_id: " ".join(w for w in t.text.split() if w not in DE_EVENTS) for t in generated.talks}
    return tags, clean


def test_import_and_validate_count_the_tags(cli, log):
    d, generated = log
    tags, _ = planned(generated)
    n = sum(len(v) for v in tags.values())
    assert n >= 2  # the generator puts one after every 120 words and some at random
    proc = cli("import-simulstream", d / "A.jsonl", "--system", "A", "--out", d / "A.parquet", check=True)
    assert f"hold a non-speech event tag ({n}:" in proc.stdout and "--events drop" in proc.stdout
    proc = cli("validate", d / "A.parquet", "--out", d / "stats.csv", check=True)
    stats = pd.read_csv(d / "stats.csv").set_index("talk_id")
    assert {t: int(stats.loc[t, "event_tags"]) for t in tags} == {t: len(v) for t, v in tags.items()}
    assert f"in 2 of 2 talk(s) hold a non-speech event tag ({n}:" in proc.stdout


def test_group_keeps_with_a_warning_or_drops_and_records_it(cli, log):
    d, generated = log
    _, clean = planned(generated)
    cli("import-simulstream", d / "A.jsonl", "--system", "A", "--out", d / "B.parquet", check=True)
    kept = cli("group", d / "B.parquet", "--rule", "punct", "--out", d / "kept.parquet", check=True)
    assert kept.stderr.count("warning:") == 1 and "hold a non-speech event tag" in kept.stderr
    assert "--events drop" in kept.stderr
    assert any(find_events(t) for t in pd.read_parquet(d / "kept.parquet")["text"])
    dropped = cli("group", d / "B.parquet", "--rule", "punct", "--rule", "immediate", "--events", "drop",
                  "--out", d / "dropped.parquet", check=True)
    assert "warning" not in dropped.stderr
    req = pd.read_parquet(d / "dropped.parquet")
    assert not any(find_events(t) for t in req["text"])
    for (talk, cond), g in req.groupby(["talk_id", "condition"]):
        joined = "".join(("" if i == 0 or gl else " ") + t for i, (t, gl) in enumerate(zip(g["text"], g["glue"])))
        assert " ".join(joined.split()) == clean[talk], (talk, cond)
    sigs = json.loads(pq.read_schema(d / "dropped.parquet").metadata[b"simulplay"])["signatures"]
    assert {s["events"] for s in sigs} == {"drop"}
    sigs = json.loads(pq.read_schema(d / "kept.parquet").metadata[b"simulplay"])["signatures"]
    assert {s["events"] for s in sigs} == {"keep"}


def test_synth_drops_the_tags_before_synthesis(cli, log):
    d, _ = log
    cli("import-simulstream", d / "A.jsonl", "--system", "A", "--out", d / "C.jsonl", check=True)
    cli("synth", d / "C.jsonl", "--rule", "punct", "--backend", "fake-test", "--store", d / "store",
        "--out", d / "m.parquet", "--events", "drop", "--talks", "ted_1096", "--quiet", check=True,
        imports=["tests.support.fakes"])
    m = pd.read_parquet(d / "m.parquet")
    assert set(m["talk_id"]) == {"ted_1096"} and not any(find_events(t) for t in m["text"])
    meta = json.loads(pq.read_schema(d / "m.parquet").metadata[b"simulplay"])
    assert meta["signature"]["events"] == "drop"


def test_a_trace_without_tags_records_nothing(cli, tmp_path):
    path = tmp_path / "t.jsonl"
    rows = [{"talk_id": "x", "system": "A", "seq": i, "time_s": float(i), "text": w, "source_s": 5.0}
            for i, w in enumerate(["Guten", "Tag."])]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    proc = cli("group", path, "--rule", "immediate", "--events", "drop", "--out", tmp_path / "r.parquet", check=True)
    sigs = json.loads(pq.read_schema(tmp_path / "r.parquet").metadata[b"simulplay"])["signatures"]
    assert "events" not in sigs[0] and "warning" not in proc.stderr
    bad = cli("group", path, "--rule", "immediate", "--events", "mute", "--out", tmp_path / "r2.parquet")
    assert bad.returncode == 2 and "--events" in bad.stderr and "keep or drop" in bad.stderr


def test_experiment_files_take_events_and_talks(tmp_path):
    trace = tmp_path / "t.jsonl"
    trace.write_text("")
    base = {"traces": ["t.jsonl"], "a": "A", "f": "F", "rules": ["immediate"], "reference": "immediate"}
    exp = experiment_from_dict({**base, "events": "drop", "talks": ["ted_1096"]}, tmp_path / "e.toml")
    assert exp.events == "drop" and exp.talks == ("ted_1096",)
    assert experiment_from_dict(base, tmp_path / "e.toml").events == "keep"
    with pytest.raises(Exception, match="keep or drop"):
        experiment_from_dict({**base, "events": "mute"}, tmp_path / "e.toml")


def test_run_flags_override_the_experiment_keys(tmp_path):
    from simulplay.cli.experiment import with_overrides

    (tmp_path / "t.jsonl").write_text("")
    base = {"traces": ["t.jsonl"], "a": "A", "f": "F", "rules": ["immediate"], "reference": "immediate",
            "talks": ["x"]}
    exp = experiment_from_dict(base, tmp_path / "e.toml")
    assert (exp.events, exp.talks) == ("keep", ("x",))
    over = with_overrides(exp, "drop", ["y,z"], None)
    assert (over.events, over.talks) == ("drop", ("y", "z"))
    assert with_overrides(exp, None, [], None) == exp
    with pytest.raises(Exception, match="keep or drop"):
        with_overrides(exp, "mute", [], None)
