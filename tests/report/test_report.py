"""`simulplay report`: tables in the paper's shapes, figures, Markdown/LaTeX/CSV copies that
agree, signatures everywhere, optional tables when their files exist, and bad folders."""

import io
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from simulplay.core.signature import base_signature
from simulplay.core.tables import write_table
from simulplay.report import build_report, write_report
from simulplay.report.queue import queue_delta
from tests.support.markdown import md_table
from tests.support.report_runs import CONDITIONS, make_run

FIGURES = ("figure01_eta_per_talk", "figure02_queue_delta", "figure03_timeline", "figure04_request_durations")


@pytest.fixture(scope="module")
def run30(tmp_path_factory):
    return make_run(tmp_path_factory.mktemp("run30"), 30)


@pytest.fixture(scope="module")
def report30(run30, tmp_path_factory):
    out = tmp_path_factory.mktemp("rep") / "report"
    rep = build_report(run30)
    write_report(rep, out)
    return rep, out


def expected_cell(value) -> str:
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    text = f"{float(value):.3f}"
    return "0.000" if text == "-0.000" else text


@pytest.mark.slow


def test_markdown_eta_table_equals_the_csv_at_printed_precision(report30, run30):
    rep, out = report30
    table = rep.table("table02_eta")
    column_of = {table.label(c): c for c in table.frame.columns}
    header, rows = md_table((out / "report.md").read_text(), "### Table 2.")
    csv = pd.read_csv(run30 / "eta.csv").set_index("condition")
    assert len(rows) == len(csv) == 2 and set(column_of[h] for h in header) >= {"eta_s", "ci_low_s", "n_positive"}
    checked = 0
    for row in rows:
        cells = dict(zip((column_of[h] for h in header), row))
        want = csv.loc[cells["condition"]]
        for col, text in cells.items():
            if col != "condition":
                assert text == expected_cell(want[col]), (cells["condition"], col)
                checked += 1
    assert checked == 2 * 11


def test_the_report_opens_with_its_result(report30, run30):
    """Report and page open with the η table and a one-sentence reading of it (each condition's
    η and direction counts, read here from the run's own eta.csv), then the run and its inputs."""
    rep, out = report30
    eta = pd.read_csv(Path(run30) / "eta.csv")
    md = (out / "report.md").read_text(encoding="utf-8")
    headings = re.findall(r"^### (.+)$", md, re.M)
    assert headings[:3] == ["Table 2. Grouping changes the between-translator completion gap", "The run", "Inputs"]
    first = md.split("\n\n")[1]  # the paragraph under the title
    assert first.startswith("**Result: against ") and first.endswith("**")
    for row in eta.itertuples():
        assert (f"{row.eta_s:+.3f} s under {row.condition} (η > 0 in {row.n_positive} of {row.n_talks} talks, "
                f"η < 0 in {row.n_negative})") in first
    page = (out / "report.html").read_text(encoding="utf-8")
    assert page.index('<p class="result">') < page.index('id="table02_eta"') < page.index('id="table00_run"')


def test_per_talk_markdown_matches_its_csv(report30, run30):
    rep, out = report30
    table = rep.table("table04_per_talk")
    column_of = {table.label(c): c for c in table.frame.columns}
    header, rows = md_table((out / "report.md").read_text(), "### Tables 4–5.")
    csv = pd.read_csv(run30 / "eta_per_talk.csv").set_index(["talk_id", "condition"])
    assert len(rows) == len(csv) == 60
    for row in rows:
        cells = dict(zip((column_of[h] for h in header), row))
        want = csv.loc[(cells["talk_id"], cells["condition"])]
        assert cells["eta_s"] == expected_cell(want["eta_s"])
        assert cells["idle_part_s"] == expected_cell(want["idle_part_s"])


