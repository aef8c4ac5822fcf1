"""Exact time in replay: the engine against an exact-rational reference, to the nanosecond.

The reference below is written independently of the engine: plain Python loops over the
docs/concepts.md#serial-playback recurrences in :class:`fractions.Fraction` (exact rationals), with the
conventions stated in :mod:`simulplay.core.timebase` applied by exact rounding (Python's
``round`` of a Fraction rounds half to even): a float time goes to
``round(Fraction(x) · 10⁹)`` ns, and an output of one sample rate has its running sample
totals go to ``round(Fraction(N · 10⁹, sr))`` ns. The engine's closed forms, int64 arrays,
Dekker product and integer division must agree with it exactly.
"""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from simulplay.core.errors import InputError
from simulplay.core.timebase import MAX_S, TimeRangeError, dur_ns, from_ns, part_dur_ns, to_ns
from simulplay.manifest import validate_manifest
from simulplay.sim import replay

G = 10**9


def ref_ns(x: float) -> int:
    return round(Fraction(x) * G)


def ref_durations(n: list[int], rates: list[int]) -> list[int]:
    """Running totals of samples to the nearest ns (one rate), else each part alone."""
    sounding = {r for k, r in zip(n, rates) if k > 0}
    if len(sounding) > 1:
        return [round(Fraction(k * G, r)) if k else 0 for k, r in zip(n, rates)]
    rate = sounding.pop() if sounding else 1
    out, total, prev = [], 0, 0
    for k in n:
        total += k
        now = round(Fraction(total * G, rate))
        out.append(now - prev)
        prev = now
    return out


def ref_clock(dispatch: list[int], service: list[int]) -> tuple[list[int], list[int]]:
    starts, readies, prev = [], [], None
    for d, s in zip(dispatch, service):
        start = d if prev is None else max(d, prev)
        prev = start + s
        starts.append(start)
        readies.append(prev)
    return starts, readies


def ref_playback(ready: list[int], dur: list[int], seqs: list[int]) -> dict:
    """docs/concepts.md#serial-playback one part at a time (silent parts skipped), and the limiting event by brute
    force: the last played part maximizing r_k + Σ_{j≥k} d_j, the first one when that is
    below Σ d (playback from time zero limits)."""
    c, first, idle, parts = 0, None, 0, []
    for r, d in zip(ready, dur):
        if d == 0:
            parts.append(None)
            continue
        gap = max(0, r - c)
        p = max(r, c)
        idle += gap
        first = p if first is None else first
        c = p + d
        parts.append((p, c, gap))
    played = [k for k, d in enumerate(dur) if d > 0]
    out = {"audio": sum(dur), "idle": idle, "first": first, "end": c if played else None, "parts": parts}
    if played:
        value = {k: ready[k] + sum(dur[k:]) for k in played}
        best = max(value.values())
        k = [k for k in played if value[k] == best][-1]
        out["limiting"] = seqs[played[0]] if best < sum(dur) else seqs[k]
        assert max(best, sum(dur)) == c  # the closed form holds on the reference too
    return out


def random_output(rng: random.Random, talk: str, clocked: bool, mixed: bool):
    """One output's requests: sample counts (some silent), and either a clock (dispatch,
    service) or given readiness placed on, just before or just after the end of the audio
    so far, by whole and sub-nanosecond amounts (ties and near-ties)."""
    m = rng.randint(1, 12)
    rate = rng.choice([16_000, 22_050, 24_000, 44_100, 1024, 3])
    rates = [rng.choice([rate, 48_000]) if mixed else rate for _ in range(m)]
    n = [0 if rng.random() < 0.2 else rng.randint(1, 3 * r) for r in rates]
    rows, t, total = [], rng.uniform(0, 3), 0.0
    for j in range(m):
        row = {"talk_id": talk, "system": "A", "condition": "c", "seq": j, "n_samples": n[j],
               "sample_rate": rates[j], "audio_s": n[j] / rates[j], "source_s": 10.0 + rng.random()}
        if clocked:
            t += rng.choice([0.0, rng.uniform(0, 2), 1.5e-9, 0.5e-9])
            row |= {"dispatch_s": t, "service_s": rng.choice([0.0, rng.uniform(0, 1), 0.3e-9, 2.5e-9]),
                    "ready_s": np.nan}
        else:
            jitter = rng.choice([0.0, 0.0, 0.3e-9, -0.3e-9, 0.5e-9, -0.5e-9, 0.7e-9, -1e-9, rng.uniform(-2, 2)])
            row |= {"dispatch_s": np.nan, "service_s": np.nan, "ready_s": max(0.0, total + jitter)}
        total += n[j] / rates[j]
        rows.append(row)
    source = rows[0]["source_s"]
    for r in rows:
        r["source_s"] = source
    return rows


