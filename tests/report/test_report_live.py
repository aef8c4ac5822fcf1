"""The report's live validation section: Table 18 (predicted against live L per output),
Table 18b (η from each) and Figure 5 appear when the run folder holds a live run in
``live/``, with the values of its prediction tables, and not otherwise."""

import pandas as pd

from simulplay.core.signature import base_signature
from simulplay.core.tables import write_table
from simulplay.report import build_report, write_report
from tests.support.markdown import md_table
from tests.support.report_runs import make_run


def test_a_live_run_in_the_run_folder_adds_table_18_and_figure_5(tmp_path):
    run = make_run(tmp_path / "run", 4)
    md = (write_report(build_report(run), tmp_path / "a")[0]).read_text()
    assert "Table 18" not in md and "Figure 5" not in md
    (run / "live").mkdir()
    pred = pd.DataFrame({"talk_id": "t1", "system": ["A", "F"], "condition": "immediate", "complete": True,
                         "L_live_s": [2.5, 1.0], "first_play_live_s": [0.4, 0.3], "L_isolated_s": [2.25, 1.5],
                         "first_play_isolated_s": [0.3, 0.3], "dL_isolated_s": [-0.25, 0.5],
                         "L_shared_s": [2.75, 1.125], "first_play_shared_s": [0.4, 0.3], "dL_shared_s": [0.25, 0.125]})
    sig = base_signature(table="live-prediction", speed=4)
    write_table(pred, run / "live" / "prediction.parquet", sig, kind="live-prediction")
    eta = pd.DataFrame({"condition": ["timer:w=2"], "n_talks": [1], "eta_live_s": [-0.5], "eta_isolated_s": [0.0],
                        "eta_shared_s": [-0.25], "d_eta_isolated_s": [0.5], "d_eta_shared_s": [0.25]})
    write_table(eta, run / "live" / "prediction_eta.parquet", sig, kind="live-prediction-eta")
    out = tmp_path / "b"
    md = (write_report(build_report(run), out)[0]).read_text()
    header, rows = md_table(md, "### Table 18.")
    assert [r[header.index("L isolated (s)")] for r in rows] == ["2.250", "1.500"]
    assert [r[header.index("ΔL shared (s)")] for r in rows] == ["0.250", "0.125"]
    header, rows = md_table(md, "### Table 18b.")
    assert rows[0][header.index("Δη isolated (s)")] == "0.500"
    assert "Figure 5" in md and (out / "figures" / "figure05_live.png").stat().st_size > 1000
    assert "live/prediction.parquet" in md  # listed among the inputs
