"""The explorer's data, without a browser: what the page is given equals the replay's
parts table and the run's η tables, the folder it writes stays inside its target, and
bad input is refused as `simulplay report` refuses it (one line, exit 2)."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from simulplay.analysis import Bootstrap, compute_eta
from simulplay.core.errors import InputError
from simulplay.core.tables import read_table, write_table
from simulplay.manifest import read_manifest
from simulplay.report import build_report, write_report
from simulplay.report.build import load_inputs
from simulplay.report.explore import Computed, build_explorer, explore_run, explorer_files, write_explorer
from simulplay.report.explore.variants import manifest_signature
from simulplay.sim import replay
from simulplay.sim.variants import parse_service
from tests.support.checks import assert_one_line_error
from tests.support.report_runs import make_run


def received(data: bytes) -> tuple[str, str, dict]:
    """(kind, id, data) of a data file: one ``simulplayExplorer.receive(kind, id, {...});``."""
    m = re.fullmatch(rb'simulplayExplorer\.receive\(("[^"]*"),("(?:[^"\\]|\\.)*"),(.*)\);\n', data, re.S)
    assert m, data[:200]
    return json.loads(m[1]), json.loads(m[2]), json.loads(m[3])


def lane_parts(talk: dict, variant: str, o: int) -> pd.DataFrame:
    """One output's parts as the page computes them (the replay's recurrences on the
    data file's integers: start = max(dispatch, previous ready), ready = start + service,
    play = max(ready, previous end), end = play + dur), times ns / 10⁹."""
    req, v = talk["requests"][o], talk["variants"][variant]
    out = v["outputs"][o]
    p = out["parts"]
    starts, readies, prev = [], [], None
    for i, d in enumerate(req["dispatch"]):
        start = (d or 0) if prev is None else max(d or 0, prev)
        ready = out["ready"][i] if "ready" in out else start + out["service"][i]
        starts.append(ready - out["service"][i])
        readies.append(prev := ready)
    if "count" in p:
        owner = [i for i, c in enumerate(p["count"]) for _ in range(c)]
        rows = [(i, starts[i] + off) for i, off in zip(owner, p["off"])]
    else:
        rows = list(enumerate(p.get("ready", readies)))
    seq, ready, play, end, dur, last = [], [], [], [], [], 0
    for j, (i, r) in enumerate(rows):
        d = p["dur"][j] if "dur" in p else req["dur"][i]
        x = p["play"][j] if "play" in p else (max(r, last) if d > 0 or v["silent"] == "hold" else None)
        if x is not None:
            last = x + d
        seq.append(req["seq"][i])
        ready.append(r / 1e9)
        play.append(np.nan if x is None else x / 1e9)
        end.append(np.nan if x is None else (x + d) / 1e9)
        dur.append(d / 1e9)
    return pd.DataFrame({"seq": seq, "ready_s": ready, "play_s": play, "end_s": end, "audio_s": dur})


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    return make_run(tmp_path_factory.mktemp("explore") / "run", 4, realizations=2)


@pytest.fixture(scope="module")
def files(run_dir):
    return explorer_files(build_explorer(run_dir))


def test_the_folder_holds_the_page_its_scripts_and_one_data_file_per_talk(files):
    assert {"index.html", "explore.css", "data/panel.js", "js/explore-main.js"} <= set(files)
    assert sorted(n for n in files if n.startswith("data/talks/")) == [f"data/talks/talk0{i}.js" for i in range(4)]
    kind, _, panel = received(files["data/panel.js"])
    assert kind == "panel" and [t["id"] for t in panel["talks"]] == [f"talk0{i}" for i in range(4)]
    assert [v["key"] for v in panel["variants"]] == ["primary", "service-zero"]
    assert panel["audio_note"].startswith("Audio is absent: the manifest has no stored audio")
    assert "http" not in files["index.html"].decode()  # nothing but the folder's own files


def test_the_page_opens_with_the_result_the_report_opens_with(run_dir, files):
    """The header's first paragraph is the one-sentence reading of the η table: here the first
    panel's η per condition and direction counts, read from the run's eta.csv."""
    page = files["index.html"].decode()
    result = page[page.index('<p class="result"><strong>') + 26:page.index("</strong></p>")]
    eta = pd.read_csv(run_dir / "eta.csv")
    first = eta[eta["realization"] == eta["realization"].iloc[0]]
    assert len(first) < len(eta) and "Table 2 has every panel" in result
    for row in first.itertuples():
        want = f"{row.eta_s:+.3f} s under {row.condition} (η &gt; 0 in {row.n_positive} of {row.n_talks} talks"
        assert want in result
    assert page.index('<p class="result">') < page.index('id="intro"')


@pytest.mark.parametrize("service,variant", [("measured", "primary"), ("zero", "service-zero")])
def test_every_lane_holds_the_replays_parts_to_the_nanosecond(run_dir, files, service, variant):
    man, _ = read_manifest(run_dir / "manifest.parquet")
    parts = replay(man, service=parse_service(service)).parts
    talk_files = [n for n in files if n.startswith("data/talks/")]
    assert len(talk_files) == 4  # the run has 4 talks: the loops below must see them all
    lanes = 0
    for name in talk_files:
        _, talk_id, talk = received(files[name])
        for o, output in enumerate(talk["outputs"]):
            want = parts[(parts["talk_id"] == talk_id) & (parts["system"] == output["system"])
                         & (parts["condition"] == output["condition"])
                         & (parts["realization"].astype(str) == output["realization"])].reset_index(drop=True)
            assert len(want) > 0, (talk_id, output)
            lanes += 1
            got = lane_parts(talk, variant, o)
            assert got["seq"].tolist() == want["seq"].tolist()
            for col in ("ready_s", "play_s", "end_s", "audio_s"):  # the same floats, not only close ones
                assert np.array_equal(got[col].to_numpy(), want[col].to_numpy(float), equal_nan=True), col
    assert lanes == man.groupby(["talk_id", "system", "condition", "realization"]).ngroups  # every output a lane


def test_a_clocked_run_travels_without_its_times_written_out(files):
    _, _, talk = received(files["data/talks/talk00.js"])
    assert list(talk["variants"]) == ["primary", "service-zero"] and talk["variants"]["primary"]["outputs"]
    for variant in talk["variants"].values():
        assert all("ready" not in out and "play" not in out["parts"] for out in variant["outputs"])


def test_readiness_a_manifest_records_is_written_out_as_the_replay_keeps_it(tmp_path):
    run = make_run(tmp_path / "run", 3, services=())
    table = pq.read_table(run / "manifest.parquet")
    man = table.to_pandas()
    mine = ((man["talk_id"] == "talk00") & (man["system"] == "A") & (man["condition"] == "immediate")).to_numpy()
    ready = np.where(mine, man["dispatch_s"] + 5.0, np.nan)  # recorded, later than any clock
    pq.write_table(table.append_column("ready_s", pa.array(ready)), run / "manifest.parquet")
    rep = replay(read_manifest(run / "manifest.parquet")[0])
    write_table(rep.summary, run / "summary.parquet", rep.signatures, kind="playback-summary")
    eta = compute_eta(rep.summary, a="A", f="F", reference="immediate", boot=Bootstrap(draws=50, seed=3))
    write_table(eta.table, run / "eta.parquet", eta.table_signatures, kind="eta")
    write_table(eta.per_talk, run / "eta_per_talk.csv", eta.per_talk_signatures, kind="eta-per-talk")
    _, _, talk = received(explorer_files(build_explorer(run))["data/talks/talk00.js"])
    o = next(i for i, x in enumerate(talk["outputs"]) if (x["system"], x["condition"]) == ("A", "immediate"))
    assert "ready" in talk["variants"]["primary"]["outputs"][o]
    want = rep.parts[(rep.parts["talk_id"] == "talk00") & (rep.parts["system"] == "A")
                     & (rep.parts["condition"] == "immediate")]
    got = lane_parts(talk, "primary", o)
    for col in ("ready_s", "play_s", "end_s"):
        assert np.array_equal(got[col].to_numpy(), want[col].to_numpy(float), equal_nan=True), col


def test_the_grid_holds_the_runs_per_talk_eta_and_each_variants_own(run_dir, files):
    _, _, panel = received(files["data/panel.js"])
    primary, zero = panel["variants"]
    rows = {(r[0], r[1], r[2]): r[3] for r in primary["per_talk"]["rows"]}  # (panel, talk, condition) → η
    saved = pd.read_csv(run_dir / "eta_per_talk.csv", dtype={"realization": str})
    index = {tuple(p.values()): i for i, p in enumerate(panel["panels"])}
    for r in saved.to_dict("records"):
        key = (index[(r["backend"], str(r["realization"]))], r["talk_id"], r["condition"])
        assert rows[key] == pytest.approx(r["eta_s"], abs=1e-12)  # CSV keeps full precision
    summary, _ = read_table(run_dir / "summary.service-zero.parquet")
    eta = compute_eta(summary, a="A", f="F", reference="immediate", boot=Bootstrap(draws=1, seed=0))
    assert sorted(r[3] for r in zero["per_talk"]["rows"]) == pytest.approx(sorted(eta.per_talk["eta_s"]), abs=1e-12)
    assert all(line.startswith("table:eta") for line in zero["eta_lines"])  # every view carries its signature


def test_talk_ids_from_data_name_no_file_outside_the_folder(tmp_path):
    names = ["../../escape", "<script>window.__pwned=1</script>", "/abs/path"]
    run = make_run(tmp_path / "run", 3, names=names, services=())
    out = tmp_path / "run" / "explore"
    written = write_explorer(build_explorer(run), out)
    assert all(out.resolve() in p.resolve().parents for p in written)
    assert sorted(p.name for p in (out / "data" / "talks").iterdir()) == sorted(
        ["%2E.%2F..%2Fescape.js", "%3Cscript%3Ewindow.__pwned%3D1%3C%2Fscript%3E.js", "%2Fabs%2Fpath.js"])
    assert not (tmp_path / "escape.js").exists()
    assert "<script>window" not in (out / "index.html").read_text()


def test_writing_again_replaces_an_explorer_but_never_another_folder(run_dir, tmp_path):
    ex = build_explorer(run_dir)
    out = tmp_path / "x"
    write_explorer(ex, out)
    (out / "stale.js").write_text("old")
    write_explorer(ex, out)
    assert not (out / "stale.js").exists() and (out / "index.html").is_file()
    other = tmp_path / "notes"
    other.mkdir()
    (other / "mine.txt").write_text("keep")
    with pytest.raises(InputError, match="holds something other than an explorer"):
        write_explorer(ex, other)
    assert (other / "mine.txt").read_text() == "keep"


@pytest.mark.slow


def test_the_report_links_to_an_explorer_beside_it(run_dir, tmp_path):
    rep = build_report(run_dir, listen_s=0)
    write_report(rep, tmp_path / "report")
    assert "explore/index.html" not in (tmp_path / "report" / "report.html").read_text()
    write_explorer(build_explorer(run_dir), tmp_path / "explore")
    write_report(rep, tmp_path / "report")
    html = (tmp_path / "report" / "report.html").read_text()
    assert '<a href="../explore/index.html">' in html
    assert "(../explore/index.html)" in (tmp_path / "report" / "report.md").read_text()


@pytest.mark.slow


def test_the_command_writes_the_folder_beside_the_run(cli, run_dir):
    proc = cli("explore", run_dir, check=True)
    assert f"to {run_dir / 'explore'}" in proc.stdout and "audio absent" in proc.stdout
    assert (run_dir / "explore" / "index.html").is_file()


@pytest.mark.slow


def test_step_by_step_tables_work_and_need_out(cli, run_dir, tmp_path):
    tables = [run_dir / n for n in ("manifest.parquet", "summary.parquet", "eta.parquet")]
    assert_one_line_error(cli("explore", *tables), "--out is needed for step-by-step tables")
    cli("explore", *tables, "--out", tmp_path / "x", check=True)
    _, _, panel = received((tmp_path / "x" / "data" / "panel.js").read_bytes())
    assert [v["key"] for v in panel["variants"]] == ["primary"]


@pytest.mark.parametrize("missing", ["summary.parquet", "manifest.parquet", "eta_per_talk.csv"])
def test_a_run_folder_without_a_table_it_needs_is_refused(run_dir, tmp_path, missing):
    broken = tmp_path / "broken"
    broken.mkdir()
    for f in run_dir.iterdir():
        if f.is_file() and f.name != missing:
            (broken / f.name).write_bytes(f.read_bytes())
    with pytest.raises(InputError, match=re.escape(str(broken / missing))):
        build_explorer(broken)


def test_the_command_refuses_in_one_line_and_writes_nothing(cli, run_dir, tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "run.json").write_bytes((run_dir / "run.json").read_bytes())
    assert_one_line_error(cli("explore", broken), "manifest.parquet", "no such file")
    assert not (broken / "explore").exists()


@pytest.mark.slow


def test_a_store_given_that_is_no_store_is_refused(cli, run_dir, tmp_path):
    assert_one_line_error(cli("explore", run_dir, "--store", tmp_path / "nowhere", "--out", tmp_path / "x"),
                          "is not an audio store")
    assert not (tmp_path / "x").exists()


def test_markup_in_a_talk_id_reaches_the_page_only_as_json_text(tmp_path):
    run = make_run(tmp_path / "run", 2, names=["</script><b>t</b>", "t\u2028x"], services=())
    files = explorer_files(build_explorer(run))
    text = files["data/panel.js"].decode("ascii")  # ASCII only: U+2028 and friends escaped
    _, _, panel = received(files["data/panel.js"])
    assert [t["id"] for t in panel["talks"]] == ["</script><b>t</b>", "t\u2028x"]
    assert "\\u2028" in text and "\u2028" not in text


def test_the_runs_own_replays_give_the_same_files_as_replaying_again(tmp_path):
    """`simulplay run` hands its replays over (nothing is replayed or refitted again): the
    explorer is byte for byte the one `simulplay explore` makes from the folder."""
    run = make_run(tmp_path / "run", 3, services=("zero", "fit"))
    loaded = load_inputs(run)
    man = read_manifest(run / "manifest.parquet")[0]
    replays = {f"service-{s}": replay(man, service=parse_service(s), upstream=manifest_signature(loaded))
               for s in ("zero", "fit")}
    given = explorer_files(explore_run(loaded, computed=Computed(replays)))
    again = explorer_files(build_explorer(run))
    assert given.keys() == again.keys() and all(given[k] == again[k] for k in given)