def test_report_files_open_and_carry_signatures(report30):
    rep, out = report30
    md = (out / "report.md").read_text()
    assert [t.number for t in rep.tables if t.number] == ["Table 1", "Table 2", "Tables 4–5", "Table 8", "Table 9",
                                                          "Table 11", "Table 12"]
    for item in rep.tables + rep.figures:
        section = md[md.index(f"### {item.number + '. ' if item.number else ''}{item.title}"):]
        nxt = section.find("\n### ", 4)
        assert "Signature: `" in section[: nxt if nxt > 0 else None], item.key
    for t in rep.tables:
        csv = pd.read_csv(out / "tables" / f"{t.key}.csv")
        assert len(csv) == len(t.frame) and csv["signature"].str.contains("version:simulplay-").all(), t.key
        tex = (out / "tables" / f"{t.key}.tex").read_text()
        assert all(k in tex for k in (r"\toprule", r"\midrule", r"\bottomrule", "Signature:")), t.key
        body = tex[tex.index(r"\midrule") + 8: tex.index(r"\bottomrule")].replace(r"\endfirsthead", "")
        rows = [r for r in body.split(r"\\") if r.strip() and "rule" not in r and "endhead" not in r]
        ncols = len(re.search(r"\{(l|r)+\}", tex).group(0)) - 2
        assert all(r.count("&") == ncols - 1 for r in rows), t.key
    for key in FIGURES:
        png = Image.open(out / "figures" / f"{key}.png")
        assert "version:simulplay-" in png.info["Description"]
        # twice the pixels the page shows (220 dpi, 8 in wide): sharp on high-density screens
        assert 1700 < png.width < 1800 and round(png.info["dpi"][0]) == 220
        svg = (out / "figures" / f"{key}.svg").read_bytes()
        assert b"<svg" in svg[:500]
        # the SVG is the PNG's picture (same layout and box): its size in points is the PNG's
        # pixels at 220 dpi, times 72 points per inch, to within a point
        w, h = map(float, re.search(rb'viewBox="0 0 ([\d.]+) ([\d.]+)"', svg).groups())
        assert abs(w - png.width / 220 * 72) < 1 and abs(h - png.height / 220 * 72) < 1, (key, w, h, png.size)


def test_table1_is_the_equal_talk_mean_of_the_summary(report30, run30):
    rep, _ = report30
    t1 = rep.table("table01_playback").frame.set_index(["system", "condition"])
    s = pd.read_parquet(run30 / "summary.parquet")
    man = pd.read_parquet(run30 / "manifest.parquet")
    for (system, cond), g in s.groupby(["system", "condition"]):
        row = t1.loc[(system, cond)]
        assert row["offset_s"] == pytest.approx(g["offset_s"].mean())
        assert row["idle_s"] == pytest.approx(g["idle_s"].mean())
        n_req = len(man[(man["system"] == system) & (man["condition"] == cond)])
        assert row["requests_per_talk"] == pytest.approx(n_req / 30)
    t12 = rep.table("table12_requests").frame.set_index(["system", "condition"])
    assert t12["requests"].sum() == len(man)
    trig = t12[[c for c in t12.columns if c.startswith("pct_")]].sum(axis=1)
    assert np.allclose(trig, 100.0)


@pytest.mark.slow
@pytest.mark.parametrize("n_talks", [1, 30])
def test_figures_for_one_and_thirty_talks(tmp_path, n_talks):
    run = make_run(tmp_path / "run", n_talks)
    rep = build_report(run)
    assert [f.key for f in rep.figures] == list(FIGURES)
    for fig in rep.figures:
        pixels = np.asarray(Image.open(io.BytesIO(fig.png)).convert("L"), dtype=float)
        assert pixels.std() > 20 and (pixels < 200).mean() > 0.02, fig.key  # drawn, not blank
    q = rep.figures[1].data.frame
    assert sorted(q["system"].unique()) == ["A", "F"] and len(q) == 2 * 101
    assert (q["n_talks"] == n_talks).all()
    assert q["u"].iloc[0] == 0 and q["u"].iloc[100] == 1
    assert (q["p25_s"] <= q["p75_s"]).all()
    if n_talks == 1:  # one talk: the band collapses on the mean
        assert np.allclose(q["p25_s"], q["mean_s"]) and np.allclose(q["p75_s"], q["mean_s"])


def parts(talk, system, cond, ready, dur):
    play, end, c = [], [], 0.0
    for r, d in zip(ready, dur):
        p = max(r, c)
        c = p + d
        play.append(p)
        end.append(c)
    return pd.DataFrame({"talk_id": talk, "system": system, "condition": cond, "seq": range(len(ready)),
                         "ready_s": ready, "play_s": play, "end_s": end, "audio_s": dur})


def test_queue_delta_by_hand():
    # reference: parts ready at 1 (2 s) and 2 (1 s) play 1–3 and 3–4; grouped: one part ready at 2 (3 s), 2–5.
    # At t = 2.5 (u = 0.5 of S = 5): Q_ref = (3 − 2.5) + (4 − 3) = 1.5, Q_grouped = 5 − 2.5 = 2.5.
    p = pd.concat([parts("t", "A", "ref", [1.0, 2.0], [2.0, 1.0]), parts("t", "A", "w", [2.0], [3.0]),
                   parts("u", "A", "ref", [0.0], [1.0]), parts("u", "A", "w", [4.0], [1.0])])
    per_talk, summary = queue_delta(p, pd.Series({"t": 5.0, "u": 5.0}), condition="w", reference="ref",
                                    systems=["A"])
    at = per_talk.set_index(["talk_id", "u"])["delta_q_s"]
    assert at[("t", 0.5)] == pytest.approx(1.0)
    assert at[("t", 0.2)] == pytest.approx(0.0 - 2.0)  # t = 1: reference holds 2 s, grouped nothing yet
    assert at[("u", 0.0)] == pytest.approx(-1.0) and at[("u", 0.8)] == pytest.approx(1.0)
    row = summary.set_index("u").loc[0.5]
    both = np.array([at[("t", 0.5)], at[("u", 0.5)]])
    assert row["mean_s"] == pytest.approx(both.mean())
    assert row["p25_s"] == pytest.approx(np.percentile(both, 25)) and row["n_talks"] == 2


