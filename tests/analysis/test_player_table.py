"""The player table: one row per output and pre-buffer, per-row signatures, first audible audio."""


import numpy as np
import pandas as pd
import pytest

from simulplay.analysis.player_table import (
    PLAYER_COLUMNS,
    PlayerConfig,
    parse_prebuffers,
    player_config,
    player_metrics,
)
from simulplay.core.errors import InputError
from simulplay.manifest import validate_manifest
from tests.support.factories import MIDDLE_STALL_REQUESTS, manifest

# service 0: each request is ready at its dispatch time


def table(outputs, **kw):
    m = validate_manifest(manifest(outputs, source_s=20.0), "m.csv")
    return player_metrics(m, source="m.csv", **kw)


def test_one_row_per_output_and_prebuffer_with_hand_computed_values():
    cfg = PlayerConfig(prebuffers_s=(0.0, 0.5, 2.5))
    res = table({("t1", "A", "immediate"): MIDDLE_STALL_REQUESTS, ("t1", "F", "immediate"): [(0, 1, 0.0)]}, config=cfg)
    t = res.table
    assert list(t.columns) == ["talk_id", "system", "condition", *PLAYER_COLUMNS]
    assert len(t) == 6 and list(t["prebuffer_s"]) == [0.0, 0.5, 2.5] * 2
    a = t[t["system"] == "A"].reset_index(drop=True)
    row = a.iloc[0]
    assert (row["n_parts"], row["n_arrivals"], row["audio_s"]) == (4, 4, 6.0)
    assert (row["first_ready_s"], row["first_playable_s"]) == (1.0, 1.0)
    assert (row["stall_count"], row["stall_total_s"], row["stall_longest_s"]) == (1, 2.0, 2.0)
    assert row["required_startup_delay_s"] == 2.0 and row["stall_free_prebuffer_s"] == pytest.approx(1.99)
    assert (row["n_frames"], row["fluidity_deadlines"], row["fluidity_missed"]) == (300, 400, 101)
    assert row["fluidity_index"] == pytest.approx(299 / 400)
    assert np.isnan(row["first_audible_s"]) and row["source_s"] == 20.0
    assert list(a["prebuffer_first_sound_s"]) == [1.0, 1.5, 3.5]
    assert list(a["prebuffer_stall_count"]) == [1, 1, 0]
    assert list(a["prebuffer_stall_total_s"]) == [2.0, 1.5, 0.0]
    assert list(a["prebuffer_end_s"]) == [9.0, 9.0, 9.5]
    # an output with no audio has no player metrics
    f = t[t["system"] == "F"].iloc[0]
    assert f["n_parts"] == 1 and f["n_arrivals"] == 0 and f["audio_s"] == 0
    assert pd.isna(f["stall_count"]) and np.isnan(f["first_playable_s"]) and np.isnan(f["prebuffer_end_s"])
    assert str(t["stall_count"].dtype) == "Int64"


def test_every_row_is_signed_with_its_own_prebuffer():
    res = table({("t1", "A", "timer:w=4"): MIDDLE_STALL_REQUESTS}, config=PlayerConfig(prebuffers_s=(0.0, 1.5)))
    assert [s["prebuffer"] for s in res.signatures] == ["0s", "1.5s"]
    for s in res.signatures:
        assert (s["table"], s["release"], s["service"], s["rule"]) == ("player", "request", "measured", "timer:w=4")
        assert (s["frame"], s["min_stall"], s["startup_delay"]) == ("20ms", "10ms", "0ms")
        assert "audible" not in s


def test_settings_change_the_numbers():
    outputs = {("t1", "A", "immediate"): MIDDLE_STALL_REQUESTS}
    strict = table(outputs, config=PlayerConfig(min_stall_s=0.0, prebuffers_s=(0.0,))).table.iloc[0]
    assert strict["stall_free_prebuffer_s"] == 2.0
    lax = table(outputs, config=PlayerConfig(min_stall_s=2.5, prebuffers_s=(0.0,))).table.iloc[0]
    assert lax["stall_count"] == 0 and lax["stall_free_prebuffer_s"] == 0.0
    # a start-up delay equal to the 2 s stall makes the 6.0 s frame exactly on time
    delayed = table(outputs, config=PlayerConfig(startup_delay_s=2.0, prebuffers_s=(0.0,))).table.iloc[0]
    assert (delayed["fluidity_missed"], delayed["fluidity_index"]) == (0, 1.0)
    coarse = table(outputs, config=PlayerConfig(frame_s=1.5, prebuffers_s=(0.0,))).table.iloc[0]
    assert coarse["n_frames"] == 4 and coarse["first_playable_s"] == 1.0


