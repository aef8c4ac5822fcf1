"""Parts without audio, both readings (``--silent-parts skip|hold``): skip them (SimulEval)
or let them hold the playback clock at their readiness (Eq. 1 taken literally).

Every expected value below is worked out by hand in the comments from the request rows
(dispatch, service, audio) with ``start = max(dispatch, ready_prev)``, ``ready = start +
service``, ``p = max(r, C_prev)``, ``C = p + d``.
"""

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from simulplay.analysis import Bootstrap, compute_eta
from simulplay.analysis.player import stalls, timeline
from simulplay.analysis.player_table import PlayerConfig, player_metrics
from simulplay.core.errors import InputError
from simulplay.manifest import validate_manifest
from simulplay.sim import replay
from simulplay.sim.variants import parse_variant
from tests.support.checks import assert_one_line_error
from tests.support.factories import manifest

# silent FIRST part: ready 3 (silent); second ready 5 (starts max(4, 3) = 4), d 2; third ready 6, d 1
SILENT_FIRST = [(2, 1, 0.0), (4, 1, 2.0), (5, 1, 1.0)]
# silent LAST part: first ready 1, plays 1..3; second (silent) dispatched 10, ready 11
SILENT_LAST = [(0, 1, 2.0), (10, 1, 0.0)]
# silent MIDDLE part ready before the audio ends: ready 1, 1.5 (silent), 2.5
SILENT_INSIDE = [(0, 1, 2.0), (1, 0.5, 0.0), (1.5, 1, 1.0)]


def row(reqs, silent, source_s=10.0):
    m = validate_manifest(manifest({("t", "A", "c"): reqs}, source_s), "m")
    res = replay(m, silent_parts=silent)
    return res.summary.iloc[0], res


def test_a_silent_first_part_sets_the_first_playback_only_when_held():
    skip, _ = row(SILENT_FIRST, "skip")
    # skip: audible parts r=5 (waits 5, plays 5..7) and r=6 (plays 7..8)
    assert (skip["first_play_s"], skip["audio_s"], skip["idle_s"], skip["end_s"]) == (5, 3, 5, 8)
    assert skip["limiting_seq"] == 1  # candidates 5 + 3 = 8, 6 + 1 = 7
    hold, res = row(SILENT_FIRST, "hold")
    # hold: silent part p = 3, C = 3 (idle 3); then p = 5 (idle 2), C = 7; then 7..8
    assert (hold["first_play_s"], hold["audio_s"], hold["idle_s"], hold["end_s"]) == (3, 3, 5, 8)
    assert hold["limiting_seq"] == 1  # candidates 3 + 3 = 6, 5 + 3 = 8, 6 + 1 = 7
    assert res.parts["play_s"].tolist() == [3, 5, 7] and res.parts["idle_s"].tolist() == [3, 2, 0]


def test_a_silent_last_part_moves_the_end_only_when_held():
    skip, _ = row(SILENT_LAST, "skip")
    # skip: plays 1..3; the silent request (ready 11) is not played
    assert (skip["end_s"], skip["idle_s"], skip["offset_s"], skip["limiting_seq"]) == (3, 1, -7, 0)
    hold, _ = row(SILENT_LAST, "hold")
    # hold: p = max(11, 3) = 11 = C_m; idle 1 + 8 = 9; L = 11 − 10 = 1; candidates 1 + 2 = 3, 11 + 0 = 11
    assert (hold["end_s"], hold["idle_s"], hold["offset_s"], hold["limiting_seq"]) == (11, 9, 1, 1)
    assert hold["first_play_s"] == skip["first_play_s"] == 1
    assert hold["offset_s"] == hold["audio_s"] + hold["idle_s"] - hold["source_s"]  # L = D + I − S


def test_a_silent_part_ready_before_the_audio_ends_changes_nothing():
    # hold: the silent part's p = max(1.5, 3) = 3 = C: no wait; the last part plays 3..4;
    # limiting: candidates 1 + 3 = 4, (hold only) 1.5 + 1 = 2.5, 2.5 + 1 = 3.5 → the first part
    skip, hold = row(SILENT_INSIDE, "skip")[0], row(SILENT_INSIDE, "hold")[0]
    cols = ["first_play_s", "audio_s", "idle_s", "end_s", "offset_s", "limiting_seq"]
    assert skip[cols].tolist() == hold[cols].tolist() == [1, 3, 1, 4, -6, 0]


def test_an_output_without_audio_has_no_end_under_either_reading():
    for silent in ("skip", "hold"):
        r, _ = row([(0, 1, 0.0), (5, 1, 0.0)], silent)
        assert np.isnan(r["end_s"]) and np.isnan(r["first_play_s"]) and r["idle_s"] == 0
        assert r["limiting_seq"] is pd.NA


