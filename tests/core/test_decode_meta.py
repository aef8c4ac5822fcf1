"""The row_signature check of simulplay's Parquet metadata: one whole-number index into
'signatures' per row, refused otherwise (JSON's true/false, negatives, fractions, text)."""

import json
from pathlib import Path

import pytest

from simulplay.core.errors import InputError
from simulplay.core.tables import decode_meta


def accepted(index, n):
    """The rule as docs/formats.md states it, cell by cell."""
    return all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < n for i in index)


@pytest.mark.parametrize("index", [[], [0], [0, 1, 1, 0], [1] * 1000, [0, True], [True], [False], [-1], [2],
                                   [0, 1.0], [0.0], ["0"], [None], [0, [1]], [0, {"a": 1}], [0] * 999 + [2]])
def test_row_signature_is_checked_as_the_rule_says(index):
    raw = json.dumps({"signatures": [{}, {}], "row_signature": index}).encode()
    if accepted(index, 2):
        assert decode_meta(raw, Path("t.parquet"))["row_signature"] == index
    else:
        with pytest.raises(InputError, match="'row_signature' holds a value that is not an index 0..1"):
            decode_meta(raw, Path("t.parquet"))
