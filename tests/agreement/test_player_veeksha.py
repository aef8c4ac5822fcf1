"""Agreement with Veeksha's audio-interactivity evaluator (project-vajra/veeksha, commit
3361280a, ``veeksha/evaluator/performance/audio_interactivity.py``).

Each expected value below was computed by hand by following that module's code on the
timeline given: ``parse_request_timing`` (coalesce chunks received at one timestamp),
``_playable_frame_arrival_ms`` (whole frames only), ``compute_audio_fluidity`` (deadline,
slack, reset; ``⌊(gap − slack − deadline) / frame⌋ + 1`` misses), ``simulate_fixed_delay``
(start a fixed delay after the first chunk; a stall is a gap strictly above
``min_reportable_stall_ms``, never before the first chunk) and
``_required_startup_delay_ms``. Veeksha works in milliseconds; we in seconds.
Where a test uses one of Veeksha's own test timelines, it says so.
"""

import math

import numpy as np
import pytest

from simulplay.analysis import player as pl

MS = 1_000_000  # ns


def chunks(*pairs):
    """Veeksha chunks ``(receipt_ms, duration_ms)`` as one of our timelines."""
    r, d = (np.array(x, dtype=float) / 1000 for x in zip(*pairs))
    return pl.timeline(r, d)


def fluidity(tl, delay_ms=0.0, frame_ms=20.0):
    f = pl.fluidity(tl, round(frame_ms * MS), round(delay_ms * MS))
    return None if f is None else (f.frames, f.deadlines, f.missed, f.index)


def stalls(tl, delay_ms, min_stall_ms):
    s = pl.stalls(tl, round(delay_ms * MS), round(min_stall_ms * MS))
    return s.count, s.total / MS, s.longest / MS


def test_early_frames_carry_slack_forward():
    # Veeksha's own test timeline: frames at 100, 100, 100, 150; the last is due at
    # 150 ≤ 100 + 20 + slack 40 → every deadline met
    tl = chunks((100, 60), (150, 20))
    assert fluidity(tl) == (4, 4, 0, 1.0)
    assert pl.required_startup_delay(tl) == 0 and stalls(tl, 0, 10) == (0, 0, 0)


def test_a_late_frame_misses_every_elapsed_deadline_and_resets():
    # Veeksha's own test timeline: the 145 ms frame is 25 ms late → ⌊25/20⌋ + 1 = 2 misses;
    # the 165 ms frame is then on time with zero slack
    tl = chunks((100, 20), (145, 20), (165, 20))
    assert fluidity(tl, 0) == (3, 4, 2, 0.5)
    assert fluidity(tl, 25) == (3, 3, 0, 1.0)
    assert stalls(tl, 0, 10) == (1, 25.0, 25.0)
    assert pl.required_startup_delay(tl) == 25 * MS  # max(145−100−20, 165−100−40)


def test_a_manually_solved_packet_timeline():
    # Veeksha's own test timeline (min_reportable_stall_ms 0)
    tl = chunks((100, 100), (250, 20), (400, 20))
    assert pl.required_startup_delay(tl) == 180 * MS
    assert stalls(tl, 0, 0) == (2, 180.0, 130.0)
    assert stalls(tl, 180, 0) == (0, 0.0, 0.0)
    # frames: 5 at 100, then 250 (late by 50 → 3 misses), 400 (late by 130 → 7 misses)
    assert fluidity(tl) == (7, 15, 10, pytest.approx(1 / 3))


def test_coalesced_chunks_startup_delay_and_partial_tail():
    # chunks 110/30 and 110/5 share a timestamp and are coalesced; 135 ms of audio is
    # 6 whole frames (at 0, 0, 110, 110, 200, 200), the last 15 ms never a frame
    tl = chunks((0, 45), (110, 30), (110, 5), (200, 55))
    assert len(tl) == 3
    # delay 10: slack 30 at 110 → late by 60 → 4 misses; at 200 late by 50 → 3 misses
    assert fluidity(tl, 10) == (6, 11, 7, pytest.approx(4 / 11))
    # delay 30: late by 40 → 3 misses, then by 50 → 3 misses
    assert fluidity(tl, 30) == (6, 10, 6, pytest.approx(0.4))
    assert pl.first_playable(tl, 20 * MS) == 0
    assert pl.required_startup_delay(tl) == 120 * MS
    assert stalls(tl, 0, 10) == (2, 120.0, 65.0)
    assert stalls(tl, 50, 10) == (2, 70.0, 55.0)
    assert stalls(tl, 60, 10) == (1, 55.0, 55.0)  # the 5 ms wait is below the threshold
    assert stalls(tl, 109, 10) == (1, 11.0, 11.0)
    assert stalls(tl, 110, 10) == (0, 0.0, 0.0)  # a wait of exactly 10 ms is not a stall
    assert pl.stall_free_prebuffer(tl, 10 * MS) == 110 * MS  # ours; Veeksha's simulation agrees at 109/110


def test_first_playable_waits_for_a_whole_frame():
    # Veeksha's own test timeline: first audio at 100 ms, first playable frame at 110 ms;
    # with a 100 ms start-up delay the single frame is on time
    tl = chunks((100, 10), (110, 10))
    assert pl.first_playable(tl, 20 * MS) == 110 * MS
    assert fluidity(tl, 100) == (1, 1, 0, 1.0)
    assert pl.required_startup_delay(tl) == 0 and stalls(tl, 0, 10) == (0, 0, 0)


def test_an_incomplete_tail_has_no_fluidity():
    tl = chunks((100, 19))
    assert fluidity(tl) is None and pl.first_playable(tl, 20 * MS) is None


def test_fluidity_does_not_depend_on_transport_fragmentation():
    # Veeksha's own test timelines
    coarse = chunks((100, 40), (140, 40))
    fragmented = chunks((90, 10), (100, 30), (130, 10), (140, 30))
    assert fluidity(coarse) == fluidity(fragmented) == (4, 4, 0, 1.0)


def test_a_frame_exactly_one_frame_late_misses_two_deadlines():
    tl = chunks((500, 25), (540, 20))  # (40 − 0 − 20) / 20 = 1 → ⌊1⌋ + 1 = 2
    f = fluidity(tl)
    assert f[:3] == (2, 3, 2) and math.isclose(f[3], 1 / 3)
    assert stalls(tl, 0, 10) == (1, 15.0, 15.0)
    assert pl.required_startup_delay(tl) == 15 * MS
