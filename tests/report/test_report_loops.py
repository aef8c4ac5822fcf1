"""Table 8b, open- against closed-loop rules: present only when a condition is a closed-loop
policy, with η and its parts, mean L, requests and joins per minute worked out by hand on
two talks of zero-service requests."""

import numpy as np
import pandas as pd
import pytest

from simulplay.report.build import load_inputs
from simulplay.report.loop_tables import loop_table
from simulplay.report.tables import all_tables
from tests.support.report_runs import make_run

BACKLOG = "backlog:below=1,max_chars=300,min_words=3"

# (talk, system, condition): [(dispatch_s, audio_s)], service 0, source 4 s.
# Playback is serial: a part starts at max(ready, previous end); L = last end − 4.
PLAN = {
    ("t1", "A", "immediate"): [(0, 1), (1, 1), (3, 2)],  # 0–1, 1–2, 3–5: L 1, D 4, 2 joins
    ("t1", "A", BACKLOG): [(0, 1), (1, 2)],  # 0–1, 1–3: L −1, D 3, 1 join
    ("t1", "F", "immediate"): [(0, 2), (2, 2)],  # 0–2, 2–4: L 0, D 4, 1 join
    ("t1", "F", BACKLOG): [(0, 4)],  # 0–4: L 0, D 4, no join
    ("t2", "A", "immediate"): [(0, 1), (1, 1), (3, 2)],  # as t1
    ("t2", "A", BACKLOG): [(0, 1), (1, 3)],  # 0–1, 1–4: L 0, D 4, 1 join
    ("t2", "F", "immediate"): [(0, 2), (2, 2)],  # as t1
    ("t2", "F", BACKLOG): [(0, 2), (3, 2)],  # 0–2, 3–5: L 1, D 4, idle 1, 1 join
}


def plan_manifest() -> pd.DataFrame:
    rows = []
    for (talk, system, cond), reqs in PLAN.items():
        for seq, (dispatch, audio) in enumerate(reqs):
            closed = cond == BACKLOG
            rows.append({"talk_id": talk, "system": system, "condition": cond, "backend": "fake:sine",
                         "realization": 0, "seq": seq, "dispatch_s": float(dispatch), "service_s": 0.0,
                         "audio_s": float(audio), "source_s": 4.0, "text": f"words {seq}.",
                         "trigger": "backlog" if closed else "immediate", "group": seq, "error": ""})
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def loop_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("loops")
    return load_inputs(make_run(folder, 2, draws=50, traces=False, manifest=plan_manifest(),
                                rules=["immediate", "backlog"]))


def test_open_and_closed_loop_rules_side_by_side_by_hand(loop_run):
    table = loop_table(loop_run)
    assert table is not None and table.number == "Table 8b"
    f = table.frame.set_index("condition")
    assert list(f.index) == ["immediate", BACKLOG]
    assert list(f["loop"]) == ["open", "closed"]
    # δ(0) = L(A) − L(F) = 1 in both talks; δ(backlog) = −1 − 0 and 0 − 1: η = −2 in both.
    # Duration part (D_A(p) − D_A(0)) − (D_F(p) − D_F(0)): t1 (3 − 4) − 0 = −1, t2 0: mean −0.5.
    # Idle part: t1 (0 − 1) − (0 − 0) = −1, t2 (0 − 1) − (1 − 0) = −2: mean −1.5.
    np.testing.assert_allclose(f.loc[BACKLOG, ["eta_s", "duration_part_s", "idle_part_s"]].astype(float),
                               [-2.0, -0.5, -1.5], atol=1e-9)
    np.testing.assert_allclose(f.loc["immediate", ["eta_s", "duration_part_s", "idle_part_s"]].astype(float), 0.0)
    np.testing.assert_allclose(f["offset_s[A]"], [1.0, -0.5], atol=1e-9)  # (−1 + 0) / 2
    np.testing.assert_allclose(f["offset_s[F]"], [0.0, 0.5], atol=1e-9)
    assert list(f["requests[A]"]) == [6, 4] and list(f["requests[F]"]) == [4, 3]
    # joins per minute of audio: A immediate 2·60/4 = 30; A backlog (1·60/3 + 1·60/4) / 2 = 17.5;
    # F immediate 1·60/4 = 15; F backlog (0 + 15) / 2 = 7.5.
    np.testing.assert_allclose(f["joins_per_min[A]"], [30.0, 17.5], atol=1e-9)
    np.testing.assert_allclose(f["joins_per_min[F]"], [15.0, 7.5], atol=1e-9)
    assert table.label("offset_s[A]") == "L A (s)" and table.label("joins_per_min[F]") == "joins/min F"
    assert len(table.signatures) == 2 and all(table.signatures) and table.lines


def test_the_table_is_in_the_report_order_after_table8(loop_run):
    keys = [t.key for t in all_tables(loop_run)]
    assert keys.index("table08b_loops") == keys.index("table08_rules") + 1


def test_no_table_without_a_closed_loop_condition(tmp_path):
    run = load_inputs(make_run(tmp_path / "open", 2, draws=50, traces=False))
    assert loop_table(run) is None
    assert "table08b_loops" not in [t.key for t in all_tables(run)]
