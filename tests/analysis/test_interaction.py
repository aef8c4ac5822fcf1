"""Cross-backend interaction η(B1) − η(B2) (the paper's Appendix C.4), against a hand
computation: per-talk values, means, parts, direction counts, and the paired bootstrap
drawn here with NumPy alone."""

import numpy as np
import pandas as pd
import pytest

from simulplay.analysis import Bootstrap, compute_eta
from simulplay.analysis.interaction import parse_backend_pair
from simulplay.core.errors import IncompleteError, InputError
from tests.support.checks import assert_one_line_error

# (backend, talk, system, condition) → (audio D, idle I); S = 100 s everywhere, L = D + I − S.
# Only the listed cells differ from the defaults below.
P = {("t1", "A", "immediate"): (100, 10), ("t1", "F", "immediate"): (120, 5),
     ("t1", "A", "timer:w=4"): (80, 20), ("t1", "F", "timer:w=4"): (110, 6),
     ("t2", "A", "immediate"): (90, 0), ("t2", "F", "immediate"): (90, 0),
     ("t2", "A", "timer:w=4"): (95, 0), ("t2", "F", "timer:w=4"): (80, 10)}
X = {("t1", "A", "timer:w=4"): (70, 0), ("t2", "A", "timer:w=4"): (100, 12), ("t3", "F", "timer:w=4"): (100, 4)}
# By hand (δ = L_A − L_F, η = δ(4) − δ(0), parts the same differences of D and of I):
#   P: t1 δ0 = 110 − 125 = −15, δ4 = 100 − 116 = −16 → η −1 (D −20 + 10 = −10, I 10 − 1 = 9)
#      t2 δ0 = 0, δ4 = 95 − 90 = 5 → η 5 (D 5 + 10 = 15, I 0 − 10 = −10);  t3 (50, 5) everywhere → η 0
#   X: (100, 0) by default: t1 η −30 (D −30), t2 η 12 (I 12), t3 δ4 = 100 − 104 → η −4 (I −4)
#   P − X: t1 29 (D 20, I 9), t2 −7 (D 15, I −22), t3 4 (D 0, I 4)
INTERACTION = {"t1": 29.0, "t2": -7.0, "t3": 4.0}


def summary(drop=(), realizations=(0,)):
    rows = []
    for r in realizations:
        for backend, cells, default in (("piper:p", P, {"t3": (50, 5)}), ("xtts:x", X, {})):
            for t in ("t1", "t2", "t3"):
                for s in ("A", "F"):
                    for c in ("immediate", "timer:w=4"):
                        if (backend, t) in drop:
                            continue
                        d, i = cells.get((t, s, c), default.get(t, (100, 0)))
                        rows.append({"talk_id": t, "system": s, "condition": c, "backend": backend,
                                     "realization": r, "audio_s": float(d), "idle_s": float(i),
                                     "offset_s": float(d + i - 100), "source_s": 100.0})
    return pd.DataFrame(rows)


def test_interaction_by_hand():
    res = compute_eta(summary(), a="A", f="F", reference="immediate", boot=Bootstrap(draws=199),
                      interactions=[("piper:p", "xtts:x")])
    inter = res.interactions[0]
    pt = inter.per_talk.set_index("talk_id")
    assert pt["interaction_s"].to_dict() == INTERACTION
    assert pt["duration_part_s"].tolist() == [20, 15, 0] and pt["idle_part_s"].tolist() == [9, -22, 4]
    row = inter.table.iloc[0]
    assert row["interaction_s"] == pytest.approx(26 / 3) and row["duration_part_s"] == pytest.approx(35 / 3)
    assert row["idle_part_s"] == pytest.approx(-3) and (row["n_negative"], row["n_positive"]) == (1, 2)
    assert row["eta1_s"] == pytest.approx(4 / 3) and row["eta2_s"] == pytest.approx(-22 / 3)
    # one index matrix over the sorted common talks, seed 1032026; the default ends are the
    # ⌊200 · 0.025⌋ = 5th smallest and the 195th of the 199 resampled means
    idx = np.random.default_rng(1032026).integers(0, 3, size=(199, 3))
    means = np.sort(np.array([29.0, -7.0, 4.0])[idx].mean(axis=1))
    assert (row["ci_low_s"], row["ci_high_s"]) == (means[4], means[194])
    sig = inter.signatures[0]
    assert sig["table"] == "interaction" and sig["backend"] == "piper:p − xtts:x" and sig["draws"] == 199


