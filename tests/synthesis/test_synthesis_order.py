"""Synthesis order: counterbalanced (a cyclic Latin square over talks and realizations, for
the conditions and for the systems), fixed, or the paper's (fixed, then counterbalanced),
recorded per request.

The expected orders below are written out by hand from the documented rule: conditions
numbered by first appearance (immediate 0, timer:w=2 1, timer:w=4 2), talks by first
appearance (t0 0, t1 1, t2 2), systems in name order (A 0, F 1); talk t of realization r
has order id k = (t + r) mod 3 and condition c goes to position (c − k) mod 3, and system s
goes to position (s − j) mod 2 of each of the talk's cells with j = (t + r) mod 2.
"""

import pandas as pd
import pytest

from simulplay.backends import parse_backend
from simulplay.core.errors import InputError
from simulplay.grouping import parse_rule
from simulplay.store.store import AudioStore
from simulplay.synthesis.run import synthesize_to_manifest
from simulplay.workflows.experiment import experiment_from_dict
from tests.support import fakes  # noqa: F401  (registers the fake backend)
from tests.support.checks import assert_one_line_error
from tests.support.factories import small_trace, stream

RULES = ("immediate", "timer:w=2", "timer:w=4")
IM, W2, W4 = "immediate", "timer:w=2", "timer:w=4"

# (realization, talk) -> conditions in synthesis order, by hand from the formula
COUNTERBALANCED = {
    (0, "t0"): [IM, W2, W4],  # k = 0
    (0, "t1"): [W2, W4, IM],  # k = 1: immediate (0) at (0-1) mod 3 = 2, timer:w=2 (1) at 0, timer:w=4 (2) at 1
    (0, "t2"): [W4, IM, W2],  # k = 2
    (1, "t0"): [W2, W4, IM],  # k = 1
    (1, "t1"): [W4, IM, W2],  # k = 2
    (1, "t2"): [IM, W2, W4],  # k = (2 + 1) mod 3 = 0
}
ORDER_ID = {(0, "t0"): 0, (0, "t1"): 1, (0, "t2"): 2, (1, "t0"): 1, (1, "t1"): 2, (1, "t2"): 0}
# (realization, talk) -> the system synthesized first in each of the talk's cells, by hand:
# j = (t + r) mod 2 is 0 (A first) for t + r even, 1 (F first) for t + r odd
SYSTEM_FIRST = {(0, "t0"): "A", (0, "t1"): "F", (0, "t2"): "A", (1, "t0"): "F", (1, "t1"): "A", (1, "t2"): "F"}


def _streams():
    # two updates 3 s apart: immediate makes 2 requests, both timers make 1 (the timer
    # w=2 fires before the second update; w=4 takes both), so outputs differ in size;
    # translators A and F with different words
    return [stream([0.0, 3.0], [f"talk {t} {w}." for w in words], talk_id=t, system=s, source_s=6.0)
            for t in ("t0", "t1", "t2") for s, words in (("A", ("one", "two")), ("F", ("uno", "dos")))]


def _synth(tmp_path, order):
    return synthesize_to_manifest(_streams(), [parse_rule(r) for r in RULES], parse_backend("fake-test:reuse=never"),
                                  AudioStore(tmp_path / "store"), tmp_path / "m.parquet", realizations=2, order=order)


def _cells(manifest: pd.DataFrame) -> dict:
    """(realization, talk, condition) -> systems in synth_order, each system once."""
    m = manifest.sort_values("synth_order")
    return {(int(r), t, c): list(dict.fromkeys(g["system"]))
            for (r, t, c), g in m.groupby(["realization", "talk_id", "condition"], sort=False)}


def _blocks(manifest: pd.DataFrame) -> dict:
    """(realization, talk) -> conditions in synth_order, each condition once."""
    m = manifest.sort_values("synth_order")
    return {(int(r), t): list(dict.fromkeys(g["condition"])) for (r, t), g in m.groupby(["realization", "talk_id"],
                                                                                          sort=False)}


def test_counterbalanced_order_is_recorded_per_request_as_the_formula_says(tmp_path):
    res = _synth(tmp_path, "counterbalanced")
    m = res.manifest
    assert _blocks(m) == COUNTERBALANCED
    assert sorted(m["synth_order"]) == list(range(len(m)))  # a position for every request
    for (r, t), k in ORDER_ID.items():
        rows = m[(m["realization"] == r) & (m["talk_id"] == t)]
        assert set(rows["order_id"]) == {k}
        pos = dict(zip(rows["condition"], rows["condition_pos"]))
        assert [c for c, _ in sorted(pos.items(), key=lambda x: x[1])] == COUNTERBALANCED[(r, t)]
    # realizations one after the other, talks one after the other inside each
    firsts = m.sort_values("synth_order").drop_duplicates(["realization", "talk_id"])[["realization", "talk_id"]]
    assert list(map(tuple, firsts.to_numpy())) == [(0, "t0"), (0, "t1"), (0, "t2"), (1, "t0"), (1, "t1"), (1, "t2")]
    assert res.signature["order"] == "counterbalanced"


