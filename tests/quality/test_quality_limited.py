"""The demo's narrowed scoring: DNSMOS and similarity scored under some conditions only are
compared among those, while joins compare every condition (hand-computed per-output values)."""

import numpy as np
import pandas as pd
import pytest

from simulplay.analysis.bootstrap import Bootstrap
from simulplay.analysis.quality_intervals import interval_table
from tests.report.test_report_quality import per_output

KEYS = ["talk_id", "system", "condition", "backend", "realization"]


def with_unscored_condition() -> pd.DataFrame:
    """The report test's outputs plus a punct condition scored for joins only (20, 24, 21 joins/min)."""
    punct = per_output().query("condition == 'immediate'").assign(
        condition="punct:cap=2,min_words=3", dnsmos_ovrl=np.nan, similarity_output=np.nan,
        joins_per_min=[20.0, 24.0, 21.0])
    return pd.concat([per_output(), punct], ignore_index=True)


def test_limited_scores_compare_only_the_scored_conditions_and_joins_every_one():
    table, sigs = interval_table(with_unscored_condition(), KEYS, "immediate", Bootstrap(draws=2000, seed=5), {},
                                 ["immediate", "timer:w=4"])
    assert len(sigs) == len(table)
    ovrl = table[table["metric"] == "dnsmos_ovrl"].set_index("condition")
    assert list(ovrl.index) == ["immediate", "timer:w=4", "timer:w=4 − immediate"]  # punct not scored: not compared
    assert ovrl.loc["timer:w=4 − immediate", "mean"] == pytest.approx(0.65 / 3)
    assert ovrl.loc["timer:w=4 − immediate", "n_talks_left_out"] == 0
    joins = table[table["metric"] == "joins_per_min"].set_index("condition")
    # punct − immediate: 20−30, 24−36, 21−33 = −10, −12, −12
    assert joins.loc["punct:cap=2,min_words=3 − immediate", "mean"] == pytest.approx(-34 / 3)
    assert joins.loc["punct:cap=2,min_words=3 − immediate", ["n_negative", "n_positive"]].tolist() == [3, 0]


def test_without_the_limit_an_unscored_condition_leaves_every_talk_out():
    table, _ = interval_table(with_unscored_condition(), KEYS, "immediate", Bootstrap(draws=200, seed=5), {})
    assert "dnsmos_ovrl" not in set(table["metric"]) and "joins_per_min" in set(table["metric"])
