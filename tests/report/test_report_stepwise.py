"""`simulplay report` on step-by-step work: the tables the individual commands wrote (real
CLI subprocesses), as a folder without run.json, as paths in any order, and as CSV. The
report's numbers are checked against the input files read with pandas (expected values
are pandas means and counts of those files, not the report's code); refusals for missing
and conflicting inputs."""

import json
import os
import shutil

import numpy as np
import pandas as pd
import pytest

from simulplay.core.signature import base_signature
from simulplay.formats.eta import CONTRAST_COLUMNS, ETA_COLUMNS
from simulplay.traces import write_trace
from tests.support.cli import run_cli
from tests.support.report_runs import synthetic_manifest

ETA = [c for c in ETA_COLUMNS if c != "condition"]
TALK = ["delta_ref_s", "delta_s", "eta_s", "duration_part_s", "idle_part_s"]
AFR = ("--a", "A", "--f", "F", "--reference", "immediate", "--draws", "300")

# every test runs `simulplay` subprocesses on a fixture of a dozen more (about 4 min in all)
pytestmark = pytest.mark.slow


def ok(*args):
    return run_cli(*args, check=True)


def trace_for(manifest: pd.DataFrame, path, talks=None):
    """A trace with one stream per (talk, system) of the manifest (four updates each)."""
    keys = manifest[["talk_id", "system", "source_s"]].drop_duplicates(["talk_id", "system"])
    rows = [{"talk_id": t, "system": s, "seq": i, "time_s": float(i), "text": w, "source_s": float(src)}
            for t, s, src in keys.itertuples(index=False) if talks is None or t in talks
            for i, w in enumerate(["Hello there", "world.", "a b c d", "end!"])]
    write_trace(pd.DataFrame(rows), path, base_signature(table="trace"))


@pytest.fixture(scope="module")
def steps(tmp_path_factory):
    """A folder of step-by-step work on a hand-written manifest (no signature, a name of the
    user's choosing): replay (primary and zero service), η with per-talk and contrast tables,
    the zero-service η, the player table and a trace. ``extra/`` holds tables for refusals."""
    root = tmp_path_factory.mktemp("steps")
    d, x = root / "work", root / "extra"
    d.mkdir()
    x.mkdir()
    man = synthetic_manifest(4)
    man.to_csv(d / "my requests.csv", index=False)
    m = d / "my requests.csv"
    ok("replay", m, "--out", d / "summary.parquet")
    ok("replay", m, "--service", "zero", "--out", d / "summary-zero.parquet")
    ok("eta", d / "summary.parquet", *AFR, "--out", d / "eta.parquet", "--per-talk", d / "talks.parquet",
       "--contrast", "punct,timer:w=4")
    ok("eta", d / "summary-zero.parquet", *AFR, "--out", d / "eta zero.parquet")
    ok("player", m, "--out", d / "player.parquet")
    trace_for(man, d / "trace.jsonl")
    # for the refusals
    ok("eta", d / "summary.parquet", *AFR[:-1], "100", "--out", x / "eta100.parquet")
    ok("eta", d / "summary.parquet", "--a", "F", "--f", "A", "--reference", "immediate", "--draws", "300",
       "--out", x / "eta_fa.parquet")
    synthetic_manifest(4, seed=8).to_csv(x / "other requests.csv", index=False)
    ok("replay", x / "other requests.csv", "--out", x / "other summary.parquet")
    trace_for(man, x / "two talks.jsonl", talks={"talk00", "talk01"})
    return d, x


def report_tables(out):
    return {p.stem: pd.read_csv(p, keep_default_na=False, na_values=[""]) for p in (out / "tables").glob("*.csv")}


def assert_same_numbers(got: pd.DataFrame, want: pd.DataFrame, keys, cols):
    """Rows keyed by ``keys``; every column equal to full precision (the report's CSV keeps it)."""
    g = got.astype({k: str for k in keys}).set_index(keys).sort_index()
    w = want.astype({k: str for k in keys}).set_index(keys).sort_index()
    assert list(g.index) == list(w.index)
    for c in cols:
        assert np.array_equal(g[c].to_numpy(float), w[c].to_numpy(float), equal_nan=True), c


