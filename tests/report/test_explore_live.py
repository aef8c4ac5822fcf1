"""The explorer's live lanes and join marks, without a browser: the data a talk's file
embeds equals a hand-worked tiny live timeline (a live run's timeline, player and request
tables written by hand, as `simulplay live` writes them) and a hand-written quality joins
table; a live run on another time base is refused (given) or left out with a note (found
in the run folder)."""

from __future__ import annotations

import re
import shutil

import pandas as pd
import pytest

from simulplay.core.errors import InputError
from simulplay.core.signature import base_signature
from simulplay.core.tables import read_table, write_table
from simulplay.report.explore import build_explorer, explorer_files
from tests.report.test_explore import received
from tests.support.checks import assert_one_line_error
from tests.support.report_runs import make_run

KEY = {"talk_id": "talk00", "system": "A", "condition": "immediate"}
# The virtual player by hand (request release): a part plays at max(arrival, previous end).
#   seq 0 arrives 1.000, 0.500 s of audio: plays 1.000 → 1.500, waited 1.000 (before the first part)
#   seq 1 arrives 1.800, 0.400 s: plays 1.800 → 2.200, waited 0.300 (> 10 ms: a stall)
#   seq 2 arrives 2.205, 0.300 s: plays 2.205 → 2.505, waited 0.005 (≤ 10 ms: no stall)
ARRIVAL, AUDIO = [1.0, 1.8, 2.205], [0.5, 0.4, 0.3]
PLAY, END, WAIT = [1.0, 1.8, 2.205], [1.5, 2.2, 2.505], [1.0, 0.3, 0.005]
SEND_LATE = [0.001, 0.0025, 0.0004]


def write_live(folder, source_s: float) -> None:
    """A live run of one output (KEY), request release only, with the run's source duration."""
    folder.mkdir(parents=True, exist_ok=True)
    sig = base_signature(table="live", speed=1.0, backend_spec="piper", lateness="on time")
    timeline = pd.DataFrame({**KEY, "backend": "http:piper", "realization": 0, "release": "request", "seq": [0, 1, 2],
                             "chunk": -1, "arrival_s": ARRIVAL, "play_s": PLAY, "end_s": END, "audio_s": AUDIO,
                             "wait_s": WAIT})
    player = pd.DataFrame([{**KEY, "backend": "http:piper", "realization": 0, "release": "request", "n_requests": 3,
                            "n_failed": 0, "n_parts": 3, "first_play_s": 1.0, "first_audible_s": 1.0,
                            "audio_s": 1.2, "idle_s": 1.305, "end_s": 2.505, "offset_s": 2.505 - source_s,
                            "source_s": source_s, "stall_count": 1, "stall_total_s": 0.3, "stall_longest_s": 0.3,
                            "complete": True}])
    requests = pd.DataFrame({**KEY, "backend": "http:piper", "realization": 0, "seq": [0, 1, 2], "text": "x",
                             "send_late_s": SEND_LATE})
    for name, table in (("timeline", timeline), ("player", player), ("requests", requests)):
        write_table(table, folder / f"{name}.parquet", sig, kind=f"live-{name}")


def write_joins(path) -> None:
    sig = base_signature(table="quality", metrics="joins", reference="immediate", release="request")
    write_table(pd.DataFrame({**KEY, "backend": "fake:sine", "realization": 0, "seq_before": [0, 1], "seq": [1, 2],
                              "join": [1, 2], "at_s": [5.25, 7.0], "silence_before_s": 0.01, "gap_s": [0.0, 0.5],
                              "silence_after_s": 0.02, "pause_s": [0.03, 0.53], "level_before_db": [-20.0, -18.0],
                              "level_after_db": [-17.5, -19.25], "step_db": [2.5, -1.25],
                              "discontinuity_db": [3.0, -4.0]}), path, sig, kind="quality-joins")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    folder = make_run(tmp_path_factory.mktemp("explore-live") / "run", 2)
    summary, _ = read_table(folder / "summary.parquet")
    write_live(folder / "live", float(summary.loc[summary["talk_id"] == "talk00", "source_s"].iloc[0]))
    write_joins(folder / "q.joins.parquet")
    return folder


def summary_row(folder, name: str = "summary.parquet") -> pd.Series:
    s, _ = read_table(folder / name)
    return s[(s["talk_id"] == "talk00") & (s["system"] == "A") & (s["condition"] == "immediate")].iloc[0]


def talk_data(files: dict, talk: str = "talk00") -> dict:
    return received(files[f"data/talks/{talk}.js"])[2]


def index_of(data: dict, system: str, condition: str) -> int:
    return next(i for i, o in enumerate(data["outputs"]) if o["system"] == system and o["condition"] == condition)


