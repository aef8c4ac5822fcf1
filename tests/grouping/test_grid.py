"""Sweep grids: values, lists and ranges of a rule's parameters, and their errors."""

import pytest

from simulplay.core.errors import InputError
from simulplay.grouping.grid import MAX_POINTS, parse_grids


def canon(text):
    return [r.canonical() for r in parse_grids([text])[0].rules()]


def test_a_range_with_a_step_includes_both_ends():
    assert canon("timer:w=0.5..2:0.5") == ["timer:w=0.5", "timer:w=1", "timer:w=1.5", "timer:w=2"]
    assert canon("timer:w=0.1..0.3:0.1") == ["timer:w=0.1", "timer:w=0.2", "timer:w=0.3"]  # not 0.30000000000000004
    assert canon("timer:w=1..2:0.75") == ["timer:w=1", "timer:w=1.75"]  # 2.5 is past the end


def test_an_integer_range_and_a_list_and_defaults():
    assert canon("words:n=2..4") == ["words:n=2,cap=2", "words:n=3,cap=2", "words:n=4,cap=2"]
    assert canon("words:n=2,8,cap=3") == ["words:n=2,cap=3", "words:n=8,cap=3"]
    assert canon("timer") == ["timer:w=4"]


def test_two_varying_keys_make_every_combination_first_key_slowest():
    grid = parse_grids(["punct:cap=1..2,min_words=2,3"])[0]
    assert [r.canonical() for r in grid.rules()] == ["punct:cap=1,min_words=2", "punct:cap=1,min_words=3",
                                                     "punct:cap=2,min_words=2", "punct:cap=2,min_words=3"]
    assert grid.axis == "cap" and grid.values == {"cap": (1.0, 2.0), "min_words": (2, 3)}
    assert parse_grids(["words:n=2,unit=word,char"])[0].axis == "unit"


@pytest.mark.parametrize("text, message", [
    ("timer:w=5..2", "'w=5..2' is an empty range (2 < 5)"),
    ("timer:w=1..2:0", "step 0 is not > 0"),
    ("timer:w=1..2:-0.5", "step -0.5 is not > 0"),
    ("timer:x=1..3", "unknown parameter 'x' for grouping rule 'timer'"),
    ("never:w=1", "unknown grouping rule 'never'"),
    ("timer:w=0..1000000:0.001", "the grids reach 1,000,000,001 points, more than 10,000"),
    ("timer:w=a..b", "'w=a..b' is not a range"),
    ("timer:w=1.5..3", "a range of non-integers needs a step"),
    ("words:n=1.5", "'n=1.5' is not a whole number"),
    ("words:n=0..3", "n must be ≥ 1"),
    ("timer:w=1,w=2", "parameter 'w' is given twice"),
    ("timer:w=1,1", "'w' repeats a value"),
    ("words:unit=word..char", "a range needs a numeric parameter"),
])
def test_grid_errors_name_the_rule_and_what_is_wrong(text, message):
    with pytest.raises(InputError) as e:
        parse_grids([text])
    assert message in str(e.value) and f"--rule '{text}'" in str(e.value)
    assert len(str(e.value).splitlines()) == 1


def test_the_limit_counts_every_family():
    half = f"timer:w=1..{MAX_POINTS // 2}"
    parse_grids([half, half.replace("timer", "words").replace("w=", "n=")])
    with pytest.raises(InputError, match="more than 10,000"):
        parse_grids([half, half.replace("timer:w", "words:n"), "punct:cap=1..2"])
