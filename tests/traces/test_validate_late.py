"""`validate` warns when most of a stream's updates fall after its source end: a translator
cannot run minutes past the talk, so the times are milliseconds read as seconds, or a
computation-aware clock far behind the source. Half or fewer is no warning (a slow ending
is normal)."""

from __future__ import annotations

import json


def stream(talk: str, system: str, source_s: float, times: list[float]) -> str:
    return json.dumps({"talk_id": talk, "system": system, "source_s": source_s,
                       "updates": [{"time_s": t, "text": f"w{k}"} for k, t in enumerate(times)]})


def test_most_updates_after_the_source_end_is_one_warning_line(cli, tmp_path):
    trace = tmp_path / "t.jsonl"
    trace.write_text("\n".join([
        stream("t1", "A", 6.0, [1000.0, 2500.0, 4000.0]),  # milliseconds: all 3 after 6 s
        stream("t1", "B", 6.0, [1.0, 2.0, 6.5, 7.0]),  # 2 of 4 after: half, no warning
        stream("t2", "A", 5.0, [1.0, 6.0, 7.0]),  # 2 of 3 after
    ]) + "\n")
    done = cli("validate", trace)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        "simulplay: warning: 2 of 3 stream(s) have most of their updates after the source end (talk t1, system A: "
        "3 of 3 updates after 6 s; talk t2, system A: 2 of 3 updates after 5 s): are the times milliseconds given "
        "as seconds, or is a computation-aware clock far behind the source?"]


def test_a_slow_ending_is_no_warning(cli, tmp_path):
    trace = tmp_path / "t.jsonl"
    trace.write_text(stream("t1", "A", 6.0, [1.0, 2.0, 6.5, 7.0]) + "\n")
    done = cli("validate", trace)
    assert done.returncode == 0 and done.stderr == "", done.stderr
