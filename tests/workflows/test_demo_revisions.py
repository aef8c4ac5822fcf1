"""`simulplay demo --revisions`: the bundled re-translating translator under five commit
policies side by side: the table by hand on two policies, and the bundled experiment run
end to end with the fake backend on one talk."""

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simulplay.analysis.spoken import SPOKEN_COLUMNS
from simulplay.backends import parse_backend
from simulplay.workflows.pipeline import run_experiment
from simulplay.workflows.revisions import revisions_experiment, revisions_table
from tests.support import fakes  # noqa: F401  (registers the fake backend)

ROOT = Path(__file__).resolve().parents[2]


def test_the_side_by_side_table_by_hand():
    rows = [("t1", "R", "eager", 10, 10, 2, 9, 20.0, 10.0, 0.0, 0.0, 0.0, 0.3),
            ("t2", "R", "eager", 20, 22, 4, 20, 10.0, 5.0, 0.0, 0.0, 0.0, 0.2),
            ("t1", "R", "final (oracle)", 10, 10, 0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.3),
            ("t2", "R", "final (oracle)", 20, 20, 0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.2),
            ("t1", "E", "eager", 5, 5, 0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)]
    spoken = pd.DataFrame(rows, columns=list(SPOKEN_COLUMNS))
    summary = pd.DataFrame({"talk_id": ["t1", "t2"] * 2, "system": "R", "source_s": [60.0, 60.0] * 2,
                            "condition": ["punct"] * 2 + ["final+punct"] * 2, "offset_s": [1.0, 2.0, 0.5, 0.5]})
    eta = pd.DataFrame({"condition": ["punct:cap=2,min_words=3"], "eta_s": [0.75]})
    t = revisions_table(spoken, summary, eta, a="R", reference="final+punct").set_index("commit")
    assert list(t.index) == ["eager", "final (oracle)"]
    assert list(t["words_spoken"]) == [32, 30] and list(t["spoken_then_retracted"]) == [6, 0]
    np.testing.assert_allclose(t["retracted_per_min"], [3.0, 0.0])  # 6 words in 2 minutes of source
    np.testing.assert_allclose(t["wer_pct"], [15.0, 0.0])
    np.testing.assert_allclose(t["mean_L_s"], [1.5, 0.5])
    np.testing.assert_allclose(t["eta_s"], [0.75, 0.0])  # the reference is 0 by definition


@pytest.mark.slow
def test_the_bundled_experiment_runs_its_five_policies(tmp_path):
    exp = revisions_experiment(tmp_path, path=ROOT / "traces" / "revisions.toml")
    fake = parse_backend("fake-test")
    exp = dataclasses.replace(exp, backends=(fake,), spelled=((fake, "fake-test"), *exp.spelled[1:]),
                              talks=("night-sky",), bootstrap=dataclasses.replace(exp.bootstrap, draws=200))
    assert exp.out == tmp_path.resolve() / "revisions" and exp.store == tmp_path.resolve() / "store"
    res = run_experiment(exp)
    t = revisions_table(pd.read_parquet(exp.out / "spoken.parquet"), res.replay.summary, res.eta.table,
                        a=exp.a, reference=exp.reference).set_index("commit")
    assert list(t.index) == ["eager", "stable:k=2", "hold:t=1", "mask:k=3", "final (oracle)"]
    assert t.loc["final (oracle)", "spoken_then_retracted"] == 0 and t.loc["final (oracle)", "wer_pct"] == 0
    assert t.loc["eager", "spoken_then_retracted"] > t.loc["stable:k=2", "spoken_then_retracted"]
    assert t.loc["eager", "lag_p90_s"] == 0 and t.loc["stable:k=2", "lag_p50_s"] > 0
    assert "Table 8c" in (exp.out / "report" / "report.md").read_text(encoding="utf-8")