@pytest.fixture(scope="module")
def data(run_dir):
    return talk_data(explorer_files(build_explorer(run_dir, joins=run_dir / "q.joins.parquet")))


def test_the_live_lane_holds_the_hand_worked_timeline(data):
    o = index_of(data, "A", "immediate")
    live = data["live"]["outputs"][o]["request"]
    ns = [round(x * 1e9) for x in ARRIVAL]
    assert live["seq"] == [0, 1, 2] and live["chunk"] == [-1, -1, -1]
    assert live["arrival"] == ns and live["play"] == [1_000_000_000, 1_800_000_000, 2_205_000_000]
    assert live["end"] == [1_500_000_000, 2_200_000_000, 2_505_000_000]
    assert live["wait"] == [1_000_000_000, 300_000_000, 5_000_000]
    assert live["late"] == [1_000_000, 2_500_000, 400_000]  # each request's send lateness
    assert live["stall"] == [1]  # the 0.3 s wait; not the first part's wait, not the 5 ms one
    assert live["summary"]["end_s"] == 2.505 and live["summary"]["stall_count"] == 1
    assert data["live"]["releases"]["primary"] == "request"
    assert "table:live" in data["live"]["signature"]


def test_delta_l_is_the_replays_l_minus_the_live_l(data, run_dir):
    o = index_of(data, "A", "immediate")
    live = data["live"]["outputs"][o]["request"]
    source = float(summary_row(run_dir)["source_s"])
    live_l = 2.505 - source  # by hand: the live end minus S
    assert live["summary"]["offset_s"] == pytest.approx(live_l, abs=1e-12)
    assert live["dL"]["primary"] == pytest.approx(float(summary_row(run_dir)["offset_s"]) - live_l, abs=1e-9)
    zero = float(summary_row(run_dir, "summary.service-zero.parquet")["offset_s"])
    assert live["dL"]["service-zero"] == pytest.approx(zero - live_l, abs=1e-9)


def test_outputs_the_live_run_did_not_play_have_no_live_lane(data):
    others = [i for i, o in enumerate(data["outputs"]) if (o["system"], o["condition"]) != ("A", "immediate")]
    assert others and all(data["live"]["outputs"][i] is None for i in others)


def test_the_joins_are_marked_with_their_level_step(data):
    o = index_of(data, "A", "immediate")
    j = data["joins"]["outputs"][o]
    assert j["seq_before"] == [0, 1] and j["seq"] == [1, 2]
    assert j["at"] == [5_250_000_000, 7_000_000_000]
    assert j["step_db"] == [2.5, -1.25] and j["level_before_db"] == [-20.0, -18.0]
    assert j["pause_s"] == [0.03, 0.53] and j["discontinuity_db"] == [3.0, -4.0]
    assert data["joins"]["variant"] == "primary" and "table:quality" in data["joins"]["signature"]
    assert sum(x is not None for x in data["joins"]["outputs"]) == 1


def test_without_a_live_run_or_joins_the_talk_data_has_neither(tmp_path):
    folder = make_run(tmp_path / "run", 1)
    got = talk_data(explorer_files(build_explorer(folder)))
    assert "live" not in got and "joins" not in got


@pytest.mark.slow
def test_a_live_run_on_another_time_base_is_refused_when_given_and_noted_when_found(run_dir, tmp_path, cli):
    other = tmp_path / "fast"
    write_live(other, 12.5)  # as if played at another --speed: S differs
    with pytest.raises(InputError, match=re.escape("player.parquet") + ".*source_s.*time bases differ"):
        build_explorer(run_dir, live=other)
    proc = cli("explore", run_dir, "--live", other, "--out", tmp_path / "ex")
    assert_one_line_error(proc, "player.parquet", "source_s", "--speed 1")
    assert not (tmp_path / "ex").exists()
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    shutil.rmtree(copy / "live")
    write_live(copy / "live", 12.5)
    ex = build_explorer(copy)
    assert ex.live is None and any("Live lanes left out" in n and "time bases differ" in n for n in ex.notes)


@pytest.mark.slow
def test_a_missing_live_table_or_joins_table_is_one_line(run_dir, tmp_path, cli):
    (tmp_path / "half").mkdir()
    shutil.copy(run_dir / "live" / "timeline.parquet", tmp_path / "half")
    proc = cli("explore", run_dir, "--live", tmp_path / "half" / "timeline.parquet", "--out", tmp_path / "ex")
    assert_one_line_error(proc, "player.parquet", "is missing", "simulplay live")
    proc = cli("explore", run_dir, "--joins", tmp_path / "q.parquet", "--out", tmp_path / "ex")
    assert_one_line_error(proc, "q.joins.parquet", "is missing", "simulplay quality")
    assert not (tmp_path / "ex").exists()