def check_against_inputs(out, d, eta="eta.parquet", talks="talks.parquet", contrasts="eta.contrasts.parquet",
                         summary="summary.parquet", read=pd.read_parquet):
    t = report_tables(out)
    assert_same_numbers(t["table02_eta"], read(d / eta), ["condition"], ETA)
    assert_same_numbers(t["table04_per_talk"], read(d / talks), ["talk_id", "condition"], TALK)
    assert_same_numbers(t["table09_contrasts"], read(d / contrasts), ["p1", "p2"],
                        [c for c in CONTRAST_COLUMNS if c not in ("p1", "p2")])
    s = read(d / summary)
    means = s.groupby(["system", "condition"])[["offset_s", "idle_s", "audio_s", "first_play_s"]].mean()
    man = pd.read_csv(d / "my requests.csv")
    per_talk = man.groupby(["system", "condition"]).size() / man["talk_id"].nunique()
    t1 = t["table01_playback"].set_index(["system", "condition"]).sort_index()
    assert list(t1.index) == list(means.index)
    for c in means.columns:
        assert np.allclose(t1[c], means[c], rtol=0, atol=1e-12), c
    assert np.allclose(t1["requests_per_talk"], per_talk.loc[t1.index])
    t12 = t["table12_requests"].set_index(["system", "condition"])
    assert (t12["requests"] == man.groupby(["system", "condition"]).size().loc[t12.index]).all()
    return t


def test_report_on_a_folder_without_run_json(steps, tmp_path):
    d, _ = steps
    res = ok("report", d, "--out", tmp_path / "rep")
    assert "open" in res.stdout
    t = check_against_inputs(tmp_path / "rep", d)
    zero = pd.read_parquet(d / "eta zero.parquet").set_index("condition")["eta_s"]
    t8 = t["table08_rules"].set_index("condition")
    assert np.array_equal(t8["eta_s[service-zero]"].to_numpy(), zero.loc[t8.index].to_numpy())
    assert not np.array_equal(t8["eta_s"].to_numpy(), t8["eta_s[service-zero]"].to_numpy())  # a real variant
    player = pd.read_parquet(d / "player.parquet")
    want = player.groupby(["system", "condition", "prebuffer_s"])[["stall_total_s", "fluidity_index"]].mean()
    got = t["player_metrics"].set_index(["system", "condition", "prebuffer_s"]).sort_index()
    assert list(got.index) == list(want.index) and len(got) == 2 * 3 * 3
    assert np.allclose(got[want.columns], want, rtol=0, atol=1e-12)
    assert (t["table11_traces"]["streams"] == 4).all() and (t["table11_traces"]["updates"] == 16).all()
    # the Inputs table: every file, its kind, its rows (counted here with pandas) and what it was used for
    inputs = t["inputs"].set_index("path")
    files = sorted(p for p in d.iterdir() if p.suffix in (".parquet", ".csv", ".jsonl"))
    assert set(inputs.index) == {p.name for p in files}  # named relative to the folder the report describes
    for p in files:
        rows = len(pd.read_parquet(p)) if p.suffix == ".parquet" else \
            len(pd.read_csv(p)) if p.suffix == ".csv" else 8 * 4  # 8 streams × 4 updates
        assert inputs.loc[p.name, "rows"] == rows, p
    assert inputs.loc["my requests.csv", "kind"] == "request manifest"
    assert inputs.loc["eta zero.parquet", "use"] == "sensitivity replay service-zero: Table 8"
    assert inputs.loc["summary-zero.parquet", "use"].startswith("not used: summary of the service-zero")
    assert inputs.loc["talks.parquet", "use"].startswith("primary")
    assert inputs["signature_fingerprint"].str.fullmatch(r"[0-9a-f]{12}").sum() == len(files) - 1  # the trace has none
    md = (tmp_path / "rep" / "report.md").read_text()
    html = (tmp_path / "rep" / "report.html").read_text().replace("<wbr>", "")  # break opportunities only
    assert f"Step-by-step tables from {d}" in md and "translators A = A and F = F" in md
    section = md[md.index("### Inputs"):md.index("### Table 1.")]
    for p in files:
        assert f"| {p.name} |" in section and p.name in html