def reference_of(rows: list[dict]) -> dict:
    n, rates = [r["n_samples"] for r in rows], [r["sample_rate"] for r in rows]
    dur = ref_durations(n, rates)
    if np.isnan(rows[0]["ready_s"]):
        starts, ready = ref_clock([ref_ns(r["dispatch_s"]) for r in rows], [ref_ns(r["service_s"]) for r in rows])
    else:
        ready = [ref_ns(r["ready_s"]) for r in rows]
    out = ref_playback(ready, dur, [r["seq"] for r in rows])
    out |= {"ready": ready, "dur": dur, "source": ref_ns(rows[0]["source_s"])}
    return out


def test_replay_equals_the_exact_rational_reference_to_the_nanosecond():
    rng = random.Random(20240615)
    outputs = {f"t{i}": random_output(rng, f"t{i}", clocked=i % 2 == 0, mixed=i % 7 == 3) for i in range(300)}
    df = pd.DataFrame([r for rows in outputs.values() for r in rows])
    res = replay(validate_manifest(df, "m"))
    summary = res.summary.set_index("talk_id")
    parts = res.parts.set_index(["talk_id", "seq"])
    ties = 0
    for talk, rows in outputs.items():
        ref = reference_of(rows)
        row = summary.loc[talk]
        assert to_ns(row["audio_s"]) == ref["audio"]
        assert to_ns(row["idle_s"]) == ref["idle"]
        if ref["end"] is None:
            assert np.isnan(row["end_s"]) and np.isnan(row["first_play_s"]) and np.isnan(row["offset_s"])
            continue
        assert to_ns(row["end_s"]) == ref["end"] and to_ns(row["first_play_s"]) == ref["first"]
        assert to_ns(row["offset_s"]) == ref["end"] - ref["source"]
        assert row["limiting_seq"] == ref["limiting"]
        for j, part in enumerate(ref["parts"]):
            got = parts.loc[(talk, j)]
            assert to_ns(got["ready_s"]) == ref["ready"][j] and to_ns(got["audio_s"]) == ref["dur"][j]
            if part is None:
                assert np.isnan(got["play_s"]) and got["idle_s"] == 0
                continue
            assert (to_ns(got["play_s"]), to_ns(got["end_s"]), to_ns(got["idle_s"])) == part
            ties += part[2] == 0 and j > 0 and ref["ready"][j] == part[0]
    assert ties > 30  # parts ready exactly when the previous one ended: no sliver of idle


def test_chunk_release_equals_the_exact_rational_reference():
    rng = random.Random(7)
    rows, chunk_rows, expected = [], [], {}
    for i in range(60):
        talk, m, rate = f"t{i}", rng.randint(1, 6), rng.choice([22_050, 24_000, 3])
        t, starts_in = 0.0, []
        for j in range(m):
            k = rng.randint(1, 4)
            n = [0 if rng.random() < 0.2 else rng.randint(1, 2 * rate) for _ in range(k)]
            t += rng.choice([0.0, rng.uniform(0, 2), 0.5e-9])
            service = rng.choice([rng.uniform(0, 1), 1.5e-9])
            rows.append({"talk_id": talk, "system": "A", "condition": "c", "seq": j, "dispatch_s": t,
                         "service_s": service, "n_samples": sum(n), "sample_rate": rate,
                         "audio_s": sum(n) / rate, "source_s": 20.0})
            offsets = sorted(rng.choice([0.0, rng.uniform(0, service), 0.5e-9]) for _ in range(k))
            for c, (nc, off) in enumerate(zip(n, offsets)):
                chunk_rows.append({"talk_id": talk, "system": "A", "condition": "c", "seq": j, "chunk": c,
                                   "ready_offset_s": off, "audio_s": nc / rate, "n_samples": nc})
            starts_in.append((ref_ns(t), ref_ns(service), [ref_ns(o) for o in offsets], n))
        starts, _ = ref_clock([s[0] for s in starts_in], [s[1] for s in starts_in])
        ready = [st + o for st, (_, _, offs, _) in zip(starts, starts_in) for o in offs]
        n_all = [x for *_, n in starts_in for x in n]
        expected[talk] = ref_playback(ready, ref_durations(n_all, [rate] * len(n_all)), list(range(len(n_all))))
    res = replay(validate_manifest(pd.DataFrame(rows), "m"), release="chunk", chunks=pd.DataFrame(chunk_rows))
    for talk, ref in expected.items():
        row = res.summary.set_index("talk_id").loc[talk]
        assert (to_ns(row["audio_s"]), to_ns(row["idle_s"])) == (ref["audio"], ref["idle"])
        if ref["end"] is not None:
            assert to_ns(row["end_s"]) == ref["end"] and to_ns(row["first_play_s"]) == ref["first"]