def test_the_command_names_what_it_showed(run_dir, tmp_path, cli):
    proc = cli("explore", run_dir, "--joins", run_dir / "q.joins.parquet", "--out", tmp_path / "ex")
    assert proc.returncode == 0, proc.stderr
    assert "live lanes of 1 output(s)" in proc.stdout and "q.joins.parquet" in proc.stdout
    assert (tmp_path / "ex" / "data" / "talks" / "talk00.js").is_file()


@pytest.mark.slow
def test_a_live_manifest_as_input_brings_its_live_run(run_dir, tmp_path, cli):
    """Step-by-step tables whose manifest is a live run's live.parquet: its timeline beside it is shown."""
    w = tmp_path / "live-run"
    w.mkdir()
    shutil.copy(run_dir / "manifest.parquet", w / "live.parquet")
    cli("replay", w / "live.parquet", "--out", w / "summary.parquet", check=True)
    cli("eta", w / "summary.parquet", "--a", "A", "--f", "F", "--reference", "immediate", "--draws", "100",
        "--out", w / "eta.parquet", check=True)
    write_live(w, float(summary_row(run_dir)["source_s"]))
    ex = build_explorer([w / "live.parquet", w / "summary.parquet", w / "eta.parquet"])
    assert ex.live is not None and ex.live.live.folder == w
    got = talk_data(explorer_files(ex))
    o = index_of(got, "A", "immediate")
    assert got["live"]["outputs"][o]["request"]["end"] == [1_500_000_000, 2_200_000_000, 2_505_000_000]


@pytest.mark.slow
def test_a_real_live_run_gives_its_timeline_and_comparison_a_as_delta_l(tmp_path, cli):
    """`simulplay live` against a scripted server (pieces of audio with scripted gaps), its
    manifest replayed: each live lane is the run's timeline.parquet, and ΔL under the
    primary replay (the live manifest's own replay) is comparison (a)'s signed difference
    in agreement.parquet (replay − live), which `live` computed on its own."""
    from tests.live.fake_server import ScriptedServer
    from tests.live.helpers import write_trace

    streams = [{"talk_id": talk, "system": system, "source_s": 1.5, "updates": ups}
               for talk in ("t1", "t2")
               for system, ups in (("A", [(0.1, "one"), (0.2, "two"), (0.3, "three"), (1.0, "four.")]),
                                   ("F", [(0.15, "one two"), (0.6, "three four.")]))]
    trace = write_trace(tmp_path / "t.jsonl", streams)
    run = tmp_path / "live"
    with ScriptedServer({}, default=[("sleep", 0.05), ("audio", 4800), ("sleep", 0.03), ("audio", 4800)]) as server:
        res = cli("live", trace, "--rule", "immediate", "--rule", "timer:w=0.5", "--backend",
                  f"http:base_url={server.url}", "--out", run)
    assert res.returncode == 0, res.stderr
    cli("replay", run / "live.parquet", "--out", tmp_path / "summary.parquet", check=True)
    cli("eta", tmp_path / "summary.parquet", "--a", "A", "--f", "F", "--reference", "immediate", "--draws", "100",
        "--out", tmp_path / "eta.parquet", check=True)
    ex = build_explorer([run / "live.parquet", tmp_path / "summary.parquet", tmp_path / "eta.parquet"])
    files = explorer_files(ex)
    timeline = pd.read_parquet(run / "timeline.parquet")
    agree = pd.read_parquet(run / "agreement.parquet")
    agree = agree[agree["release"] == "request"].set_index(["talk_id", "system", "condition"])
    checked = 0
    for talk in ("t1", "t2"):
        data = talk_data(files, talk)
        for o, out in enumerate(data["outputs"]):
            key = (talk, out["system"], out["condition"])
            for release in ("request", "chunk"):
                lane = data["live"]["outputs"][o][release]
                want = timeline[(timeline["talk_id"] == talk) & (timeline["system"] == out["system"])
                                & (timeline["condition"] == out["condition"]) & (timeline["release"] == release)]
                assert lane["end"] == [round(x * 1e9) for x in want["end_s"]]
                assert lane["seq"] == want["seq"].tolist() and lane["chunk"] == want["chunk"].tolist()
            d_l = data["live"]["outputs"][o]["request"]["dL"]["primary"]
            assert d_l == pytest.approx(agree.at[key, "offset_s_replay"] - agree.at[key, "offset_s_live"], abs=1e-9)
            checked += 1
    assert checked == 8
