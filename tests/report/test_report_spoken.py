"""Table 8c, what the listener got under each commit policy: present only when the run folder
has the listener's table (a run with commit policies), summed and averaged by hand over two
talks of 60 s and 120 s of source."""

import numpy as np
import pandas as pd
import pytest

from simulplay.analysis.spoken import SPOKEN_COLUMNS
from simulplay.core.signature import base_signature
from simulplay.core.tables import write_table
from simulplay.report.build import load_inputs
from simulplay.report.spoken_tables import spoken_report_table
from simulplay.report.tables import all_tables
from tests.support.report_runs import make_run

STABLE = "stable:k=2+immediate"
SOURCE = {"t1": 60.0, "t2": 120.0}


def plan_manifest() -> pd.DataFrame:
    rows = []
    for talk, source in SOURCE.items():
        for system in ("A", "F"):
            for cond in ("immediate", STABLE):
                for seq in range(2):
                    rows.append({"talk_id": talk, "system": system, "condition": cond, "backend": "fake:sine",
                                 "realization": 0, "seq": seq, "dispatch_s": 1.0 + seq, "service_s": 0.0,
                                 "audio_s": 1.0, "source_s": source, "text": f"words {seq}.",
                                 "trigger": "immediate", "group": seq, "error": ""})
    return pd.DataFrame(rows)


# (commit, talk): words spoken, spoken then retracted, WER, CER, lag p50, p90, max, erasure (A; F speaks
# an append-only stream: 5 and 7 words, nothing retracted, no error, no lag, under both policies)
A = {("eager", "t1"): (10, 3, 20.0, 10.0, 0.0, 0.0, 0.0, 0.5),
     ("eager", "t2"): (20, 6, 30.0, 20.0, 0.0, 0.0, 0.0, 0.25),
     ("stable:k=2", "t1"): (8, 0, 0.0, 0.0, 1.0, 2.0, 2.0, 0.5),
     ("stable:k=2", "t2"): (16, 1, 10.0, 5.0, 2.0, 3.0, 4.0, 0.25)}


def spoken_rows() -> pd.DataFrame:
    rows = []
    for (commit, talk), (words, retracted, wer, cer, p50, p90, mx, erasure) in A.items():
        rows.append(dict(zip(SPOKEN_COLUMNS, (talk, "A", commit, words, words, retracted, 4 * retracted, wer, cer,
                                              p50, p90, mx, erasure))))
        rows.append(dict(zip(SPOKEN_COLUMNS, (talk, "F", commit, 5 if talk == "t1" else 7, 5 if talk == "t1" else 7,
                                              0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0))))
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def spoken_run(tmp_path_factory):
    folder = make_run(tmp_path_factory.mktemp("spoken"), 2, draws=50, traces=False, manifest=plan_manifest(),
                      rules=["immediate", STABLE])
    table = spoken_rows()
    write_table(table, folder / "spoken.parquet", base_signature(table="spoken", commit=["eager", "stable:k=2"]),
                kind="spoken")
    return load_inputs(folder)


def test_what_the_listener_got_per_condition_and_translator_by_hand(spoken_run):
    table = spoken_report_table(spoken_run)
    assert table is not None and table.number == "Table 8c"
    f = table.frame
    assert list(zip(f["commit"], f["rule"], f["system"])) == [
        ("eager", "immediate", "A"), ("eager", "immediate", "F"),
        ("stable:k=2", "immediate", "A"), ("stable:k=2", "immediate", "F")]
    a = f[f["system"] == "A"].set_index("commit")
    assert list(a["talks"]) == [2, 2]
    assert list(a["words_spoken"]) == [30, 24] and list(a["spoken_then_retracted"]) == [9, 1]
    # per minute of source: 9 words over 3 minutes; 1 over 3
    np.testing.assert_allclose(a["retracted_per_min"], [3.0, 1 / 3], atol=1e-12)
    np.testing.assert_allclose(a["wer_pct"], [25.0, 5.0])  # (20 + 30) / 2, (0 + 10) / 2
    np.testing.assert_allclose(a["cer_pct"], [15.0, 2.5])
    np.testing.assert_allclose(a[["lag_p50_s", "lag_p90_s", "lag_max_s"]].to_numpy(), [[0, 0, 0], [1.5, 2.5, 4]])
    np.testing.assert_allclose(a["normalized_erasure"], [0.375, 0.375])
    fr = f[f["system"] == "F"]
    assert list(fr["words_spoken"]) == [12, 12] and list(fr["spoken_then_retracted"]) == [0, 0]
    assert table.label("retracted_per_min") == "retracted/min"
    assert len(table.signatures) == 4 and all("spoken" in s for s in table.signatures)


def test_the_table_follows_table_8_and_its_input_is_listed(spoken_run):
    keys = [t.key for t in all_tables(spoken_run)]
    assert keys.index("table08c_spoken") == keys.index("table08_rules") + 1
    assert any(t.path.name == "spoken.parquet" and t.use == "Table 8c" for t in spoken_run.files)


def test_no_table_without_commit_policies(tmp_path):
    run = load_inputs(make_run(tmp_path / "plain", 2, draws=50, traces=False))
    assert spoken_report_table(run) is None
    assert "table08c_spoken" not in [t.key for t in all_tables(run)]
    assert not any("spoken" in t.kind for t in run.files)
