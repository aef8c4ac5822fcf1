"""The report's Quality section (Table 19): per condition ΔOVRL, Δsimilarity and Δ joins per
minute against the reference with their paired talk-bootstrap intervals and direction counts,
when the run folder (or the step-by-step tables) holds a quality interval table; absent
otherwise. Expected values are computed by hand from a small per-output table.

With three talks the bootstrap interval of a mean Δ is the range of the per-talk Δ: the
2.5 % quantile of the resampled means is the smallest talk's Δ (all three draws pick that
talk with probability 1/27 = 3.7 % > 2.5 %), the 97.5 % quantile the largest; with two talks
(one left out) likewise (probability 1/4)."""

import numpy as np
import pandas as pd
import pytest

from simulplay.analysis.bootstrap import Bootstrap
from simulplay.analysis.quality_intervals import interval_table
from simulplay.core.signature import base_signature
from simulplay.core.tables import write_table
from simulplay.report import build_report, write_report
from tests.support.markdown import md_table
from tests.support.report_runs import BACKEND, make_run

TALKS = ["talk00", "talk01", "talk02"]
#: Per output, talk by talk: (immediate, timer:w=4) for system A.
OVRL = ([3.0, 3.2, 2.9], [3.25, 3.1, 3.4])  # Δ +0.25, −0.10, +0.50: mean 0.65/3
JOINS = ([30.0, 36.0, 33.0], [12.0, 15.0, 15.0])  # Δ −18, −21, −18: mean −19
SIMILARITY = ([0.80, 0.90, 0.85], [0.86, np.nan, 0.80])  # talk01 left out; Δ +0.06, −0.05


def per_output() -> pd.DataFrame:
    rows = []
    for c, cond in enumerate(["immediate", "timer:w=4"]):
        for t, talk in enumerate(TALKS):
            rows.append({"talk_id": talk, "system": "A", "condition": cond, "backend": BACKEND, "realization": "0",
                         "n_requests": 5, "audio_s": 60.0, "dnsmos_ovrl": OVRL[c][t],
                         "similarity_output": SIMILARITY[c][t], "joins_per_min": JOINS[c][t]})
    return pd.DataFrame(rows)


def write_intervals(path) -> None:
    keys = ["talk_id", "system", "condition", "backend", "realization"]
    sig = base_signature(table="quality", metrics="dnsmos,similarity,joins", reference="immediate")
    deltas, sigs = interval_table(per_output(), keys, "immediate", Bootstrap(draws=4000, seed=11), sig)
    write_table(deltas, path, sigs, kind="quality-intervals", signature_column=True)


def rows_by_score(md: str) -> dict[str, dict[str, str]]:
    header, rows = md_table(md, "### Table 19.")
    return {r[header.index("score")]: dict(zip(header, r)) for r in rows}


def test_the_quality_section_holds_hand_computed_deltas_intervals_and_counts(tmp_path):
    run = make_run(tmp_path / "run", 3)
    md = write_report(build_report(run), tmp_path / "before")[0].read_text()
    assert "Table 19" not in md and "Quality" not in md
    write_intervals(run / "quality.intervals.parquet")
    out = tmp_path / "report"
    md = write_report(build_report(run), out)[0].read_text()
    got = rows_by_score(md)
    assert set(got) == {"dnsmos_ovrl", "similarity_output", "joins_per_min"}
    ovrl, sim, joins = got["dnsmos_ovrl"], got["similarity_output"], got["joins_per_min"]
    assert ovrl["condition"] == "timer:w=4" and ovrl["system"] == "A"
    # reference mean (3.0+3.2+2.9)/3, condition mean (3.25+3.1+3.4)/3, Δ 0.65/3; interval = per-talk range
    assert [ovrl[k] for k in ("talks", "reference", "condition mean", "Δ", "Δ<0", "Δ>0", "CI low", "CI high")] == \
        ["3", "3.033", "3.250", "0.217", "1", "2", "-0.100", "0.500"]
    assert [joins[k] for k in ("reference", "condition mean", "Δ", "Δ<0", "Δ>0", "CI low", "CI high")] == \
        ["33.000", "14.000", "-19.000", "3", "0", "-21.000", "-18.000"]
    # talk01 has no similarity under timer:w=4: two talks, (0.80+0.85)/2 against (0.86+0.80)/2
    assert [sim[k] for k in ("talks", "talks left out", "reference", "condition mean", "Δ", "Δ<0", "Δ>0",
                             "CI low", "CI high")] == ["2", "1", "0.825", "0.830", "0.005", "1", "1", "-0.050", "0.060"]
    section = md[md.index("### Table 19."):]
    assert "table:quality-intervals" in section and "draws:4000" in section and "boot_seed:11" in section
    csv = pd.read_csv(out / "tables" / "table19_quality.csv")
    assert len(csv) == 3 and csv["signature"].str.contains("reference:immediate").all()
    assert abs(csv.loc[csv["metric"] == "dnsmos_ovrl", "delta"].iloc[0] - 0.65 / 3) < 1e-12  # full precision
    html = (out / "report.html").read_text()
    assert "Table 19" in html and "Quality: what grouping changes" in html and ">-19.000<" in html
    assert "quality.intervals.parquet" in md  # listed among the inputs


def test_an_interval_table_in_step_by_step_tables_gives_the_same_section_and_a_csv_alone_is_refused(tmp_path):
    """Step-by-step, the table's kind comes from its Parquet metadata (any file name); a CSV
    records no kind: in a folder it is listed as not used, named on the command line it is
    refused in one line."""
    from simulplay.core.errors import InputError

    run = make_run(tmp_path / "run", 3)
    write_intervals(run / "quality.intervals.parquet")
    whole = rows_by_score(write_report(build_report(run), tmp_path / "a")[0].read_text())
    tables = tmp_path / "tables"
    tables.mkdir()
    for name in ("manifest.parquet", "summary.parquet", "eta.parquet"):
        (tables / name).write_bytes((run / name).read_bytes())
    write_intervals(tables / "scores.parquet")
    stepwise = rows_by_score(write_report(build_report([tables]), tmp_path / "b")[0].read_text())
    assert stepwise == whole
    (tables / "scores.parquet").unlink()
    write_intervals(tables / "quality.intervals.csv")
    report = build_report([tables])
    assert "table19_quality" not in [t.key for t in report.tables]
    uses = {t.path.name: t.use for t in report.run.files}
    assert uses["quality.intervals.csv"].startswith("not used: a CSV that copies no Parquet input")
    with pytest.raises(InputError) as e:
        build_report([tables / "manifest.parquet", tables / "summary.parquet", tables / "eta.parquet",
                      tables / "quality.intervals.csv"])
    assert str(e.value).startswith(f"{tables / 'quality.intervals.csv'}: is a CSV that copies no Parquet input")
    assert "\n" not in str(e.value) and "--out ending in .parquet" in str(e.value)