@pytest.mark.slow
def test_optional_tables_appear_only_when_their_files_exist(tmp_path):
    run = make_run(tmp_path / "run", 4)
    md = (write_report(build_report(run), tmp_path / "a")[0]).read_text()
    assert "Table 10" not in md and "Table 16" not in md
    eta = pd.read_csv(run / "eta.csv").drop(columns="signature")
    edges = pd.concat([eta.assign(threshold=t) for t in (0.3, 0.5, 0.7)], ignore_index=True)
    sig = base_signature(table="eta-edges", trim="edges:guard_ms=100")
    write_table(edges, run / "eta_edges.csv", [{**sig, "threshold": t} for t in edges["threshold"]],
                kind="eta-edges", signature_column=True)
    share = pd.DataFrame({"backend": "fake:sine", "realization": "0", "system": "A", "reference": "immediate",
                          "condition": CONDITIONS[1], "threshold": [0.3, 0.5], "n_talks": 4, "reduction_s": 2.0,
                          "nonspeech_s": [0.8, 0.9], "speech_s": [1.2, 1.1], "share_pct": [40.0, 45.0],
                          "edge_s": 0.5})
    write_table(share, run / "edges_nonspeech.csv", base_signature(table="nonspeech-share"),
                kind="edges-nonspeech", signature_column=True)
    rep = build_report(run)
    md = (write_report(rep, tmp_path / "b")[0]).read_text()
    header, rows = md_table(md, "### Table 10.")
    assert len(rows) == 6 and "VAD threshold" in header
    assert "trim:edges:guard_ms=100" in md and "threshold:(per row)" in md
    header, rows = md_table(md, "### Table 16.")
    assert [r[header.index("non-speech share (%)")] for r in rows] == ["40.00", "45.00"]
    html = (tmp_path / "b" / "report.html").read_text()
    assert "Table 10. Grouping effects after request-edge silence removal" in html


@pytest.mark.slow


def test_missing_trace_is_noted_not_fatal(tmp_path):
    run = make_run(tmp_path / "run", 3, traces=False)
    rep = build_report(run)
    assert "table11_traces" not in [t.key for t in rep.tables]
    assert any("trace file(s) not found" in n for n in rep.run.notes)
    assert "trace file(s) not found" in (write_report(rep, tmp_path / "r")[0]).read_text()


@pytest.mark.slow
def test_cli_report_and_its_errors(cli, tmp_path):
    run = make_run(tmp_path / "run", 5)
    res = cli("report", run, "--out", tmp_path / "rep", "--condition", "punct", "--talk", "talk03", check=True)
    assert "open" in res.stdout and (tmp_path / "rep" / "report.html").exists()
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "Figure 3 shows talk talk03" in md and "ΔQ(u) = Q_w(u·S) − Q_0(u·S) for w = punct:cap=2" in md
    for args, fragment in [
        (("--condition", "immediate"), "--condition 'immediate': is not a grouped condition"),
        (("--talk", "nobody"), "--talk 'nobody': is not a talk of the run"),
    ]:
        bad = cli("report", run, "--out", tmp_path / "no", *args)
        assert bad.returncode == 2 and fragment in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
        assert not (tmp_path / "no").exists()
    (run / "run.json").rename(run / "moved.json")  # without run.json the folder holds step-by-step tables
    cli("report", run, "--out", tmp_path / "steps", check=True)
    md = (tmp_path / "steps" / "report.md").read_text()
    assert f"Step-by-step tables from {run}" in md and "### Inputs" in md and "moved.json" not in md


@pytest.mark.slow


def test_a_summary_from_another_run_is_refused(cli, tmp_path):
    run = make_run(tmp_path / "run", 3)
    s = pd.read_parquet(run / "summary.parquet")
    import pyarrow.parquet as pq

    table = pq.read_table(run / "summary.parquet")
    s.loc[0, "offset_s"] += 1.0
    import pyarrow as pa

    pq.write_table(pa.Table.from_pandas(s, preserve_index=False).replace_schema_metadata(table.schema.metadata),
                   run / "summary.parquet")
    bad = cli("report", run, "--out", tmp_path / "no")
    assert bad.returncode == 2 and "does not reproduce summary.parquet" in bad.stderr
    assert not (tmp_path / "no").exists()