def test_report_on_paths_in_any_order_with_a_trace_option(steps, tmp_path):
    d, _ = steps
    paths = [d / "talks.parquet", d / "eta.contrasts.parquet", d / "eta.parquet", d / "summary.parquet",
             d / "my requests.csv"]
    ok("report", *paths, "--trace", d / "trace.jsonl", "--out", tmp_path / "rep")
    t = check_against_inputs(tmp_path / "rep", d)
    assert "player_metrics" not in t and "eta_s[service-zero]" not in t["table08_rules"]
    uses = t["inputs"].set_index("path")["use"]
    assert uses["trace.jsonl"] == "Table 11 (given with --trace)"
    assert list(t["inputs"]["path"][:5]) == [p.name for p in paths]  # listed in the order given
    # no run name: the title comes from the inputs (the translators and the η table)
    assert (tmp_path / "rep" / "report.md").read_text(encoding="utf-8").splitlines()[0] == \
        "# simulplay report: A vs F (eta.parquet)"
    ok("explore", *paths, "--out", tmp_path / "ex")
    assert "<title>simulplay explorer: A vs F (eta.parquet)</title>" in (tmp_path / "ex" / "index.html").read_text()


def test_without_a_per_talk_table_it_is_rebuilt_from_the_summary(steps, tmp_path):
    d, _ = steps
    ok("report", d / "eta.parquet", d / "summary.parquet", d / "my requests.csv", "--out", tmp_path / "rep")
    t = report_tables(tmp_path / "rep")
    assert_same_numbers(t["table04_per_talk"], pd.read_parquet(d / "talks.parquet"), ["talk_id", "condition"], TALK)
    assert "(rebuilt from the summary)" in set(t["inputs"]["path"])
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "Trace statistics (Table 11) are left out" in md and "table09" not in " ".join(t)


def test_roles_come_from_signatures_and_a_csv_only_table_is_refused(steps, tmp_path):
    """A CSV signature is a display string (never parsed): a summary or η table given only as
    CSV is refused in one line naming it and the step to rerun. The translators come from
    the η table's structured signature: swapping --a and --f must show."""
    d, _ = steps
    c = tmp_path / "csv"
    c.mkdir()
    shutil.copy(d / "my requests.csv", c)
    ok("replay", c / "my requests.csv", "--out", c / "summary.csv")
    ok("eta", c / "summary.csv", *AFR[:-1], "50", "--out", c / "eta.csv")
    bad = run_cli("report", c, "--out", tmp_path / "rep")  # no Parquet summary: the first CSV is named
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
    assert f"{c / 'eta.csv'}: no playback summary among the inputs, and this is a CSV that copies no Parquet " \
           "input" in bad.stderr and "rerun the step that wrote it with --out ending in .parquet" in bad.stderr
    shutil.copy(d / "summary.parquet", c)  # the summary as Parquet: now the η table is missing
    bad = run_cli("report", c, "--out", tmp_path / "rep")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
    assert f"{c / 'eta.csv'}: no η table among the inputs, and this is a CSV" in bad.stderr
    bad = run_cli("report", c / "my requests.csv", c / "summary.parquet", c / "eta.csv", "--out", tmp_path / "rep")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr  # named: refused as such
    assert f"{c / 'eta.csv'}: is a CSV that copies no Parquet input" in bad.stderr and ".parquet" in bad.stderr
    swapped = tmp_path / "swapped"
    swapped.mkdir()
    for name in ("my requests.csv", "summary.parquet"):
        shutil.copy(d / name, swapped)
    ok("eta", swapped / "summary.parquet", "--a", "F", "--f", "A", "--reference", "timer:w=4", "--draws", "50",
       "--out", swapped / "gaps.parquet")
    ok("report", swapped, "--out", tmp_path / "rep2")
    md = (tmp_path / "rep2" / "report.md").read_text()
    assert "translators A = F and F = A, reference condition timer:w=4" in md
    t2 = report_tables(tmp_path / "rep2")["table02_eta"]
    assert_same_numbers(t2, pd.read_parquet(swapped / "gaps.parquet"), ["condition"], ETA)


def test_identical_copies_are_one_table(steps, tmp_path):
    d, _ = steps
    ok("eta", d / "summary.parquet", *AFR, "--out", tmp_path / "eta copy.csv")  # same settings, same rows
    ok("report", d, tmp_path / "eta copy.csv", "--out", tmp_path / "rep")
    inputs = report_tables(tmp_path / "rep")["inputs"].set_index("path")
    copy = os.path.relpath(tmp_path / "eta copy.csv", d)  # named relative to the first folder given
    assert inputs.loc[copy, "use"] == f"not used: the same table as {d / 'eta.parquet'}"
    fp = inputs["signature_fingerprint"]
    assert fp[copy] == fp["eta.parquet"]