@pytest.mark.slow


def test_the_rounding_stays_within_its_stated_bound_of_the_unrounded_times():
    """Against the same recurrence on the unrounded values (ready given): audio D within
    0.5 ns (one rounded running total), the end within 1.5 ns (a rounded readiness plus a
    difference of two rounded running totals), whatever the number of parts."""
    rng = random.Random(99)
    worst_end = Fraction(0)
    for _ in range(200):
        rows = random_output(rng, "t", clocked=False, mixed=False)
        row = replay(validate_manifest(pd.DataFrame(rows), "m")).summary.iloc[0]
        dur = [Fraction(r["n_samples"] * G, r["sample_rate"]) for r in rows]
        c = Fraction(0)
        for r, d in zip(rows, dur):
            if d:
                c = max(Fraction(r["ready_s"]) * G, c) + d
        assert abs(to_ns(row["audio_s"]) - sum(dur)) <= Fraction(1, 2)
        if sum(dur):
            worst_end = max(worst_end, abs(to_ns(row["end_s"]) - c))
    assert worst_end <= Fraction(3, 2)


def test_to_ns_takes_the_exact_float_to_the_nearest_nanosecond_ties_to_even():
    rng = random.Random(5)
    values = [k / 1024 for k in range(-3000, 3000)]  # k/1024 s: every odd k is an exact half-ns tie
    values += [rng.uniform(-1e4, 1e4) for _ in range(3000)] + [rng.uniform(-9e9, 9e9) for _ in range(3000)]
    values += [float(np.nextafter((k + 0.5) / 1e9, to)) for k in range(0, 10**9, 10**6) for to in (0, 1)]
    values += [0.0, -0.0, 1.5e-9, 2.5e-9, -0.5e-9, 5e-324, 2**52 / 1e9, (2**53 + 1) / 1e9]
    got = to_ns(np.array(values))
    assert got.dtype == np.int64
    assert [int(g) for g in got] == [ref_ns(v) for v in values]
    assert to_ns(1 / 1024) == 976_562 and to_ns(3 / 1024) == 2_929_688  # 976 562.5 and 2 929 687.5 ns
    for bad in (np.nan, np.inf, MAX_S, -MAX_S * 1.01):
        with pytest.raises(TimeRangeError):
            to_ns(bad)


def test_dur_ns_is_the_nearest_nanosecond_of_the_exact_duration():
    rng = random.Random(6)
    n = [rng.randint(0, 10**9) for _ in range(5000)] + [1, 3, 1025]
    rates = [rng.choice([8000, 22_050, 44_100, 48_000, 1024, 2048, 7, rng.randint(1, 10**9)]) for _ in n[:-3]]
    rates += [2, 1024, 1024]
    expected = [round(Fraction(k * G, r)) for k, r in zip(n, rates)]
    assert [int(d) for d in dur_ns(np.array(n), np.array(rates))] == expected
    assert dur_ns(0, 0) == 0  # a silent part needs no rate
    with pytest.raises(ValueError):
        dur_ns(1, 0)


def test_running_totals_do_not_drift_while_per_part_rounding_would():
    # 1000 parts of 1 sample at 22,050 Hz: 45 351.47… ns each
    n, rate = np.ones(1000, np.int64), np.full(1000, 22_050)
    d = part_dur_ns(np.zeros(1000, np.int64), n, rate)
    assert d.sum() == round(Fraction(1000 * G, 22_050)) == 45_351_474
    assert set(d.tolist()) == {45_351, 45_352}
    assert dur_ns(n, rate).sum() == 45_351_000  # rounding each part would lose 474 ns


def test_from_ns_round_trips_whole_nanoseconds():
    ns = np.array([0, 1, -1, 999_999_999, 10**15 + 7, 2**53 - 1, -(2**52) + 3], np.int64)
    assert (to_ns(from_ns(ns)) == ns).all()
    assert from_ns(np.int64(300_000_000)) == 0.3