def test_realizations_stay_separate_panels():
    res = compute_eta(summary(realizations=(0, 1)), a="A", f="F", reference="immediate",
                      boot=Bootstrap(draws=50), interactions=[("piper:p", "xtts:x")])
    table = res.interactions[0].table
    assert table["realization"].tolist() == [0, 1] and table["interaction_s"].tolist() == pytest.approx([26 / 3] * 2)


def test_a_talk_missing_under_one_backend_is_refused_unless_allowed():
    df = summary(drop=[("xtts:x", "t3")])
    with pytest.raises(IncompleteError, match="1 talk.*talk t3 \\(xtts:x lacks it\\)"):
        compute_eta(df, a="A", f="F", reference="immediate", boot=Bootstrap(draws=10),
                    interactions=[("piper:p", "xtts:x")])
    res = compute_eta(df, a="A", f="F", reference="immediate", boot=Bootstrap(draws=10),
                      interactions=[("piper:p", "xtts:x")], allow_incomplete=True)
    row = res.interactions[0].table.iloc[0]
    assert row["n_talks"] == 2 and row["interaction_s"] == pytest.approx((29 - 7) / 2)
    assert res.interactions[0].signatures[0]["excluded"] == 1


def test_bad_pairs_and_unknown_backends():
    with pytest.raises(InputError, match="--interaction 'piper:p': is not a pair"):
        parse_backend_pair("piper:p")
    with pytest.raises(InputError, match="no backend 'cosy'.*piper:p, xtts:x"):
        compute_eta(summary(), a="A", f="F", reference="immediate", boot=Bootstrap(draws=10),
                    interactions=[("piper:p", "cosy")])


@pytest.mark.slow


def test_eta_command_writes_the_interaction_table(cli, tmp_path):
    summary().to_csv(tmp_path / "s.csv", index=False)
    proc = cli("eta", tmp_path / "s.csv", "--a", "A", "--f", "F", "--reference", "immediate", "--draws", "199",
               "--interaction", "piper:p,xtts:x", "--interaction-per-talk", tmp_path / "ipt.csv",
               "--out", tmp_path / "eta.csv", check=True)
    table = pd.read_csv(tmp_path / "eta.interaction.csv")
    assert table["interaction_s"].tolist() == pytest.approx([26 / 3])
    assert "table:interaction" in table["signature"][0] and "Cross-backend interaction" in proc.stdout
    assert pd.read_csv(tmp_path / "ipt.csv")["interaction_s"].tolist() == [29, -7, 4]
    assert_one_line_error(cli("eta", tmp_path / "s.csv", "--a", "A", "--f", "F", "--reference", "immediate",
                              "--interaction", "piper:p", "--out", tmp_path / "x.csv"), "is not a pair")


@pytest.mark.slow


def test_the_report_shows_the_interaction_when_the_run_has_two_backends(tmp_path):
    from simulplay.report import build_report
    from tests.support.report_runs import make_run

    run = make_run(tmp_path / "run", 5, draws=199, backends=("fake:sine", "fake:slow"))
    table = build_report(run).table("table07_interaction")
    pt = pd.read_csv(run / "eta_per_talk.csv")
    for cond, row in table.frame.set_index("condition").iterrows():
        # by hand from the per-talk η table: B1 minus B2 per talk, then the mean over talks
        eta = {b: pt[(pt["backend"] == b) & (pt["condition"] == cond)].set_index("talk_id")["eta_s"]
               for b in ("fake:sine", "fake:slow")}
        diff = (eta["fake:sine"] - eta["fake:slow"]).sort_index()
        assert row["interaction_s"] == pytest.approx(diff.mean()) and row["n_talks"] == 5
        assert (row["n_negative"], row["n_positive"]) == ((diff < 0).sum(), (diff > 0).sum())
    assert len(table.frame) == 2 and "fake:sine − fake:slow" in table.lines[0]
    single = make_run(tmp_path / "one", 5, draws=50)
    assert not any(t.key == "table07_interaction" for t in build_report(single).tables)
