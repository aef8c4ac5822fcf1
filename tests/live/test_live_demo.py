"""`simulplay demo --live` plays the demo's design: its three talks and both translators
under immediate and timer:w=4, at speed 1, against Piper with durations=fixed, with the
isolated prediction and η of eager against batched; each run gets a folder of its own.
(The live run itself is covered by test_live_piper.py and test_live_predict.py on short
traces; the demo's live part takes over two minutes.)"""

import pandas as pd

from simulplay.live import demo


def test_demo_live_plays_the_demo_design_live_with_predictions(tmp_path, monkeypatch):
    seen = {}

    def fake_live_run(traces, rules, backend, out, **kw):
        seen.update(traces=traces, rules=[r.canonical() for r in rules], backend=backend, out=out, **kw)
        return "result"

    monkeypatch.setattr(demo, "live_run", fake_live_run)
    assert demo.demo_live(tmp_path / "d") == "result"
    trace = pd.concat([pd.read_json(p, lines=True) for p in seen["traces"]])
    assert trace["talk_id"].nunique() == 3 and set(trace["system"]) == {"eager", "batched"}
    assert seen["rules"] == ["immediate", "timer:w=4"]
    assert seen["backend"].startswith("piper:") and "durations=fixed" in seen["backend"]
    assert seen["speed"] == 1.0 and seen["predict"] is True and seen["calibrate"] is True
    assert (seen["design"].a, seen["design"].f, seen["design"].reference) == ("eager", "batched", "immediate")
    assert seen["out"] == (tmp_path / "d" / "live").resolve()


def test_a_taken_live_folder_is_kept_and_the_next_one_used(tmp_path):
    assert demo.live_folder(tmp_path) == tmp_path / "live"
    (tmp_path / "live").mkdir()
    assert demo.live_folder(tmp_path) == tmp_path / "live"  # empty: used
    (tmp_path / "live" / "run.json").write_text("{}")
    assert demo.live_folder(tmp_path) == tmp_path / "live-2"