def test_times_beyond_292_years_are_refused_with_file_and_field():
    rows = [{"talk_id": "t", "system": "A", "condition": "c", "seq": 0, "dispatch_s": 1e10, "service_s": 1.0,
             "audio_s": 1.0, "source_s": 5.0}]
    with pytest.raises(InputError, match=r"m.csv, row 1, field 'dispatch_s': 1e\+10 s is beyond ±292 years"):
        validate_manifest(pd.DataFrame(rows), "m.csv")
    rows[0]["dispatch_s"] = 1.0
    df = validate_manifest(pd.DataFrame(rows * 2).assign(seq=[0, 1], service_s=[5e9, 5e9]), "m.csv")
    with pytest.raises(InputError, match=r"m.csv, field 'service_s': times reach .* beyond the ±146 years") as e:
        replay(df, source="m.csv")
    assert "\n" not in str(e.value)
    from simulplay.sim.variants import parse_service

    one = validate_manifest(pd.DataFrame(rows), "m.csv")
    with pytest.raises(InputError, match=r"field 'service_s': times reach 1e\+300 s \(scale="):
        replay(one, service=parse_service("scale=1e300"), source="m.csv")


def test_sample_counts_that_disagree_with_audio_s_are_refused():
    rows = [{"talk_id": "t", "system": "A", "condition": "c", "seq": 0, "dispatch_s": 0.0, "service_s": 1.0,
             "audio_s": 0.5, "source_s": 5.0, "n_samples": 8000, "sample_rate": 16_000}]
    assert validate_manifest(pd.DataFrame(rows), "m")["n_samples"].dtype == np.int64
    bad = pd.DataFrame(rows).assign(n_samples=8001)
    with pytest.raises(InputError, match=r"field 'audio_s': 0.5 s is not n_samples / sample_rate = 8001 / 16000 Hz"):
        validate_manifest(bad, "m")
    with pytest.raises(InputError, match=r"field 'sample_rate': 2e\+09 is not a sample rate"):
        validate_manifest(pd.DataFrame(rows).assign(sample_rate=2 * 10**9), "m")
    with pytest.raises(InputError, match=r"field 'n_samples': 1.5 is not a whole number"):
        validate_manifest(pd.DataFrame(rows).assign(n_samples=1.5), "m")


def chunk_case(chunk_audio, chunk_n=None, with_samples=False):
    """One request of 1 s (16,000 samples at 16 kHz when ``with_samples``) and its chunks."""
    row = {"talk_id": "t", "system": "A", "condition": "c", "seq": 0, "dispatch_s": 0.0, "service_s": 1.0,
           "audio_s": 1.0, "source_s": 5.0}
    if with_samples:
        row |= {"n_samples": 16_000, "sample_rate": 16_000}
    chunks = pd.DataFrame({"talk_id": "t", "system": "A", "condition": "c", "seq": 0,
                           "chunk": range(len(chunk_audio)), "ready_offset_s": 0.5, "audio_s": chunk_audio})
    if chunk_n is not None:
        chunks["n_samples"] = chunk_n
    return validate_manifest(pd.DataFrame([row]), "m"), chunks


def test_chunk_sample_counts_must_sum_exactly_to_the_request():
    # one sample short (62.5 µs): within the former 125 µs tolerance, now refused
    m, ch = chunk_case([8000 / 16_000, 7999 / 16_000], [8000, 7999], with_samples=True)
    with pytest.raises(InputError, match="field 'n_samples': chunks of request seq 0 .* hold 15999 samples, "
                                         "the manifest 16000"):
        replay(m, release="chunk", chunks=ch)
    m, ch = chunk_case([0.5, 0.5], [8000, 8000], with_samples=True)
    assert replay(m, release="chunk", chunks=ch).summary["audio_s"].iloc[0] == 1.0
    m, ch = chunk_case([0.5, 0.6], [8000, 8000], with_samples=True)  # audio_s naming other samples
    with pytest.raises(InputError, match=r"chunk 1 of request seq 0: audio_s 0.6 s is not n_samples"):
        replay(m, release="chunk", chunks=ch)


def test_float_chunk_tables_are_read_at_the_nanosecond():
    # two chunks and their request, each within 0.5 ns of what it stands for: up to (2 + 1) // 2 = 1 ns apart
    m, ch = chunk_case([0.3, 0.7 + 1e-9])
    assert to_ns(replay(m, release="chunk", chunks=ch).summary["audio_s"].iloc[0]) == G + 1
    m, ch = chunk_case([0.3, 0.7 + 2e-9])
    with pytest.raises(InputError, match=r"hold 1.000000 s of audio, the manifest 1.000000 s \(2 ns apart\)"):
        replay(m, release="chunk", chunks=ch)


def test_the_engine_refuses_float_seconds():
    from simulplay.sim.playback import serial_playback

    with pytest.raises(TypeError, match="integer nanoseconds"):
        serial_playback(np.zeros(1, np.int64), np.array([1.0]), np.array([2.0]))
