"""The scalar conversions equal the array ones, ties and range errors included."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulplay.core.timebase import TimeRangeError, dur_ns, scalar_dur_ns, scalar_ns, to_ns

# half-nanosecond ties (k + 0.5 ns, exact in binary for small k) and ordinary floats
TIES = [0.5e-9, 1.5e-9, 2.5e-9, -0.5e-9, -1.5e-9, 1 / 1024, 0.1 + 0.2, 1e-10, 123.456789012]


@pytest.mark.parametrize("x", TIES)
def test_scalar_ns_equals_to_ns_on_ties(x):
    assert scalar_ns(x) == int(to_ns(x))


@settings(max_examples=150, deadline=None)
@given(st.floats(min_value=-1e9, max_value=1e9, allow_nan=False) | st.integers(-10**12, 10**12).map(lambda k: k / 2e9))
def test_scalar_ns_equals_to_ns(x):
    assert scalar_ns(x) == int(to_ns(x))


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 10**9), st.sampled_from([1, 3, 7, 16_000, 22_050, 44_100, 48_000, 999_999_937]))
def test_scalar_dur_ns_equals_dur_ns(n, sr):
    assert scalar_dur_ns(n, sr) == int(dur_ns(n, sr))


def test_the_same_errors():
    for bad in (float("nan"), float("inf"), 1e11):
        with pytest.raises(TimeRangeError):
            to_ns(bad)
        with pytest.raises(TimeRangeError):
            scalar_ns(bad)
    with pytest.raises(ValueError):
        scalar_dur_ns(-1, 22_050)
    with pytest.raises(ValueError):
        scalar_dur_ns(5, 0)
    assert scalar_dur_ns(0, 0) == int(dur_ns(np.int64(0), 0)) == 0
