"""η of commit policies against a reference policy with the rule fixed (``eta
--reference-commit``), worked by hand on a three-talk summary."""

import pandas as pd
import pytest

from simulplay.analysis import Bootstrap, compute_eta
from simulplay.analysis.commit_eta import commit_eta
from simulplay.core.errors import InputError
from tests.support.cli import run_cli

# (audio_s, idle_s) of translator A per condition and talk; F is (5, 1) everywhere; source 10 s,
# so L = audio + idle − 10 and the duration and idle parts add up to η
A = {"punct": [(6, 1), (6, 2), (5, 1)], "stable:k=2+punct:cap=2,min_words=3": [(6, 3), (7, 2), (5, 1)],
     "timer:w=2": [(6, 1), (6, 1), (6, 1)], "stable:k=2+timer:w=2": [(5, 1), (6, 0), (4, 1)]}


def summary() -> pd.DataFrame:
    rows = []
    for cond, values in A.items():
        for k, (audio, idle) in enumerate(values):
            for system, (d, i) in (("A", (audio, idle)), ("F", (5, 1))):
                rows.append({"talk_id": f"t{k + 1}", "system": system, "condition": cond, "audio_s": float(d),
                             "idle_s": float(i), "offset_s": float(d + i - 10), "source_s": 10.0})
    return pd.DataFrame(rows)


BOOT = Bootstrap(draws=500, seed=3)


def test_each_policy_is_compared_with_the_reference_policy_under_its_own_rule():
    res = commit_eta(summary(), a="A", f="F", reference_commit="eager", boot=BOOT)
    t = res.table.set_index("condition")
    assert list(res.table.columns[:3]) == ["condition", "rule", "reference"]
    p, w = t.loc["stable:k=2+punct:cap=2,min_words=3"], t.loc["stable:k=2+timer:w=2"]
    assert (p["rule"], p["reference"]) == ("punct:cap=2,min_words=3", "punct:cap=2,min_words=3")
    assert (w["rule"], w["reference"]) == ("timer:w=2", "timer:w=2")
    # punct: η per talk +2 (idle), +1 (duration), 0 (a tie); δ(reference) 1, 2, 0
    assert p[["eta_s", "duration_part_s", "idle_part_s", "delta_ref_s", "delta_s"]].tolist() == pytest.approx(
        [1.0, 1 / 3, 2 / 3, 1.0, 2.0])
    assert p[["n_negative", "n_zero", "n_positive", "n_talks"]].tolist() == [0, 1, 2, 3]
    # timer:w=2: η per talk −1 (duration), −1 (idle), −2 (duration); δ(reference) 1 for every talk
    assert w[["eta_s", "duration_part_s", "idle_part_s", "delta_ref_s", "delta_s"]].tolist() == pytest.approx(
        [-4 / 3, -1.0, -1 / 3, 1.0, -1 / 3])
    assert w[["n_negative", "n_zero", "n_positive"]].tolist() == [3, 0, 0]
    assert -2 <= w["ci_low_s"] <= w["eta_s"] <= w["ci_high_s"] <= -1
    # the same paired bootstrap as η against that one reference
    timer = summary()[lambda d: d["condition"].str.endswith("timer:w=2")]
    alone = compute_eta(timer, a="A", f="F", reference="timer:w=2", boot=BOOT).table.iloc[0]
    assert (w["ci_low_s"], w["ci_high_s"]) == (alone["ci_low_s"], alone["ci_high_s"])
    assert sorted(set(res.per_talk["reference"])) == ["punct:cap=2,min_words=3", "timer:w=2"]


def test_against_another_reference_policy_the_plain_rule_is_compared_too():
    res = commit_eta(summary(), a="A", f="F", reference_commit="stable:k=2", boot=BOOT)
    t = res.table.set_index("condition")
    assert list(t.index) == ["punct:cap=2,min_words=3", "timer:w=2"]  # eager against stable:k=2
    assert t.loc["timer:w=2", "eta_s"] == pytest.approx(4 / 3)


def test_a_rule_without_the_reference_policy_is_one_line():
    df = summary()
    df = df[df["condition"] != "timer:w=2"]
    with pytest.raises(InputError, match="rule 'timer:w=2' has no output under the reference policy"):
        commit_eta(df, a="A", f="F", reference_commit="eager", boot=BOOT)


def test_the_command_takes_one_reference_or_the_other(tmp_path):
    path = tmp_path / "summary.csv"
    summary().to_csv(path, index=False)
    proc = run_cli("eta", path, "--a", "A", "--f", "F", "--reference-commit", "eager", "--draws", "200",
                   "--out", tmp_path / "eta.csv")
    assert proc.returncode == 0, proc.stderr
    eta = pd.read_csv(tmp_path / "eta.csv")
    assert eta["reference"].tolist() == ["punct:cap=2,min_words=3", "timer:w=2"]
    assert eta["n_zero"].tolist() == [1, 0]
    both = run_cli("eta", path, "--a", "A", "--f", "F", "--reference", "punct", "--reference-commit", "eager",
                   "--out", tmp_path / "no.csv")
    assert both.returncode == 2 and "give exactly one of them" in both.stderr and not (tmp_path / "no.csv").exists()