@pytest.mark.parametrize("pick, extra, fragment", [
    (["my requests.csv", "summary.parquet"], [], "no η table among the inputs (expected a request manifest, the "
                                                 "playback summary of its replay"),
    (["my requests.csv", "eta.parquet"], [], "no playback summary among the inputs"),
    (["summary.parquet", "eta.parquet"], [], "no request manifest among the inputs"),
    (["my requests.csv", "summary.parquet", "eta.parquet"], ["eta100.parquet"], "eta100.parquet: conflicts with"),
    (["my requests.csv", "summary.parquet", "eta.parquet"], ["eta_fa.parquet"],
     "the η tables among the inputs compare different translators or references: A vs F against immediate, and F vs A"),
    (["my requests.csv", "eta.parquet"], ["other summary.parquet"], "replaying it does not reproduce"),
    (["my requests.csv", "summary.parquet", "eta.parquet"], ["other requests.csv"], "conflicts with"),
    (["my requests.csv", "summary.parquet", "eta.parquet"], ["notes.csv"], "notes.csv: is a CSV that copies no "
                                                                          "Parquet input"),
    (["my requests.csv", "summary.parquet", "eta.parquet", "--trace"], ["two talks.jsonl"],
     "two talks.jsonl: holds no stream (talk_id=talk02, system=A) of the manifest"),
])
def test_missing_and_conflicting_inputs_are_refused(steps, tmp_path, pick, extra, fragment):
    d, x = steps
    (x / "notes.csv").write_text("what,when\nlunch,noon\n")
    args = [a if a.startswith("--") else d / a for a in pick] + [x / e for e in extra]
    bad = run_cli("report", *args, "--out", tmp_path / "rep")
    assert bad.returncode == 2, bad.stderr
    assert fragment in bad.stderr and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
    assert not (tmp_path / "rep").exists()


def test_a_run_folder_without_run_json_finds_its_traces_in_the_manifest(tmp_path):
    from simulplay.analysis.bootstrap import Bootstrap
    from simulplay.grouping.rules import Immediate, Timer
    from simulplay.sim.variants import ChunkRelease, Measured, ReplayVariant, RequestRelease, Zero
    from simulplay.workflows.experiment import Experiment
    from simulplay.workflows.pipeline import run_experiment
    from tests.support.factories import small_trace
    from tests.support.fakes import FakeSettings

    small_trace(tmp_path / "trace.jsonl", n_streams=4, n_updates=6)
    exp = Experiment(name="tiny", traces=(tmp_path / "trace.jsonl",), a="A", f="F", rules=(Immediate(), Timer(w=3)),
                     reference="immediate", backends=(FakeSettings(),), out=tmp_path / "run", store=tmp_path / "store",
                     bootstrap=Bootstrap(draws=100), contrasts=(("timer:w=3", "immediate"),),
                     variants=(ReplayVariant(RequestRelease(), Zero()), ReplayVariant(ChunkRelease(), Measured())))
    run_experiment(exp)
    with_record = report_tables(tmp_path / "run" / "report")
    meta = json.loads(__import__("pyarrow.parquet", fromlist=["x"]).read_schema(
        tmp_path / "run" / "manifest.parquet").metadata[b"simulplay"])
    assert meta["traces"][0]["path"] == str((tmp_path / "trace.jsonl").resolve())
    shutil.rmtree(tmp_path / "run" / "report")
    (tmp_path / "run" / "run.json").unlink()
    ok("report", tmp_path / "run", "--out", tmp_path / "rep", "--store", tmp_path / "store")  # for Listen
    t = report_tables(tmp_path / "rep")
    # read as step-by-step tables: the contrasts, written only as CSV, record no kind, so Table 9 is left out
    assert set(t) == set(with_record) - {"table09_contrasts"}
    for key in set(t) - {"table00_run", "inputs"}:  # the same tables as the report made with run.json
        pd.testing.assert_frame_equal(t[key], with_record[key], check_exact=True, check_like=True, obj=key)
    assert list(t["table11_traces"]["updates"]) == [12, 12]  # 2 talks × 6 updates per system
    uses = t["inputs"].set_index("path")["use"]
    assert uses["../trace.jsonl"] == "Table 11 (recorded in the manifest)"  # relative to the run folder
    assert uses["eta.service-zero.parquet"] == "sensitivity replay service-zero: Table 8"
    run = tmp_path / "run"
    assert uses["summary.csv"] == f"not used: the same table as {run / 'summary.parquet'}"
    assert uses["contrasts.csv"].startswith("not used: a CSV that copies no Parquet input")
    assert uses["(rebuilt from the summary)"].startswith("rebuilt from the primary summary")  # its CSV: the same
    with open(tmp_path / "trace.jsonl", "a") as fh:  # the trace changes after synthesis: left out, said so
        fh.write("\n")
    ok("report", tmp_path / "run", "--out", tmp_path / "rep")
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "changed since synthesis" in md and "table11_traces" not in report_tables(tmp_path / "rep")


