"""`simulplay demo --revisions`: the bundled re-translating translator under five commit
policies side by side: the table by hand on two policies, and the bundled experiment (a run
with commit policies end to end: tests/workflows/test_run_commit.py)."""

from pathlib import Path

import numpy as np
import pandas as pd

from simulplay.analysis.spoken import SPOKEN_COLUMNS
from simulplay.workflows.revisions import revisions_experiment, revisions_table

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


def test_the_bundled_experiment_is_the_five_policies_against_the_oracle(tmp_path):
    exp = revisions_experiment(tmp_path, path=ROOT / "traces" / "revisions.toml")
    assert (exp.a, exp.f, exp.reference) == ("retranslating", "eager", "final+punct")
    assert [r.canonical() for r in exp.rules] == [
        "punct:cap=2,min_words=3", *(f"{p}+punct:cap=2,min_words=3" for p in ("stable:k=2", "hold:t=1", "mask:k=3",
                                                                             "final"))]
    assert [p.name for p in exp.traces] == ["sample_traces.jsonl", "revising_traces.jsonl"]
    assert exp.out == tmp_path.resolve() / "revisions" and exp.store == tmp_path.resolve() / "store"
    assert [b.name for b in exp.backends] == ["piper"] and exp.quality is None and not exp.variants
