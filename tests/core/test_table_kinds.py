"""The typed reader of the tables simulplay reads back (simulplay.formats.kinds): a CSV reads
as its Parquet copy, and a replay's signature names its file label."""

import numpy as np
import pandas as pd

from simulplay.core.signature import base_signature
from simulplay.core.tables import write_table
from simulplay.formats.kinds import keys_as_text, read_typed
from simulplay.formats.summary import replay_label


def test_a_csv_reads_with_the_types_of_its_parquet_copy(tmp_path):
    df = pd.DataFrame({"backend": ["b", "b"], "realization": [0, 1], "talk_id": ["007", "12"], "condition": ["x", "y"],
                       "n_talks": [3, 4], "eta_s": [0.5, np.nan], "pair": ["1", "2"], "label": ["a→b", "c"]})
    sig = base_signature(table="eta-per-talk")
    for ext in (".parquet", ".csv"):
        write_table(df, tmp_path / f"t{ext}", [sig] * 2, kind="eta-per-talk")
    csv, _, kind = read_typed(tmp_path / "t.csv")
    pq, _, pq_kind = read_typed(tmp_path / "t.parquet")
    assert (kind, pq_kind) == ("", "eta-per-talk")  # a CSV records no kind
    assert csv["talk_id"].tolist() == ["007", "12"] and csv["pair"].tolist() == ["1", "2"]  # identifiers stay text
    assert csv["n_talks"].dtype == np.int64 and csv["n_talks"].tolist() == [3, 4]
    assert csv["eta_s"].dtype == np.float64 and csv["eta_s"].iloc[0] == 0.5 and np.isnan(csv["eta_s"].iloc[1])
    assert csv["label"].tolist() == ["a→b", "c"]
    assert keys_as_text(pq)["realization"].tolist() == csv["realization"].tolist() == ["0", "1"]


def test_the_replay_label_of_a_signature():
    assert replay_label({"release": "request", "service": "measured"}) == ""
    assert replay_label({}) == ""
    assert replay_label({"service": "zero"}) == "service-zero"
    assert replay_label({"release": "chunk", "service": "zero", "trim": "none"}) == "release-chunk+service-zero"