def test_step_by_step_synthesis_with_piper(tmp_path):
    """The synth path: real Piper on a small trace, then replay and η, reported from the folder."""
    from tests.support.factories import small_trace

    d = tmp_path / "work"
    d.mkdir()
    small_trace(d / "talks.jsonl", n_streams=4, n_updates=5)
    ok("synth", d / "talks.jsonl", "--rule", "immediate", "--rule", "timer:w=3", "--backend",
       "piper:intra_op_threads=1", "--store", tmp_path / "store", "--out", d / "tts.parquet", "--quiet")
    ok("replay", d / "tts.parquet", "--out", d / "playback.parquet")
    ok("eta", d / "playback.parquet", "--a", "A", "--f", "F", "--reference", "immediate", "--draws", "200",
       "--out", d / "gaps.parquet")
    ok("report", d, "--out", tmp_path / "rep")
    t = report_tables(tmp_path / "rep")
    man = pd.read_parquet(d / "tts.parquet")
    assert_same_numbers(t["table02_eta"], pd.read_parquet(d / "gaps.parquet"), ["condition"], ETA)
    t12 = t["table12_requests"].set_index(["system", "condition"])
    assert (t12["requests"] == man.groupby(["system", "condition"]).size().loc[t12.index]).all()
    s = pd.read_parquet(d / "playback.parquet")
    t1 = t["table01_playback"].set_index(["system", "condition"])
    want = s.groupby(["system", "condition"])["offset_s"].mean().loc[t1.index]
    assert np.allclose(t1["offset_s"], want, rtol=0, atol=1e-12)
    assert list(t["table11_traces"]["updates"]) == [10, 10]
    uses = t["inputs"].set_index("path")["use"]
    assert uses["tts.chunks.parquet"] == "not used: chunks"  # a kind the report does not read: as its metadata says
    assert uses["tts.parquet"].startswith("request manifest")
    assert "backend:piper" in " ".join(t["table02_eta"]["signature"])


def test_a_run_folder_report_lists_its_inputs_and_takes_a_trace_option(tmp_path):
    from simulplay.report import build_report
    from tests.support.report_runs import make_run

    run = make_run(tmp_path / "run", 3, draws=100)
    rep = build_report(run)
    rows = rep.table("inputs").frame.set_index("path")
    names = ["run.json", "manifest.parquet", "summary.parquet", "eta.parquet", "eta_per_talk.csv", "contrasts.csv",
             "eta.service-zero.parquet", "trace.jsonl"]
    assert list(rows.index) == names  # run.json names the trace by its absolute path; the report relative to the run
    for n in names[1:4]:
        assert rows.loc[n, "rows"] == len(pd.read_parquet(run / n)), n
    assert rows.loc["trace.jsonl", "use"] == "Table 11 (named in run.json)"
    # the run record names each file's role, in the words the step-by-step inputs get
    assert rows.loc["eta.service-zero.parquet", "use"] == "sensitivity replay service-zero: Table 8"
    assert rows.loc["contrasts.csv", "use"] == "primary: Table 9"
    other = tmp_path / "other.jsonl"
    trace_for(pd.read_parquet(run / "manifest.parquet"), other)
    rep = build_report(run, traces=[other])
    rows = rep.table("inputs").frame.set_index("path")
    assert rows.loc["../other.jsonl", "use"] == "Table 11 (given with --trace)" and "trace.jsonl" not in rows.index
    assert rep.table("table11_traces").frame["streams"].tolist() == [3, 3]


