"""Modelled closed-loop outputs: the policy runs on the duration model and the fitted clock."""

import pytest

import simulplay
from simulplay.durationmodel.fit import DurationFit, update_counts
from simulplay.durationmodel.loop import loop_manifest
from simulplay.durationmodel.modelled import PanelModel
from simulplay.grouping.vectorized import update_table
from simulplay.sim.servicefit import ServiceFit
from tests.support.factories import stream

# audio = 0.1 s + 0.2 s per character of the request; service 0.2 s; no sample rate
MODEL = PanelModel((), DurationFit((), ("intercept", "chars"), (0.1, 0.2), ("intercept", "chars"), 1, 0),
                   ServiceFit((), (0.2, 0.0, 0.0), (), 1, 0.0), 0)
S = stream([0, 0, 1, 2], ["aaa bbb ccc.", "dd", "ee ff gg.", "hh"], source_s=5.0)


def rows(cond, factor=1.0):
    table = update_table([S])
    m = loop_manifest(table, update_counts(table), [cond], [MODEL], service_factor=factor)
    return [(r.seq, r.dispatch_s, r.trigger, round(r.audio_s, 9)) for r in m.itertuples()], m


def test_backlog_on_the_model_by_hand():
    # 0: "aaa bbb ccc. dd" (15 chars, 4 words), q = 0 → send; audio 0.1 + 3 = 3.1 s, ready 0.2, plays 0.2–3.3.
    # 1: "ee ff gg." arrives, q = 2.3 > 1 → wake at 2.3. 2: "hh" arrives, the stream ends, nothing in
    #    flight: "ee ff gg. hh" (12 chars) goes (q = 1.3 > 1: released by the end, eos); audio 2.5 s.
    got, _ = rows("backlog:below=1,max_chars=300,min_words=3")
    assert got == [(0, 0.0, "backlog", 3.1), (1, 2.0, "eos", 2.5)]
    # below 2.5: at 1, q = 2.3 ≤ 2.5 → "ee ff gg." (9 chars, 3 words) at 1; "hh" alone at the end
    got, _ = rows("backlog:below=2.5,max_chars=300,min_words=3")
    assert got == [(0, 0.0, "backlog", 3.1), (1, 1.0, "backlog", 1.9), (2, 2.0, "eos", 0.5)]


def test_the_modelled_rows_replay_to_the_engines_clock():
    _, m = rows("backlog:below=2.5,max_chars=300,min_words=3")
    # ready 0.2, 1.2, 2.2; plays 0.2–3.3, 3.3–5.2, 5.2–5.7: the end is 5.7 s
    out = simulplay.replay(m)
    assert out.summary["end_s"].iloc[0] == pytest.approx(5.7, abs=1e-9)
    # zero service: the policy sees audio at once (ready 0, plays 0–3.1): at 1, q = 2.1 ≤ 2.5 as before
    got, m0 = rows("backlog:below=2.5,max_chars=300,min_words=3", factor=0.0)
    assert got[1][:3] == (1, 1.0, "backlog")
    assert simulplay.replay(m0, service="zero").summary["end_s"].iloc[0] == pytest.approx(5.5, abs=1e-9)


def test_livekit_pacer_on_the_model_by_hand():
    # BlingFire's sentences (≥ 20 characters, each emitted once the next has begun): "The first
    # sentence is here." (27 chars) at 0, "The second one is longer." (25) at 1, "Third one ends now."
    # (19) flushed at the end (2). The pacer sends the first at once (audio 0.1 + 5.4 = 5.5 s, ready
    # 0.2). Wake 0.5: audio seen, start 0.5, generating → 0.7: stopped, remaining 0.5 + 5.5 − 0.7 = 5.3
    # > 5 → wake 1.2. At 1 the second sentence comes: remaining 5.0 ≤ 5 → sent (5.1 s, ready 1.2).
    # 1.5: generating; 1.7: stopped, remaining 9.4 → wake 6.1; at 2 the input ends (remaining 9.1,
    # the flushed sentence held); at 6.1 remaining 0.5 + 10.6 − 6.1 = 5.0 → sent (3.9 s).
    s = stream([0, 1, 2], ["The first sentence is here. The sec", "ond one is longer. Third", "one ends now."],
               glue=[False, True, False], source_s=12.0)
    table = update_table([s])
    m = loop_manifest(table, update_counts(table), ["livekit-pacer"], [MODEL])
    assert [(r.seq, r.dispatch_s, r.trigger, r.n_updates, round(r.audio_s, 9)) for r in m.itertuples()] == [
        (0, 0.0, "pacer", 1, 5.5), (1, 1.0, "pacer", 2, 5.1), (2, 6.1, "pacer", 2, 3.9)]
