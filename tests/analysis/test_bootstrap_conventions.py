"""Interval ends by name: NumPy's quantile methods and the order-statistic conventions
``order:floor((n+1)a)`` and ``order:floor(na)+1`` (simulplay.analysis.bootstrap)."""

import numpy as np
import pandas as pd
import pytest

from simulplay.analysis import Bootstrap, compute_eta
from simulplay.analysis.bootstrap import ENDPOINT_METHOD, ENDPOINT_SEED, WORD_TIMING_METHOD, WORD_TIMING_SEED
from simulplay.analysis.wordtiming import check_timing_bootstrap
from simulplay.cli import options
from simulplay.core.errors import InputError
from tests.support.checks import assert_one_line_error


def ends(method, n, confidence=0.95, seed=0):
    """The interval of ``n`` draws whose means are exactly 1, 2, …, n in a shuffled order:
    each draw resamples one 'talk' whose value is its own rank, so the k-th smallest
    mean is k and the interval ends are the ranks the convention picks."""
    values = np.random.default_rng(seed).permutation(np.arange(1, n + 1)).astype(float)
    idx = np.arange(n)[:, None]  # draw i picks talk i: its mean is values[i]
    return Bootstrap(draws=n, method=method, confidence=confidence).interval(values, idx)


@pytest.mark.parametrize("n,confidence,want", [
    (1000, 0.95, (25, 976)),     # k = ⌊1001 · 0.025⌋ = ⌊25.025⌋ = 25, upper 1001 − 25
    (10_000, 0.95, (250, 9751)),  # ⌊10001 · 0.025⌋ = 250, upper 10001 − 250
    (39, 0.95, (1, 39)),          # ⌊40 · 0.025⌋ = 1 exactly (0.025 taken as 1/40, not 0.0250…02)
    (119, 0.95, (3, 117)),        # ⌊120 · 0.025⌋ = 3, where ⌊n·α⌋ would give ⌊2.975⌋ = 2
    (99, 0.90, (5, 95)),          # α = 0.05: ⌊100 · 0.05⌋ = 5
    (10, 0.95, (1, 10)),          # ⌊11 · 0.025⌋ = 0 → k = 1: the extremes
])
def test_floor_n_plus_one_alpha_by_hand(n, confidence, want):
    assert ends("order:floor((n+1)a)", n, confidence) == want


@pytest.mark.parametrize("n,confidence,want", [
    (1000, 0.95, (26, 975)),      # Koehn 2004: drop ⌊1000 · 0.025⌋ = 25 at each end → 26th and 975th
    (10_000, 0.95, (251, 9750)),  # drop 250 at each end
    (99, 0.90, (5, 95)),          # ⌊99 · 0.05⌋ + 1 = ⌊4.95⌋ + 1 = 5
    (10, 0.95, (1, 10)),          # ⌊0.25⌋ + 1 = 1
])
def test_floor_n_alpha_plus_one_by_hand(n, confidence, want):
    assert ends("order:floor(na)+1", n, confidence) == want


def test_numpy_methods_still_interpolate():
    # linear at n = 1000: position α(n − 1) = 24.975 between the 25th and 26th values → 25.975
    low, high = ends("linear", 1000)
    assert low == pytest.approx(25.975) and high == pytest.approx(975.025)


def test_eta_uses_the_convention_by_default_on_the_resampled_means():
    """The default (simulplay's order statistic, order:floor((n+1)a)) on a real η table:
    the 5th smallest and the 195th of 199 resampled means (⌊200 · 0.025⌋ = 5), drawn here
    with NumPy alone."""
    rng = np.random.default_rng(3)
    rows = [{"talk_id": f"t{t}", "system": s, "condition": c, "audio_s": rng.uniform(50, 150),
             "idle_s": rng.uniform(0, 60), "source_s": 100.0}
            for t in range(6) for s in ("A", "F") for c in ("immediate", "timer:w=4")]
    df = pd.DataFrame(rows).assign(offset_s=lambda d: d["audio_s"] + d["idle_s"] - 100.0)
    res = compute_eta(df, a="A", f="F", reference="immediate", boot=Bootstrap(draws=199))
    off = df.set_index(["talk_id", "system", "condition"])["offset_s"]
    delta = off.xs("A", level="system") - off.xs("F", level="system")
    eta = (delta.xs("timer:w=4", level="condition") - delta.xs("immediate", level="condition")).sort_index()
    idx = np.random.default_rng(1032026).integers(0, 6, size=(199, 6))
    means = np.sort(eta.to_numpy()[idx].mean(axis=1))
    row = res.table.iloc[0]
    assert (row["ci_low_s"], row["ci_high_s"]) == (means[4], means[194])
    assert res.table_signatures[0]["quantile"] == "order:floor((n+1)a)"


def test_unknown_names_are_refused_and_the_defaults_agree():
    with pytest.raises(ValueError, match="unknown quantile method 'order:round'.*order:floor\\(\\(n\\+1\\)a\\)"):
        Bootstrap(method="order:round")
    assert (options.BOOT_SEED, options.QUANTILE_METHOD) == (ENDPOINT_SEED, ENDPOINT_METHOD) == \
        (1032026, "order:floor((n+1)a)")
    assert (options.WORD_TIMING_SEED, options.WORD_TIMING_QUANTILE) == (WORD_TIMING_SEED, WORD_TIMING_METHOD) == \
        (20261005, "linear")


def test_word_timing_needs_a_numpy_method():
    with pytest.raises(InputError, match="--quantile-method: 'order:floor\\(na\\)\\+1' is an order-statistic"):
        check_timing_bootstrap(Bootstrap(method="order:floor(na)+1"))
    check_timing_bootstrap(Bootstrap(method="linear"))


@pytest.mark.slow


def test_eta_command_takes_a_convention_and_records_it(cli, tmp_path):
    rows = [{"talk_id": f"t{t}", "system": s, "condition": c, "audio_s": 10.0 + t + (s == "A") * (c == "x"),
             "idle_s": 1.0, "offset_s": 1.0 + t + (s == "A") * (c == "x"), "source_s": 10.0}
            for t in range(4) for s in ("A", "F") for c in ("immediate", "x")]
    pd.DataFrame(rows).to_csv(tmp_path / "s.csv", index=False)
    cli("eta", tmp_path / "s.csv", "--a", "A", "--f", "F", "--reference", "immediate", "--draws", "50",
        "--quantile-method", "order:floor(na)+1", "--out", tmp_path / "e.csv", check=True)
    assert "quantile:order:floor(na)+1" in pd.read_csv(tmp_path / "e.csv")["signature"][0]
    proc = cli("eta", tmp_path / "s.csv", "--a", "A", "--f", "F", "--reference", "immediate",
               "--quantile-method", "order:ceil", "--out", tmp_path / "x.csv")
    assert_one_line_error(proc, "unknown quantile method 'order:ceil'", "order:floor((n+1)a)")