def test_edge_and_content_tables_are_recognised_under_any_name(steps, tmp_path):
    """Kinds from Parquet metadata, whatever the file names; a CSV records no kind: one named
    on the command line that copies no Parquet input is refused in one line."""
    from simulplay.core.tables import write_table

    d, _ = steps
    eta = pd.read_parquet(d / "eta.parquet").drop(columns="signature")
    edges = pd.concat([eta.assign(threshold=t) for t in (0.3, 0.5)], ignore_index=True)
    sig = base_signature(table="eta-edges", trim="edges:guard=100ms")
    write_table(edges, tmp_path / "vad sweep.parquet", [{**sig, "threshold": t} for t in edges["threshold"]],
                kind="eta-edges")
    share = pd.DataFrame({"system": "A", "reference": "immediate", "condition": "timer:w=4", "threshold": [0.3, 0.5],
                          "n_talks": 4, "reduction_s": 2.0, "nonspeech_s": [0.8, 0.9], "speech_s": [1.2, 1.1],
                          "share_pct": [40.0, 45.0], "edge_s": 0.5})
    write_table(share, tmp_path / "share.parquet", base_signature(table="edges-nonspeech"), kind="edges-nonspeech")
    share.to_csv(tmp_path / "share.csv", index=False)  # by hand: no kind recorded
    pairs = pd.DataFrame({"system": ["A", "F"], "normalization": "punct", "from_condition": "immediate",
                          "to_condition": "timer:w=4", "n_talks": 4, "deletion_mismatches_from": [10, 4],
                          "deletion_mismatches_to": [14, 3]})
    write_table(pairs, tmp_path / "asr pairs.parquet", base_signature(table="content-pairs"), kind="content-pairs")
    bad = run_cli("report", d, tmp_path / "vad sweep.parquet", tmp_path / "share.csv", "--out", tmp_path / "rep")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
    assert f"{tmp_path / 'share.csv'}: is a CSV that copies no Parquet input" in bad.stderr
    ok("report", d, tmp_path / "vad sweep.parquet", tmp_path / "share.parquet", tmp_path / "asr pairs.parquet",
       "--out", tmp_path / "rep")
    t = report_tables(tmp_path / "rep")
    assert_same_numbers(t["table10_edges"], edges, ["threshold", "condition"], ETA)
    assert t["table16_nonspeech"]["share_pct"].tolist() == [40.0, 45.0]
    assert t["table16_nonspeech"]["signature"].str.startswith("table:edges-nonspeech").all()
    assert t["table13_content_change"]["deletion_mismatches_to"].tolist() == [14, 3]
    kinds = t["inputs"].set_index("path")["kind"]
    rel = lambda p: os.path.relpath(p, d)  # noqa: E731 - names relative to the first folder given
    assert kinds[rel(tmp_path / "vad sweep.parquet")] == "edge-silence η table"
    assert kinds[rel(tmp_path / "share.parquet")] == "non-speech share table"
    assert kinds[rel(tmp_path / "asr pairs.parquet")] == "content pair table"


def test_an_eta_table_whose_signature_names_no_translators_is_refused_with_the_step_to_rerun(steps, tmp_path):
    """An η table written before signatures named A, F and the reference (its rows' signatures
    lack them): one line naming the file and the step to rerun."""
    from simulplay.core.errors import InputError
    from simulplay.core.tables import read_table, stored_signatures, write_table
    from simulplay.report.read_run import load_tables

    d, _ = steps
    df, meta = read_table(d / "eta.parquet")
    old = [{k: v for k, v in s.items() if k not in ("a", "f", "reference")}
           for s in stored_signatures(meta, len(df))]
    write_table(df.drop(columns="signature"), tmp_path / "old eta.parquet", old, kind="eta", signature_column=True)
    with pytest.raises(InputError) as e:
        load_tables([d / "my requests.csv", d / "summary.parquet", tmp_path / "old eta.parquet"])
    assert str(tmp_path / "old eta.parquet") in str(e.value) and "rerun `simulplay eta`" in str(e.value)
    assert "\n" not in str(e.value)