@pytest.mark.slow
def test_a_second_report_replaces_the_first(tmp_path):
    run = make_run(tmp_path / "run", 3)
    out = tmp_path / "rep"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    write_report(build_report(run), out)
    (out / "figures" / "stale.png").write_bytes(b"x")
    write_report(build_report(run, condition="punct"), out)
    assert (out / "notes.txt").read_text() == "mine"  # not ours: kept
    assert not (out / "figures" / "stale.png").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".rep.")]  # no temporary folder left


@pytest.mark.slow


def test_run_writes_its_report_into_the_run_folder(tmp_path):
    from simulplay.analysis.bootstrap import Bootstrap
    from simulplay.grouping.rules import Immediate, Timer
    from simulplay.sim.variants import ReplayVariant, RequestRelease, Zero
    from simulplay.workflows.experiment import Experiment
    from simulplay.workflows.pipeline import run_experiment
    from tests.support.factories import small_trace
    from tests.support.fakes import FakeSettings

    small_trace(tmp_path / "trace.jsonl", n_streams=4, n_updates=6)
    exp = Experiment(name="tiny", traces=(tmp_path / "trace.jsonl",), a="A", f="F", rules=(Immediate(), Timer(w=3)),
                     reference="immediate", backends=(FakeSettings(),), out=tmp_path / "run", store=tmp_path / "store",
                     bootstrap=Bootstrap(draws=100), variants=(ReplayVariant(RequestRelease(), Zero()),))
    run_experiment(exp)
    report = tmp_path / "run" / "report"
    md = (report / "report.md").read_text()
    header, rows = md_table(md, "### Table 2.")
    eta = pd.read_csv(tmp_path / "run" / "eta.csv")
    assert len(rows) == 1 and rows[0][header.index("η (s)")] == expected_cell(eta["eta_s"][0])
    assert "η service-zero (s)" in md and (report / "report.html").stat().st_size > 50_000
    assert sorted(p.name for p in (report / "figures").glob("*.png")) == sorted(f"{k}.png" for k in FIGURES)


@pytest.mark.slow


def test_content_change_between_conditions_is_table_13(tmp_path):
    run = make_run(tmp_path / "run", 3)
    pairs = pd.DataFrame({"backend": "fake:sine", "system": ["A", "F"], "from_condition": CONDITIONS[0],
                          "to_condition": CONDITIONS[1], "deletion_mismatches_from": [10, 4],
                          "deletion_mismatches_to": [14, 3]})
    write_table(pairs, run / "content.pairs.csv", base_signature(table="content-pairs"), kind="content-pairs",
                signature_column=True)
    md = (write_report(build_report(run), tmp_path / "r")[0]).read_text()
    header, rows = md_table(md, "### Table 13.")
    assert len(rows) == 2 and "Deletions are recognition mismatches, not verified omissions" in md


@pytest.mark.slow


def test_the_report_names_inputs_relative_to_the_run_folder(tmp_path):
    """A run.json names its trace by absolute path (as `run` writes it); the report names
    it relative to the run folder, so no machine's path lands in a committed report."""
    import json
    import shutil

    run = make_run(tmp_path / "runs" / "r1", 3)
    outside = tmp_path / "traces" / "talks.jsonl"  # beside the runs, as the repository's traces/ is
    outside.parent.mkdir()
    shutil.move(run / "trace.jsonl", outside)
    record = json.loads((run / "run.json").read_text(encoding="utf-8"))
    record["experiment"]["traces"] = [str(outside.resolve())]
    (run / "run.json").write_text(json.dumps(record), encoding="utf-8")
    md = write_report(build_report(run), run / "report")[0].read_text(encoding="utf-8")
    inputs = (run / "report" / "tables" / "inputs.csv").read_text(encoding="utf-8")
    assert "| ../../traces/talks.jsonl | trace |" in md  # worked out by hand from the folder layout above
    assert inputs.splitlines()[-1].startswith("../../traces/talks.jsonl,trace,")
    for text in (md, inputs):
        assert str(tmp_path) not in text


def test_the_committed_demo_report_names_no_absolute_path():
    """reports/demo is read on other machines: every input it names is relative to its run folder."""
    import csv

    root = Path(__file__).resolve().parents[2] / "reports" / "demo"
    with open(root / "tables" / "inputs.csv", encoding="utf-8", newline="") as f:
        paths = [row["path"] for row in csv.DictReader(f)]
    assert paths and all(not Path(p).is_absolute() for p in paths), paths
    for name in ("report.md", "tables/inputs.csv", "tables/inputs.tex"):
        text = (root / name).read_text(encoding="utf-8")
        assert "/work/" not in text and "/home/" not in text and "/tmp/" not in text, name