def test_counterbalanced_order_alternates_the_first_system_across_talks_and_realizations(tmp_path):
    m = _synth(tmp_path, "counterbalanced").manifest
    cells = _cells(m)
    assert len(cells) == 18  # 3 talks × 3 conditions × 2 realizations
    for (r, t, c), systems in cells.items():
        first = SYSTEM_FIRST[(r, t)]
        assert systems == [first, "F" if first == "A" else "A"], (r, t, c)
        rows = m[(m["realization"] == r) & (m["talk_id"] == t) & (m["condition"] == c)]
        assert dict(zip(rows["system"], rows["system_pos"])) == {first: 0, "F" if first == "A" else "A": 1}
    assert sum(systems[0] == "A" for systems in cells.values()) == 9  # A first in half of the cells
    # each output's requests stay together, in seq order
    for _, g in m.sort_values("synth_order").groupby(["realization", "talk_id", "condition", "system"]):
        assert g["seq"].tolist() == sorted(g["seq"]) and g["synth_order"].diff().dropna().eq(1).all()


def test_paper_order_is_fixed_in_the_first_realization_then_counterbalanced(tmp_path):
    res = _synth(tmp_path, "paper")
    blocks, cells = _blocks(res.manifest), _cells(res.manifest)
    for (r, t), conditions in blocks.items():
        assert conditions == ([IM, W2, W4] if r == 0 else COUNTERBALANCED[(r, t)]), (r, t)
    for (r, t, c), systems in cells.items():
        assert systems[0] == ("A" if r == 0 else SYSTEM_FIRST[(r, t)]), (r, t, c)
    m = res.manifest
    assert set(m.loc[m["realization"] == 0, "order_id"]) == {0} and set(m.loc[m["realization"] == 0, "system_pos"]) == \
        {0, 1}
    assert dict(zip(m.loc[m["realization"] == 1, "talk_id"], m.loc[m["realization"] == 1, "order_id"])) == \
        {t: k for (r, t), k in ORDER_ID.items() if r == 1}
    assert res.signature["order"] == "paper"


def test_the_serial_executor_synthesizes_in_the_recorded_order(tmp_path):
    res = _synth(tmp_path, "counterbalanced")
    store = AudioStore(tmp_path / "store")
    done = [e["key"] for e in store.events() if e["event"] == "synthesized"]
    keys = dict(zip(_keys(res), res.manifest["synth_order"]))
    assert [keys[k] for k in done] == sorted(keys.values())  # reuse=never: each request its own key


def _keys(res):
    """Each manifest row's request key, found through the origin its store record holds."""
    store = AudioStore(res.path.parent / "store")
    by_origin = {}
    for key in store.completed_keys():
        o = store.get_record(key)["origin"]
        by_origin[(o["talk_id"], o["system"], o["condition"], o["realization"], o["seq"])] = key
    m = res.manifest
    return [by_origin[(t, s, c, int(r), int(q))]
            for t, s, c, r, q in zip(m["talk_id"], m["system"], m["condition"], m["realization"], m["seq"])]


def test_fixed_order_keeps_the_listed_condition_order(tmp_path):
    res = _synth(tmp_path, "fixed")
    assert _blocks(res.manifest) == {key: [IM, W2, W4] for key in COUNTERBALANCED}
    assert all(systems == ["A", "F"] for systems in _cells(res.manifest).values())  # the historical order
    assert set(res.manifest["system_pos"][res.manifest["system"] == "A"]) == {0}
    assert set(res.manifest["order_id"]) == {0}
    assert res.signature["order"] == "fixed"


def test_order_does_not_change_what_is_synthesized(tmp_path):
    a = _synth(tmp_path / "a", "counterbalanced").manifest
    b = _synth(tmp_path / "b", "fixed").manifest
    cols = ["talk_id", "system", "condition", "realization", "seq", "text", "dispatch_s", "audio_s"]
    key = ["talk_id", "system", "condition", "realization", "seq"]
    pd.testing.assert_frame_equal(a[cols].sort_values(key).reset_index(drop=True),
                                  b[cols].sort_values(key).reset_index(drop=True))


def test_experiment_order_key(tmp_path):
    small_trace(tmp_path / "t.jsonl")
    base = {"traces": ["t.jsonl"], "a": "A", "f": "F", "rules": ["immediate"], "reference": "immediate"}
    assert experiment_from_dict(base, tmp_path / "e.toml").order == "counterbalanced"
    assert experiment_from_dict({**base, "order": "fixed"}, tmp_path / "e.toml").order == "fixed"
    assert experiment_from_dict({**base, "order": "paper"}, tmp_path / "e.toml").order == "paper"
    with pytest.raises(InputError, match=r"key 'order'.*'sideways' is not a synthesis order.*counterbalanced, fixed or "
                       "paper"):
        experiment_from_dict({**base, "order": "sideways"}, tmp_path / "e.toml")


def test_synth_refuses_an_unknown_order_before_touching_the_store(tmp_path, cli):
    small_trace(tmp_path / "t.jsonl")
    proc = cli("synth", tmp_path / "t.jsonl", "--rule", "immediate", "--backend", "piper", "--store",
               tmp_path / "store", "--out", tmp_path / "m.parquet", "--order", "sideways")
    assert_one_line_error(proc, "--order 'sideways'", "unknown synthesis order", "counterbalanced, fixed or paper")
    assert not (tmp_path / "store").exists()
