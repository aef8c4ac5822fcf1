"""The paper's bootstrap, by name (``--bootstrap paper``: Python's ``random.Random`` and the
ranks ``order:int(nq)``), checked two ways:

* against the intervals the paper prints (Truong & Le 2026, shared/reference
  003_834d7221e1c3928e.txt), from the per-talk values it prints, typed in by hand from
  that text and run through ``simulplay bootstrap`` on a CSV: Table 4's XTTS η(2) and
  η(4) (talks in Table 4's row order) give Table 2's intervals; Table 5's Piper η(4) and
  Piper − XTTS (talks in Table 5's row order, which is numeric) give Table 2's Piper
  interval and Appendix C.4's interaction interval. Eight interval ends of eight, to the
  cent;
* on a 3-talk, 5-draw example worked by hand, which fixes the generator's row-major fill
  and the ranks each convention takes.
"""

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simulplay.analysis.bootstrap import PAPER_METHOD, Bootstrap
from simulplay.analysis.table_bootstrap import bootstrap_table

# Table 4 (XTTS), in the table's own column order of talks, η rows, seconds.
TABLE4_TALKS = ["805", "1102", "792", "2017", "2007", "1939", "2102", "1381", "1997", "1922"]
TABLE4_ETA2 = [-74.310, -114.827, -143.493, -22.116, -2.105, -100.808, -114.146, +8.416, -206.607, -66.276]
TABLE4_ETA4 = [-74.298, -160.165, -195.433, -49.413, -33.753, -139.071, -147.103, +11.519, -312.339, -124.981]
# Table 5 (Piper), talks in the table's order (numeric); its last row preserves XTTS η(4).
TABLE5_TALKS = ["792", "805", "1102", "1381", "1922", "1939", "1997", "2007", "2017", "2102"]
TABLE5_PIPER_ETA4 = [+0.08, -0.75, -0.07, +7.89, +59.95, +30.83, -0.14, +6.19, +60.97, +65.12]
TABLE5_XTTS_ETA4 = [-195.43, -74.30, -160.17, +11.52, -124.98, -139.07, -312.34, -33.75, -49.41, -147.10]

# What the paper prints: (mean, lower end, upper end), seconds.
TABLE2_XTTS_ETA2 = (-83.63, -124.22, -44.66)
TABLE2_XTTS_ETA4 = (-122.50, -180.03, -69.92)
TABLE2_PIPER_ETA4 = (+23.01, 7.36, 40.99)
C4_PIPER_MINUS_XTTS = (+145.51, 90.83, 198.50)  # "nine sources are positive"


def run_bootstrap(cli, tmp_path, columns: dict, *args: str) -> tuple[pd.DataFrame, dict[str, list[float]]]:
    """``simulplay bootstrap`` on a CSV of ``columns`` (``--out`` CSV added): the written
    table indexed by condition, and the numbers printed on each condition's row."""
    table, out = tmp_path / "per_talk.csv", tmp_path / "intervals.csv"
    pd.DataFrame(columns).to_csv(table, index=False)
    proc = cli("bootstrap", table, *args, "--out", out, check=True)
    printed = {}
    for line in proc.stdout.splitlines():
        cells = [c.strip() for c in line.split("│")[1:-1]]
        if len(cells) == 8 and cells[0] != "condition":
            printed[cells[0]] = [float(c) for c in cells[1:]]
    return pd.read_csv(out).set_index("condition"), printed


def assert_published(row: pd.Series, printed: list[float], published: tuple[float, float, float]) -> None:
    """Mean and both interval ends, written and printed, round to the paper's two decimals."""
    got = (row["mean"], row["ci_low"], row["ci_high"])
    assert tuple(round(x, 2) for x in got) == published
    assert tuple(round(x, 2) for x in printed[1:4]) == published  # the console shows three decimals


def test_table4_xtts_eta_gives_table2_intervals(cli, tmp_path):
    df, printed = run_bootstrap(cli, tmp_path, {"talk": TABLE4_TALKS, "eta2": TABLE4_ETA2, "eta4": TABLE4_ETA4},
                                "--value", "eta2,eta4", "--talk", "talk", "--talk-order", "given",
                                "--bootstrap", "paper")
    assert_published(df.loc["eta2"], printed["eta2"], TABLE2_XTTS_ETA2)
    assert_published(df.loc["eta4"], printed["eta4"], TABLE2_XTTS_ETA4)
    assert (df.loc["eta4", "n_negative"], df.loc["eta4", "n_positive"]) == (9, 1)  # "negative on nine of ten"
    sig = df.loc["eta2", "signature"]
    for part in ("draws:10000", "boot_seed:1032026", f"quantile:{PAPER_METHOD}", "boot_rng:python",
                 "talk_order:given"):
        assert part in sig, sig


