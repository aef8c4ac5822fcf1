"""simulplay.core.fields.Checker: a table with two columns of one name is refused by name."""

from __future__ import annotations

import pandas as pd
import pytest

from simulplay.core.errors import InputError
from simulplay.core.fields import Checker


def test_a_column_that_appears_twice_is_refused_with_its_name_and_count():
    """``df['talk_id']`` of such a table is a DataFrame, not a column: every later check would
    fail on it with a traceback (the fuzz found it through a renamed Parquet column)."""
    df = pd.DataFrame([["t1", "a", "x"]], columns=["talk_id", "system", "talk_id"])
    check = Checker("m.parquet", df)
    with pytest.raises(InputError) as err:
        check.require_columns(["talk_id", "system"], "manifest")
    assert str(err.value) == ("m.parquet, field 'talk_id': column talk_id appears 2 times "
                              "(expected one column of each name)")


def test_distinct_columns_pass():
    check = Checker("m.parquet", pd.DataFrame({"talk_id": ["t1"], "system": ["a"]}))
    check.require_columns(["talk_id", "system"], "manifest")
    assert check.problems == []
