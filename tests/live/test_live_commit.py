"""`live --commit`: a revising trace played as a commit policy speaks it. Under hold:t=0.15
the requests leave at the policy's own wake-ups on the live clock, not at update times."""

import json

import pandas as pd
import pytest
from pyarrow import parquet

from tests.live.fake_server import ScriptedServer

# 0.10 s: "alpha gamma"; 0.20 s: " gamma" retracted (6 characters), "beta" appended after a space;
# 0.50 s: "." glued. hold:t=0.15 commits a word once the whitespace after it has stood unwritten
# 0.15 s: "alpha" (its space written again at 0.20) at 0.35, a wake-up between updates; "beta"
# never gets a space: the end of the stream commits "beta." at 0.50. eager would have spoken
# "alpha gamma" at 0.10.
UPDATES = [{"time_s": 0.1, "text": "alpha gamma"}, {"time_s": 0.2, "text": "beta", "retract": 6},
           {"time_s": 0.5, "text": ".", "glue": True}]
SCRIPTS = {"alpha": [("sleep", 0.02), ("audio", 2400)], "beta.": [("sleep", 0.02), ("audio", 2400)]}


@pytest.fixture
def trace(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"talk_id": "t1", "system": "R", "source_s": 1.0, "updates": UPDATES}) + "\n",
                    encoding="utf-8")
    return path


def test_hold_sends_at_its_wake_ups_on_the_live_clock(cli, tmp_path, trace):
    with ScriptedServer(SCRIPTS) as server:
        res = cli("live", trace, "--rule", "immediate", "--commit", "hold:t=0.15", "--backend",
                  f"http:base_url={server.url}", "--out", tmp_path / "run")
    assert res.returncode == 0, res.stderr
    req = pd.read_parquet(tmp_path / "run" / "requests.parquet")
    assert list(req["text"]) == ["alpha", "beta."]
    assert list(req["dispatch_s"]) == pytest.approx([0.35, 0.5])
    assert (req["sent_s"] - req["dispatch_s"]).max() < 0.05  # sent on time by the live clock
    man = pd.read_parquet(tmp_path / "run" / "live.parquet")
    assert set(man["condition"]) == {"hold:t=0.15+immediate"}


def test_a_revising_trace_without_a_policy_is_refused_and_final_is_marked(cli, tmp_path, trace):
    res = cli("live", trace, "--rule", "immediate", "--backend", "http:base_url=http://127.0.0.1:9",
              "--out", tmp_path / "no")
    assert res.returncode == 2 and "retract" in res.stderr
    with ScriptedServer({"alpha beta.": [("sleep", 0.01), ("audio", 2400)]}) as server:
        res = cli("live", trace, "--rule", "punct", "--commit", "final", "--backend",
                  f"http:base_url={server.url}", "--out", tmp_path / "oracle")
    assert res.returncode == 0, res.stderr
    meta = parquet.read_metadata(tmp_path / "oracle" / "live.parquet").metadata
    assert b"non-causal" in b"".join(meta.values())
