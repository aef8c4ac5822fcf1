"""``talks=``, ``talks_from=`` and ``events=`` of ``simulplay.group``, ``synthesize`` and
``replay`` pick talks and drop event tags as ``--talks``, ``--talks-from`` and ``--events``
do: the same tables and signatures as the command on the same files.

The trace is the SeamlessStreamAtt-shaped German simulstream log of
tests/support/simulstream_logs.py, imported by the command: its words include
``(Applaus)`` and ``(Gelächter)`` as SentencePiece pieces that flow over packets."""

from __future__ import annotations

import json

import pandas as pd
import pyarrow.parquet as pq
import pytest

import simulplay
from simulplay.core.errors import SimulplayWarning
from simulplay.traces.events import find_events
from tests.api.test_api import cli_table, same_table
from tests.support.simulstream_logs import DE_EVENTS, seamless_log

# seamless_log names talk k ted_<1096 + 7k>
PICKED = {"ted_1096", "ted_1110"}


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    """The imported trace of three talks, the first two with planned event tags, and a file naming ted_1110."""
    from tests.support.cli import run_cli

    d = tmp_path_factory.mktemp("apitalks")
    log = seamless_log(d / "A.jsonl", [60.0, 20.0, 25.0])
    tags = {t.talk_id: [w for w in t.text.split() if w.strip(".,") in DE_EVENTS] for t in log.talks}
    assert tags["ted_1096"], "the generator puts a tag after every 120 words and some at random"
    run_cli("import-simulstream", d / "A.jsonl", "--system", "A", "--out", d / "A.parquet", check=True)
    (d / "talks.txt").write_text("# the talks to keep\nted_1110\n", encoding="utf-8")
    return d


def test_group_picks_talks_and_drops_tags_as_the_command(cli, trace, tmp_path):
    cli("group", trace / "A.parquet", "--rule", "punct", "--rule", "immediate", "--talks", "ted_1096",
        "--talks-from", trace / "talks.txt", "--events", "drop", "--out", tmp_path / "r.parquet", check=True)
    api = simulplay.group(trace / "A.parquet", ["punct", "immediate"], talks="ted_1096",
                          talks_from=trace / "talks.txt", events="drop")
    same_table(api.table, api.signatures, tmp_path / "r.parquet")
    assert set(api.table["talk_id"]) == PICKED and not any(find_events(t) for t in api.table["text"])
    assert {s["events"] for s in api.signatures} == {"drop"} and api.signature["events"] == "drop"
    frame = simulplay.group(simulplay.read_trace(trace / "A.parquet"), ["punct", "immediate"],
                            talks=["ted_1096", "ted_1110"], events="drop")
    pd.testing.assert_frame_equal(frame.table, api.table, check_exact=True)

    cli("group", trace / "A.parquet", "--rule", "punct", "--talks", "ted_1096", "--out", tmp_path / "k.parquet",
        check=True)
    with pytest.warns(SimulplayWarning, match="hold a non-speech event tag .* pass events drop"):
        kept = simulplay.group(trace / "A.parquet", "punct", talks="ted_1096")
    same_table(kept.table, kept.signatures, tmp_path / "k.parquet")
    assert any(find_events(t) for t in kept.table["text"]) and {s["events"] for s in kept.signatures} == {"keep"}


def test_synthesize_then_replay_pick_talks_as_the_commands(cli, trace, tmp_path):
    """synth with the fake backend (the API's call finds every request in the store the
    command filled, so their service times are the same), then replay of one talk."""
    cli("synth", trace / "A.parquet", "--rule", "punct", "--backend", "fake-test", "--store", tmp_path / "s",
        "--out", tmp_path / "m.parquet", "--talks", "ted_1096", "--talks-from", trace / "talks.txt",
        "--events", "drop", "--quiet", check=True, imports=["tests.support.fakes"])
    import tests.support.fakes  # noqa: F401  (registers fake-test)

    api = simulplay.synthesize(trace / "A.parquet", "punct", backend="fake-test", store=tmp_path / "s",
                               out=tmp_path / "m2.parquet", talks=["ted_1096"], talks_from=trace / "talks.txt",
                               events="drop")
    assert api.stats["synthesized"] == 0 and api.stats["already_in_store"] == len(api.table)
    cli_manifest, cli_sigs = cli_table(tmp_path / "m.parquet")
    pd.testing.assert_frame_equal(api.table, cli_manifest, check_exact=True)
    assert set(api.table["talk_id"]) == PICKED and not any(find_events(t) for t in api.table["text"])
    cli_sig = json.loads(pq.read_schema(tmp_path / "m.parquet").metadata[b"simulplay"])["signature"]
    assert cli_sig["events"] == "drop"
    assert list(api.signatures) == cli_sigs and api.signature == cli_sig  # events: drop among them

    cli("replay", tmp_path / "m.parquet", "--talks", "ted_1110", "--release", "chunk",
        "--out", tmp_path / "summary.parquet", check=True)
    replayed = simulplay.replay(tmp_path / "m.parquet", talks="ted_1110", release="chunk")
    same_table(replayed.summary, replayed.signatures, tmp_path / "summary.parquet")
    assert replayed.summary["talk_id"].tolist() == ["ted_1110"]
    from_result = simulplay.replay(api, talks_from=trace / "talks.txt", release="chunk")
    pd.testing.assert_frame_equal(from_result.summary, replayed.summary, check_exact=True)