def test_player_config_parses_and_reports_every_bad_setting():
    cfg = player_config(frame_ms=40, min_stall_ms=0, startup_delay_ms=5, prebuffer_s="1.5, 0,0.25")
    assert (cfg.frame_s, cfg.min_stall_s, cfg.startup_delay_s, cfg.prebuffers_s) == (0.04, 0.0, 0.005,
                                                                                    (0.0, 0.25, 1.5))
    with pytest.raises(InputError) as e:
        player_config(frame_ms=0, min_stall_ms=-1, startup_delay_ms=float("nan"), prebuffer_s="0,x")
    lines = str(e.value).splitlines()
    assert len(lines) == 4
    assert "--frame-ms 0" in lines[0] and "≥ 0.000001 (1 ns)" in lines[0]
    assert "--min-stall-ms -1" in lines[1] and "--startup-delay-ms nan" in lines[2]
    assert "'x' is not a number" in lines[3]
    for bad, msg in (("0,0", "repeats"), ("-1", "not ≥ 0"), ("inf", "not ≥ 0"), ("", "not a number")):
        with pytest.raises(InputError, match=msg):
            parse_prebuffers(bad)


# ---- first audible audio from samples -------------------------------------------------------

SR = 1000


def synthesized(c0_loud: bool):
    """One output: request 0 (ready 3.0; chunks ready at 2.0 and 3.0), request 1 (ready 6.0)."""
    m = manifest({("t1", "A", "immediate"): [(1.0, 2.0, 2.0), (5.0, 1.0, 0.5)]}, source_s=20.0)
    m["audio_key"], m["sample_rate"], m["n_samples"] = ["k0", "k1"], [SR, SR], [2000, 500]
    c0 = np.r_[np.zeros(500), np.full(500, 0.5 if c0_loud else 0.0)]
    audio = {"k0": (np.r_[c0, np.full(1000, 0.5)], SR), "k1": (np.full(500, 0.5), SR)}
    chunks = pd.DataFrame({"talk_id": "t1", "system": "A", "condition": "immediate", "seq": [0, 0, 1],
                           "chunk": [0, 1, 0], "ready_offset_s": [1.0, 2.0, 1.0], "audio_s": [1.0, 1.0, 0.5]})
    return validate_manifest(m, "m.csv"), audio, chunks


@pytest.mark.parametrize(("c0_loud", "release", "expected"), [
    (True, "request", 3.0), (True, "chunk", 2.0), (False, "request", 3.0), (False, "chunk", 3.0)])
def test_first_audible_is_the_arrival_of_the_part_with_the_first_loud_window(c0_loud, release, expected):
    m, audio, chunks = synthesized(c0_loud)
    res = player_metrics(m, config=PlayerConfig(prebuffers_s=(0.0,)), release=release, chunks=chunks,
                         load_audio=audio.__getitem__)
    row = res.table.iloc[0]
    assert row["first_audible_s"] == expected
    assert row["first_ready_s"] == (2.0 if release == "chunk" else 3.0)
    assert res.signatures[0]["audible"] == "-40dBFS/10ms"


def test_audio_that_does_not_match_the_manifest_is_refused():
    m, audio, _ = synthesized(True)
    short = {**audio, "k1": (np.zeros(499), SR)}
    with pytest.raises(InputError, match="audio k1.*expected 500 mono samples"):
        player_metrics(m, config=PlayerConfig(), load_audio=short.__getitem__)
    other_rate = {**audio, "k1": (np.zeros(500), 16000)}
    with pytest.raises(InputError, match="16000 Hz, manifest says 1000 Hz"):
        player_metrics(m, config=PlayerConfig(), load_audio=other_rate.__getitem__)
    mixed = m.assign(sample_rate=[SR, 2 * SR])
    with pytest.raises(InputError, match="mixes sample rates 1000, 2000"):
        player_metrics(mixed, config=PlayerConfig(), load_audio=audio.__getitem__)
    with pytest.raises(InputError, match="missing columns audio_key, sample_rate, n_samples"):
        player_metrics(m.drop(columns=["audio_key", "sample_rate", "n_samples"]), config=PlayerConfig(),
                       load_audio=audio.__getitem__)
    with pytest.raises(InputError, match="request t1/A/immediate seq 1, field 'n_samples'"):
        player_metrics(m.assign(n_samples=["2000", "x"]), config=PlayerConfig(), load_audio=audio.__getitem__)
