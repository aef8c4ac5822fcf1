"""Serial synthesizer clock and serial playback (docs/concepts.md#serial-playback)."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulplay.core.timebase import from_ns, to_ns
from simulplay.manifest import validate_manifest
from simulplay.sim import replay
from simulplay.sim.playback import ready_queue, serial_clock, serial_playback, summarize_playback
from simulplay.sim.variants import parse_service
from tests.support.factories import manifest, reference_clock, reference_playback

times = st.floats(0, 100, allow_nan=False)
durs = st.one_of(st.just(0.0), st.floats(0.01, 10, allow_nan=False))


@st.composite
def timelines(draw, min_size=1):
    n = draw(st.integers(min_size, 30))
    r = sorted(draw(st.lists(times, min_size=n, max_size=n))) if draw(st.booleans()) else \
        draw(st.lists(times, min_size=n, max_size=n))
    d = draw(st.lists(durs, min_size=n, max_size=n))
    return np.array(r), np.array(d)


def play_one(r, d):
    """The engine (int64 ns) on seconds taken to the nearest ns; also those ns as Python ints,
    on which the reference loops run exactly."""
    rn, dn = to_ns(r), to_ns(d)
    pb = serial_playback(np.zeros(int((dn > 0).sum()), dtype=np.int64), rn[dn > 0], dn[dn > 0])
    return pb, summarize_playback(pb, 1), rn.tolist(), dn.tolist()


@settings(max_examples=100, deadline=None)  # each example is a whole replay()
@given(timelines(), st.floats(1, 200))
@pytest.mark.slow
def test_offset_is_duration_plus_idle_minus_source(tl, S):
    """L = C_m − S = D + I − S (docs/concepts.md#serial-playback), through ``replay`` with the source duration S in the
    manifest; D and I come from the reference recurrence, not from the engine."""
    r, d = tl
    df = manifest({("t", "A", "c"): [(np.nan, np.nan, float(a)) for a in d]}, source_s=S)
    df["ready_s"] = r  # in any order; dispatch times (which may not go backwards) are not needed
    row = replay(validate_manifest(df, "m")).summary.iloc[0]
    ref = reference_playback(to_ns(r).tolist(), to_ns(d).tolist())  # exact on whole nanoseconds
    if ref["first"] is None:
        assert np.isnan(row["offset_s"])
        return
    assert row["offset_s"] == pytest.approx((ref["audio"] + ref["idle"]) / 1e9 - S, abs=1e-9)
    assert row["source_s"] == S


@settings(max_examples=400, deadline=None)
@given(timelines())
@pytest.mark.slow
def test_closed_form_equals_the_recurrence(tl):
    r, d = tl
    pb, s, rn, dn = play_one(r, d)
    ref = reference_playback(rn, dn)  # the recurrence, exact on whole nanoseconds
    if ref["first"] is None:
        assert not s.played[0]
        return
    assert (s.end[0], s.idle[0], s.first_play[0]) == (ref["end"], ref["idle"], ref["first"])
    # max-plus closed form with the C_0 = 0 term: C_m = max(Σd, max_k (r_k + Σ_{j≥k} d_j))
    rp, dp = np.array(rn)[np.array(dn) > 0], np.array(dn)[np.array(dn) > 0]
    tails = np.cumsum(dp[::-1])[::-1]
    assert s.end[0] == max(dp.sum(), (rp + tails).max())
    k = s.limiting[0]
    if rp.min() >= 0:
        assert rp[k] + tails[k] == s.end[0]  # exact ties: the last maximizer
        assert (rp[k + 1:] + tails[k + 1:] < s.end[0]).all()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.floats(-5, 50), st.floats(0, 3)), min_size=1, max_size=30))
def test_serial_clock_matches_the_loop(reqs):
    dispatch = to_ns(sorted(x for x, _ in reqs))
    service = to_ns([s for _, s in reqs])
    clock = serial_clock(np.zeros(len(reqs), np.int64), dispatch, service)
    assert (clock.ready == reference_clock(dispatch.tolist(), service.tolist())).all()
    assert (clock.ready - clock.start == service).all()
    assert np.all(clock.start >= dispatch)


def test_many_outputs_at_once_equal_each_alone():
    rng = np.random.default_rng(3)
    outs = {("t", "A", f"c{k}"): [(float(x), float(s), float(a)) for x, s, a in
                                  zip(np.sort(rng.uniform(0, 30, 12)), rng.uniform(0, 2, 12),
                                      rng.uniform(0, 3, 12))] for k in range(5)}
    df = validate_manifest(manifest(outs), "m")
    together = replay(df).summary.set_index("condition")
    for key in outs:
        alone = replay(validate_manifest(manifest({key: outs[key]}), "m")).summary.iloc[0]
        assert together.loc[key[2], "end_s"] == alone["end_s"]
        assert together.loc[key[2], "idle_s"] == alone["idle_s"]


def test_hand_computed_output():
    # dispatch, service, audio → ready 1, 3, 4 ; play [1,3), [3,4), [4,6) with idle 1 (initial)
    df = validate_manifest(manifest({("t", "A", "c"): [(0, 1, 2), (1, 2, 1), (3.5, 0.5, 2)]}, source_s=5), "m")
    res = replay(df)
    row = res.summary.iloc[0]
    assert (row["first_play_s"], row["audio_s"], row["idle_s"], row["end_s"]) == (1, 5, 1, 6)
    # every part is ready exactly when the previous one ends: all tie, the last is reported
    assert row["offset_s"] == 1 and row["n_parts"] == 3 and row["limiting_seq"] == 2
    assert res.parts["play_s"].tolist() == [1, 3, 4]


def test_service_models_zero_and_scale():
    df = validate_manifest(manifest({("t", "A", "c"): [(0, 1, 2), (1, 2, 1)]}, source_s=1), "m")
    zero = replay(df, service=parse_service("zero")).parts
    assert zero["ready_s"].tolist() == [0, 1]
    double = replay(df, service=parse_service("scale=2")).parts
    assert double["ready_s"].tolist() == [2, 6]


def test_ready_s_is_honoured_and_service_may_be_empty():
    df = manifest({("t", "A", "c"): [(0, 1, 2), (1, 2, 1)]})
    df["ready_s"] = [5.0, 6.0]
    df["service_s"] = [np.nan, np.nan]
    res = replay(validate_manifest(df, "m"))
    assert res.parts["ready_s"].tolist() == [5, 6]
    assert res.summary["end_s"].iloc[0] == 8


def test_limiting_event_is_the_last_maximizer():
    # part 2's late readiness limits: audio saved before it turns into idle
    r, d = np.array([0.0, 1.0, 10.0]), np.array([1.0, 1.0, 1.0])
    _, s, _, _ = play_one(r, d)
    assert s.limiting[0] == 2 and s.end[0] == 11 * 10**9


def test_ready_queue_counts_ready_unplayed_audio():
    ready, play, end = to_ns([0.0, 1.0]), to_ns([0.0, 2.0]), to_ns([2.0, 5.0])
    q = ready_queue(ready, play, end, to_ns([0.0, 0.5, 1.0, 2.0, 3.0, 5.0, 6.0]))
    assert from_ns(q).tolist() == [2.0, 1.5, 4.0, 3.0, 2.0, 0.0, 0.0]


def chunked_manifest():
    df = validate_manifest(manifest({("t", "A", "c"): [(0, 1, 2.0), (1, 1, 3.0)]}, source_s=5), "m")
    chunks = pd.DataFrame({"talk_id": "t", "system": "A", "condition": "c", "seq": [0, 0, 1],
                           "chunk": [0, 1, 0], "ready_offset_s": [0.4, 0.9, 1.0], "audio_s": [0.5, 1.5, 3.0]})
    return df, chunks


def test_chunk_release_readies_each_chunk_at_its_offset():
    df, chunks = chunked_manifest()
    res = replay(df, release="chunk", chunks=chunks)
    assert res.parts["ready_s"].tolist() == [0.4, 0.9, 2.0]  # request 1 starts at 1 (its dispatch)
    assert res.summary["audio_s"].iloc[0] == 5.0 and res.summary["n_parts"].iloc[0] == 3


@pytest.mark.parametrize("damage,fragment", [
    (lambda c: c[c["seq"] == 0], "hold 0.000000 s of audio, the manifest 3.000000 s"),
    (lambda c: pd.concat([c, c.iloc[[0]]]), "chunk 0 of request seq 0 repeats"),
    (lambda c: c.assign(audio_s=[0.5, 1.0, 3.0]), "hold 1.500000 s of audio, the manifest 2.000000 s"),
    (lambda c: pd.concat([c, c.iloc[[2]].assign(seq=7)]), "has chunks for request seq 7"),
    (lambda c: c.assign(backend="x"), "identifies outputs by talk_id, system, condition, backend"),
])
def test_chunk_tables_that_do_not_cover_the_requests_exactly_are_refused(damage, fragment):
    from simulplay.core.errors import InputError

    df, chunks = chunked_manifest()
    with pytest.raises(InputError, match=fragment):
        replay(df, release="chunk", chunks=damage(chunks))


@pytest.mark.parametrize("r1,d1,r2", [(0.1, 0.2, 0.3), (1.1, 2.2, 3.3), (0.7, 0.1, 0.8)])
def test_a_part_ready_exactly_when_the_previous_ends_is_a_tie_without_idle(r1, d1, r2):
    _, s, _, _ = play_one(np.array([r1, r2]), np.array([d1, 1.0]))
    assert s.limiting[0] == 1  # the last maximizer: r1 + d1 is r2 to the nanosecond
    assert from_ns(s.idle[0]) == r1  # only the initial wait