def test_every_replay_signature_records_the_reading():
    for silent in ("skip", "hold"):
        _, res = row(SILENT_FIRST, silent)
        assert {s["silent"] for s in res.signatures} == {silent}
    with pytest.raises(InputError, match="--silent-parts 'literal'.*unknown reading"):
        row(SILENT_FIRST, "literal")


def test_eta_refuses_a_panel_that_mixes_the_readings():
    outs = {(t, s, c): SILENT_LAST for t in ("t1", "t2") for s in ("A", "F") for c in ("immediate", "timer:w=4")}
    m = validate_manifest(manifest(outs, 10.0), "m")
    skip, hold = replay(m, silent_parts="skip"), replay(m, silent_parts="hold")
    ref = skip.summary["condition"] == "immediate"
    mixed = pd.concat([skip.summary[ref], hold.summary[~ref]], ignore_index=True)
    sigs = [s for s, r in zip(skip.signatures, ref) if r] + [s for s, r in zip(hold.signatures, ref) if not r]
    with pytest.raises(InputError, match="differ in 'silent' \\(skip vs hold\\)"):
        compute_eta(mixed, a="A", f="F", reference="immediate", boot=Bootstrap(draws=10), upstream=sigs)
    res = compute_eta(hold.summary, a="A", f="F", reference="immediate", boot=Bootstrap(draws=10),
                      upstream=hold.signatures)
    assert res.table_signatures[0]["silent"] == "hold"


def test_the_player_under_hold_waits_for_a_silent_part_and_holds_the_end():
    # parts in play order: ready 1 (d 2), silent ready 10, ready 4 (d 1): readiness out of order
    ready, audio = [1.0, 10.0, 4.0], [2.0, 0.0, 1.0]
    skip, hold = timeline(ready, audio), timeline(ready, audio, hold=True)
    # skip: arrivals 1 and 4 (running max of audible parts); hold: 1 and max(1, 10, 4) = 10
    assert skip.time.tolist() == [1_000_000_000, 4_000_000_000] and skip.held is None
    assert hold.time.tolist() == [1_000_000_000, 10_000_000_000]
    # hold: plays 1..3, waits 7 s for the part behind the silent one, plays 10..11
    s = stalls(hold)
    assert (s.count, s.total, s.end) == (1, 7_000_000_000, 11_000_000_000)
    # a silent last part holds the end: audio 1..3, silent ready 20 → end 20
    assert stalls(timeline([1.0, 20.0], [2.0, 0.0], hold=True)).end == 20_000_000_000
    assert stalls(timeline([1.0, 20.0], [2.0, 0.0])).end == 3_000_000_000


def test_player_table_records_the_reading_and_holds_the_end():
    m = validate_manifest(manifest({("t", "A", "c"): SILENT_LAST}, 10.0), "m")
    cfg = PlayerConfig(prebuffers_s=(0.0,))
    skip = player_metrics(m, config=cfg).table.iloc[0]
    hold = player_metrics(m, config=cfg, silent_parts="hold")
    assert skip["prebuffer_end_s"] == 3 and hold.table.iloc[0]["prebuffer_end_s"] == 11  # by hand, as above
    assert hold.signatures[0]["silent"] == "hold"


def test_an_experiment_variant_names_the_other_reading():
    v = parse_variant("silent=hold", source="exp.toml", key="analysis.variants")
    assert (v.release.name, v.service.name, v.silent) == ("request", "measured", "hold")
    with pytest.raises(InputError, match="'silent=literal' is not a replay variant"):
        parse_variant("silent=literal", source="exp.toml", key="analysis.variants")


@pytest.mark.slow


def test_replay_command_writes_both_readings(cli, tmp_path):
    p = tmp_path / "m.csv"
    manifest({("t", "A", "c"): SILENT_LAST}, 10.0).to_csv(p, index=False)
    for silent, end in (("skip", 3.0), ("hold", 11.0)):
        out = tmp_path / f"{silent}.parquet"
        cli("replay", p, "--out", out, "--silent-parts", silent, check=True)
        assert pd.read_parquet(out)["end_s"].tolist() == [end]
        assert f'"silent": "{silent}"' in pq.read_schema(out).metadata[b"simulplay"].decode()
    assert_one_line_error(cli("replay", p, "--out", tmp_path / "x.csv", "--silent-parts", "literal"),
                          "--silent-parts 'literal'", "skip", "hold")
    assert not (tmp_path / "x.csv").exists()
