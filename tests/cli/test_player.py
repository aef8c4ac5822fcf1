"""`simulplay player` end to end: signed tables, chunk release, bad flags."""

import json

import pandas as pd
import pyarrow.parquet as pq
import pytest

from simulplay.analysis.player_table import PLAYER_COLUMNS
from tests.support.checks import assert_one_line_error
from tests.support.factories import MIDDLE_STALL_REQUESTS, manifest

# service 0: ready at dispatch; plays 1–3, 3–4, waits 2 s, 6–7, 7–9


@pytest.fixture
def man_csv(tmp_path):
    p = tmp_path / "manifest.csv"
    manifest({("t1", "A", "immediate"): MIDDLE_STALL_REQUESTS, ("t1", "F", "immediate"): [(0.5, 0.5, 3.0)]},
             source_s=20.0).to_csv(p, index=False)
    return p


def test_player_writes_one_signed_row_per_output_and_prebuffer(cli, tmp_path, man_csv):
    out = tmp_path / "player.csv"
    proc = cli("player", man_csv, "--out", out, check=True)
    assert "2 output(s)" in proc.stdout
    t = pd.read_csv(out)
    assert list(t.columns) == ["talk_id", "system", "condition", *PLAYER_COLUMNS, "signature"]
    assert list(t["prebuffer_s"]) == [0.0, 0.5, 1.5] * 2
    a = t[t["system"] == "A"]
    assert list(a["stall_count"]) == [1, 1, 1] and list(a["prebuffer_stall_total_s"]) == [2.0, 1.5, 0.5]
    assert a["required_startup_delay_s"].iloc[0] == 2.0 and a["stall_free_prebuffer_s"].iloc[0] == 1.99
    assert a["fluidity_index"].iloc[0] == pytest.approx(0.7475)
    f = t[t["system"] == "F"].iloc[0]
    assert (f["first_ready_s"], f["stall_count"], f["fluidity_index"]) == (1.0, 0, 1.0)
    sig = a["signature"].iloc[1]
    for part in ("table:player", "release:request", "service:measured", "prebuffer:0.5s", "frame:20ms",
                 "min_stall:10ms", "startup_delay:0ms", "rule:immediate"):
        assert part in sig, sig


def test_player_settings_reach_the_numbers_and_the_parquet_signatures(cli, tmp_path, man_csv):
    out = tmp_path / "player.parquet"
    cli("player", man_csv, "--out", out, "--min-stall-ms", "0", "--frame-ms", "40", "--startup-delay-ms", "2000",
        "--prebuffer-s", "2,0", "--service", "zero", check=True)
    t = pd.read_parquet(out)
    a = t[t["system"] == "A"]
    assert list(a["prebuffer_s"]) == [0.0, 2.0] and list(a["prebuffer_stall_count"]) == [1, 0]
    assert a["stall_free_prebuffer_s"].iloc[0] == 2.0 and a["fluidity_index"].iloc[0] == 1.0
    assert a["n_frames"].iloc[0] == 150
    meta = json.loads(pq.read_schema(out).metadata[b"simulplay"])
    sigs = [meta["signatures"][i] for i in meta["row_signature"]]
    assert [s["prebuffer"] for s in sigs] == ["0s", "2s"] * 2
    assert {(s["frame"], s["min_stall"], s["startup_delay"], s["service"]) for s in sigs} == {
        ("40ms", "0ms", "2000ms", "zero")}
    assert meta["table"] == "player"


@pytest.mark.slow


def test_player_chunk_release_reads_the_chunk_table(cli, tmp_path):
    man = tmp_path / "m.csv"
    manifest({("t1", "A", "immediate"): [(0.0, 2.0, 2.0)]}, source_s=5.0).to_csv(man, index=False)
    ch = tmp_path / "chunks.csv"
    pd.DataFrame({"talk_id": "t1", "system": "A", "condition": "immediate", "seq": 0, "chunk": [0, 1],
                  "ready_offset_s": [0.5, 2.0], "audio_s": [1.0, 1.0]}).to_csv(ch, index=False)
    out = tmp_path / "p.md"
    cli("player", man, "--release", "chunk", "--chunks", ch, "--prebuffer-s", "0", "--out", out, check=True)
    md = out.read_text()
    assert "release:chunk" in md and "| t1 | A | immediate | 0.000 | 2 | 2 | 2.000 | 0.500 | 0.500 |" in md
    cli("player", man, "--prebuffer-s", "0", "--out", tmp_path / "r.csv", check=True)
    assert pd.read_csv(tmp_path / "r.csv")["first_ready_s"].iloc[0] == 2.0


@pytest.mark.parametrize(("flags", "fragments"), [
    (["--frame-ms", "0"], ["--frame-ms 0", "milliseconds ≥ 0.000001 (1 ns)"]),
    (["--frame-ms", "1e-9"], ["--frame-ms 1e-09", "is out of range"]),
    (["--min-stall-ms", "-1"], ["--min-stall-ms -1", "milliseconds ≥ 0"]),
    (["--startup-delay-ms", "inf"], ["--startup-delay-ms inf"]),
    (["--prebuffer-s", "0,fast"], ["--prebuffer-s '0,fast'", "'fast' is not a number"]),
    (["--prebuffer-s", "0.5,0.5"], ["repeats a value"]),
    (["--release", "sentence"], ["--release 'sentence'", "request or chunk"]),
    (["--service", "fast"], ["--service 'fast'"]),
    (["--frames", "20"], ["No such option", "--frames"]),
    (["--frame-ms", "twenty"], ["Invalid value for '--frame-ms'"]),
])
def test_player_bad_flags_fail_in_one_line_and_write_nothing(cli, tmp_path, man_csv, flags, fragments):
    out = tmp_path / "player.csv"
    proc = cli("player", man_csv, "--out", out, *flags)
    assert_one_line_error(proc, *fragments)
    assert not out.exists() and list(tmp_path.iterdir()) == [man_csv]