def test_table5_piper_eta_and_the_c4_interaction(cli, tmp_path):
    df, printed = run_bootstrap(cli, tmp_path, {"talk_id": TABLE5_TALKS, "piper": TABLE5_PIPER_ETA4,
                                                "xtts": TABLE5_XTTS_ETA4},
                                "--value", "piper,xtts", "--pair", "piper,xtts", "--talk-order", "given",
                                "--bootstrap", "paper")
    assert_published(df.loc["piper"], printed["piper"], TABLE2_PIPER_ETA4)
    assert df.loc["piper", "n_positive"] == 7  # "the Piper effect is positive on seven"
    assert_published(df.loc["piper − xtts"], printed["piper − xtts"], C4_PIPER_MINUS_XTTS)
    assert df.loc["piper − xtts", "n_positive"] == 9


def test_the_interaction_from_a_long_table_with_table4s_three_decimals(cli, tmp_path):
    """The same interaction from a long table (one row per talk and backend), with XTTS's
    η(4) taken at Table 4's three decimals and the talks listed in Table 5's order."""
    xtts = dict(zip(TABLE4_TALKS, TABLE4_ETA4))
    rows = [(t, "piper", p) for t, p in zip(TABLE5_TALKS, TABLE5_PIPER_ETA4)] + \
           [(t, "xtts", xtts[t]) for t in TABLE5_TALKS]
    df, _ = run_bootstrap(cli, tmp_path, {"talk_id": [r[0] for r in rows], "backend": [r[1] for r in rows],
                                          "eta4": [r[2] for r in rows]},
                          "--value", "eta4", "--by", "backend", "--pair", "piper,xtts", "--talk-order", "given",
                          "--bootstrap", "paper")
    row = df.loc["piper − xtts"]
    assert (round(row["mean"], 2), round(row["ci_low"], 2), round(row["ci_high"], 2)) == C4_PIPER_MINUS_XTTS


@pytest.mark.parametrize("settings,wanted", [
    (dict(rng="numpy", method=PAPER_METHOD), "NumPy's generator"),
    (dict(rng="python", method="order:floor((n+1)a)"), "simulplay's default ranks (250th, 9,751st)"),
])
def test_the_published_ends_need_both_halves_of_the_preset(settings, wanted):
    """Each half alone misses: NumPy's default_rng with the same seed, or Python's
    generator with the 250th instead of the 251st mean for the lower end."""
    boot = Bootstrap(**settings, talk_order="given")
    res = bootstrap_table(pd.DataFrame({"talk_id": TABLE4_TALKS, "eta2": TABLE4_ETA2}), value=["eta2"], boot=boot)
    row = res.table.iloc[0]
    assert (round(row["ci_low"], 2), round(row["ci_high"], 2)) != TABLE2_XTTS_ETA2[1:], wanted


def test_talk_order_changes_the_draws_and_sorted_is_text_order():
    """Table 4's values with their talks sorted as text ('1102' first, '805' last) miss the
    published interval: the matrix's columns are other talks."""
    frame = pd.DataFrame({"talk_id": TABLE4_TALKS, "eta2": TABLE4_ETA2})
    res = bootstrap_table(frame, value=["eta2"], boot=Bootstrap.preset("paper"))
    assert res.talks == ["1102", "1381", "1922", "1939", "1997", "2007", "2017", "2102", "792", "805"]
    row = res.table.iloc[0]
    assert (round(row["ci_low"], 2), round(row["ci_high"], 2)) != TABLE2_XTTS_ETA2[1:]
    assert round(row["mean"], 2) == TABLE2_XTTS_ETA2[0]  # the mean does not depend on the order


# --- worked by hand: 3 talks, 5 draws ----------------------------------------------------

# random.Random(7).randrange(3), fifteen times: 1 0 1 2 0 0 2 0 1 2 0 2 0 0 0 — filled row by
# row (draw by draw), three talks per draw.
HAND_ROWS = [[1, 0, 1], [2, 0, 0], [2, 0, 1], [2, 0, 2], [0, 0, 0]]
HAND_VALUES = [1.0, 10.0, 100.0]  # talks a, b, c
# Means of the draws: (10+1+10)/3 = 7, (100+1+1)/3 = 34, (100+1+10)/3 = 37, (100+1+100)/3 = 67,
# (1+1+1)/3 = 1; sorted: 1, 7, 34, 37, 67.
HAND_SORTED = [1.0, 7.0, 34.0, 37.0, 67.0]


def test_the_python_generator_fills_the_matrix_draw_by_draw():
    import random

    gen = random.Random(7)
    assert [gen.randrange(3) for _ in range(15)] == [1, 0, 1, 2, 0, 0, 2, 0, 1, 2, 0, 2, 0, 0, 0]
    idx = Bootstrap(draws=5, seed=7, rng="python").indices(3)
    assert idx.tolist() == HAND_ROWS  # not column by column: that would start [1, 0, 0], [0, 2, 2]
    means = np.asarray(HAND_VALUES)[idx].mean(axis=1)
    assert sorted(means.tolist()) == HAND_SORTED


@pytest.mark.parametrize("method,confidence,ends", [
    # order:int(nq): 0-based positions int(5·α) and int(5·(1 − α))
    (PAPER_METHOD, 0.95, (1.0, 67.0)),   # int(0.125) = 0, int(4.875) = 4
    (PAPER_METHOD, 0.60, (7.0, 67.0)),   # int(1.0) = 1, int(4.0) = 4: not symmetric
    (PAPER_METHOD, 0.80, (1.0, 67.0)),   # int(0.5) = 0, int(4.5) = 4
    ("higher", 0.80, (7.0, 67.0)),       # NumPy: ceil(4 · 0.1) = 1, ceil(4 · 0.9) = 4: differs here
    ("order:floor((n+1)a)", 0.60, (1.0, 67.0)),  # k = ⌊6 · 0.2⌋ = 1: the 1st and 5th
    ("order:floor(na)+1", 0.60, (7.0, 37.0)),    # k = ⌊5 · 0.2⌋ + 1 = 2: the 2nd and 4th
])
def test_the_ranks_of_five_sorted_means_by_hand(method, confidence, ends):
    boot = Bootstrap(draws=5, seed=7, rng="python", method=method, confidence=confidence)
    assert boot.interval(np.asarray(HAND_VALUES), boot.indices(3)) == ends


def test_the_paper_ranks_equal_numpy_higher_at_ten_thousand_draws():
    """At 10,000 draws and 95 % order:int(nq) and NumPy's higher pick the same means, the
    251st and 9,751st: on means 1…10,000 those are the ends."""
    values = np.arange(1, 10_001, dtype=float)
    idx = np.arange(10_000)[:, None]  # draw i resamples talk i only: its mean is i + 1
    for method in (PAPER_METHOD, "higher"):
        assert Bootstrap(method=method).interval(values, idx) == (251.0, 9751.0)


def test_the_preset_refuses_a_setting_it_overrides_and_signatures_read_back():
    with pytest.raises(ValueError, match="preset 'paper' sets method order:int\\(nq\\), not linear"):
        Bootstrap.preset("paper", method="linear")
    with pytest.raises(ValueError, match="unknown bootstrap preset 'koehn'"):
        Bootstrap.preset("koehn")
    boot = Bootstrap.preset("paper", draws=99, talk_order="given")
    assert (boot.rng, boot.method, boot.draws, boot.seed) == ("python", PAPER_METHOD, 99, 1032026)
    assert Bootstrap.from_signature(boot.signature()) == boot
    old = {k: v for k, v in Bootstrap().signature().items() if k not in ("boot_rng", "talk_order")}
    assert Bootstrap.from_signature(old) == Bootstrap()  # written before the two keys: NumPy, sorted


def test_the_command_line_defaults_are_the_librarys():
    from simulplay.analysis.bootstrap import ENDPOINT_METHOD, ENDPOINT_RNG, ENDPOINT_SEED
    from simulplay.cli import options

    assert (options.BOOT_SEED, options.QUANTILE_METHOD, options.BOOT_RNG, options.TALK_ORDER) == \
        (ENDPOINT_SEED, ENDPOINT_METHOD, ENDPOINT_RNG, Bootstrap().talk_order) == \
        (1032026, "order:floor((n+1)a)", "numpy", "sorted")


def test_the_concepts_page_examples_run_as_written_on_the_shipped_tables(cli, tmp_path):
    """docs/concepts.md's two `simulplay bootstrap` lines, run as written from a copy of the
    repository's examples/paper/, print the paper's Table 2 and C.4 numbers."""
    import shlex
    import shutil

    root = Path(__file__).resolve().parents[2]
    page = (root / "docs" / "concepts.md").read_text(encoding="utf-8")
    block = re.search(r"### Intervals for any per-talk table.*?```sh\n(.*?)```", page, re.S).group(1)
    commands = [shlex.split(line) for line in block.splitlines() if line.startswith("simulplay ")]
    assert [c[1] for c in commands] == ["bootstrap", "bootstrap"]
    shutil.copytree(root / "examples" / "paper", tmp_path / "examples" / "paper")
    for args in commands:
        cli(*args[1:], cwd=tmp_path, check=True)
    t4, t5 = (pd.read_csv(tmp_path / n).set_index("condition") for n in ("t4.csv", "t5.csv"))
    for table, condition, published in ((t4, "eta2", TABLE2_XTTS_ETA2), (t4, "eta4", TABLE2_XTTS_ETA4),
                                        (t5, "piper", TABLE2_PIPER_ETA4), (t5, "piper − xtts", C4_PIPER_MINUS_XTTS)):
        row = table.loc[condition]
        assert tuple(round(x, 2) for x in (row["mean"], row["ci_low"], row["ci_high"])) == published
    assert "−83.63 [−124.22, −44.66]" in page and "+145.51 [90.83, 198.50]" in page
