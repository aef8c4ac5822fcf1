"""The real command line: outputs, signatures, one-line errors, exit code 2, nothing half-written."""

import json

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from tests.support.checks import assert_one_line_error
from tests.support.factories import manifest, reference_clock, reference_playback, trace_frame


def toy_manifest(rng, n_talks=4):
    outs = {}
    for t in range(n_talks):
        for s in ("A", "F"):
            for c, w in (("immediate", 0), ("timer:w=4", 4)):
                d = np.sort(rng.uniform(0, 60, 15))
                d = np.unique(np.ceil(d / w) * w) if w else d
                outs[(f"t{t}", s, c)] = [(x, rng.uniform(0.1, 1), rng.uniform(0.5, 3)) for x in d]
    return manifest(outs, source_s=60.0)


@pytest.fixture
def man_csv(tmp_path):
    p = tmp_path / "manifest.csv"
    toy_manifest(np.random.default_rng(0)).to_csv(p, index=False)
    return p


def test_replay_then_eta_writes_signed_tables_in_every_format(cli, tmp_path, man_csv):
    summary = tmp_path / "summary.parquet"
    cli("replay", man_csv, "--out", summary, "--parts", tmp_path / "parts.csv", check=True)
    s = pd.read_parquet(summary)
    assert list(s.columns) == ["talk_id", "system", "condition", "n_parts", "first_play_s", "audio_s",
                               "idle_s", "end_s", "offset_s", "source_s", "limiting_seq"]
    meta = json.loads(pq.read_schema(summary).metadata[b"simulplay"])
    assert meta["signatures"][0]["release"] == "request" and meta["signatures"][0]["service"] == "measured"
    assert "signature" in pd.read_csv(tmp_path / "parts.csv").columns

    proc = cli("eta", summary, "--a", "A", "--f", "F", "--reference", "immediate", "--draws", "300",
               "--out", tmp_path / "eta.csv", "--per-talk", tmp_path / "talks.md", check=True)
    eta = pd.read_csv(tmp_path / "eta.csv")
    assert list(eta.columns) == ["condition", "n_talks", "delta_ref_s", "delta_s", "eta_s", "ci_low_s",
                                 "ci_high_s", "n_negative", "n_zero", "n_positive", "duration_part_s",
                                 "idle_part_s", "signature"]
    assert "draws:300" in eta["signature"][0] and "rule:timer:w=4" in eta["signature"][0]
    assert "signature: " in proc.stdout and "draws:300" in proc.stdout
    md = (tmp_path / "talks.md").read_text()
    assert md.count("\n| t") == 4 and "Signature: `table:eta" in md


@pytest.mark.slow


def test_replay_service_variants_change_readiness(cli, tmp_path, man_csv):
    """Each variant's end times equal the docs/concepts.md#serial-playback recurrences run in the test on the
    manifest's dispatch times with service × 0, × 1 and × 2."""
    m = pd.read_csv(man_csv)
    ends = {}
    for service, factor in (("measured", 1.0), ("zero", 0.0), ("scale=2", 2.0)):
        out = tmp_path / f"{service}.csv"
        cli("replay", man_csv, "--service", service, "--out", out, check=True)
        got = pd.read_csv(out).set_index(["talk_id", "system", "condition"])
        assert (got["signature"].str.contains(f"service:{service}")).all()
        for key, reqs in m.groupby(["talk_id", "system", "condition"]):
            reqs = reqs.sort_values("seq")
            ready = reference_clock(reqs["dispatch_s"].tolist(), (factor * reqs["service_s"]).tolist())
            want = reference_playback(ready, reqs["audio_s"].tolist())["end"]
            assert got.loc[key, "end_s"] == pytest.approx(want, abs=1e-6), (service, key)
        ends[service] = got["end_s"]
    assert (ends["zero"] < ends["measured"]).all() and (ends["measured"] < ends["scale=2"]).all()


def test_group_writes_requests(cli, tmp_path):
    p = tmp_path / "trace.csv"
    trace_frame(n_streams=2, n_updates=6).to_csv(p, index=False)
    out = tmp_path / "req.parquet"
    cli("group", p, "--rule", "timer:w=2", "--rule", "immediate", "--max-chars", "6", "--out", out, check=True)
    req = pd.read_parquet(out)
    assert set(req["condition"]) == {"timer:w=2", "immediate"}
    assert (req["text"].str.len() <= 6).all()
    assert {"talk_id", "system", "condition", "seq", "dispatch_s", "trigger", "n_updates", "text"} <= set(req)


def test_validate_prints_stats(cli, tmp_path):
    p = tmp_path / "trace.jsonl"
    p.write_text(json.dumps({"talk_id": "t", "system": "A", "source_s": 1.0,
                             "updates": [{"time_s": 0.5, "text": "Hello there."}, {"time_s": 2, "text": "late"}]}))
    proc = cli("validate", p, check=True)
    assert "1 stream(s) valid" in proc.stdout and "signature:" in proc.stdout


@pytest.mark.parametrize("args,fragments", [
    (["replay", "{m}", "--out", "{o}/s.csv", "--bogus"], ["No such option: --bogus"]),
    (["replay", "{m}", "--out", "{o}/s.csv", "--service", "fast"], ["--service 'fast'",
                                                                   "measured, zero, scale=F with F ≥ 0, fit (a "
                                                                   "modelled clock) or servers=K"]),
    (["replay", "{m}", "--out", "{o}/s.xlsx"], ["unknown file format '.xlsx'"]),
    (["replay", "{o}/none.csv", "--out", "{o}/s.csv"], ["none.csv", "no such file"]),
    (["replay", "{m}", "--out", "{o}/s.csv", "--release", "word"], ["--release 'word'", "request or chunk"]),
    (["group", "{t}", "--rule", "timer:w=x", "--out", "{o}/s.csv"], ["'w=x' is not a float"]),
    (["eta", "{m}", "--a", "A", "--f", "F", "--reference", "immediate", "--out", "{o}/s.csv"],
     ["missing column", "playback summary"]),
    (["eta", "{o}/x.csv", "--a", "A", "--f", "F", "--reference", "immediate", "--out", "{o}/e.csv",
      "--quantile-method", "weird"], ["unknown quantile method 'weird'"]),
    (["group", "{t}", "--rule", "timer:w=inf", "--out", "{o}/s.csv"], ["w must be a finite number of seconds"]),
    (["group", "{t}", "--rule", "punct", "--rule", "punct:cap=2", "--out", "{o}/s.csv"],
     ["--rule 'punct:cap=2,min_words=3'", "is given twice"]),
    (["eta", "{m}", "--a", "A", "--f", "F", "--reference", "immediate", "--out", "{o}/e.csv", "--seed", "-1"],
     ["--seed"]),
    (["replay", "{m}", "--out", "{o}/s.csv", "--parts", "{o}/s.csv"], ["is given to both --out and --parts"]),
    (["group", "{t}", "--rule", "immediate", "--out", "{t}"], ["--out would overwrite an input file"]),
])
def test_bad_flags_and_inputs_get_one_line_and_write_nothing(cli, tmp_path, man_csv, args, fragments):
    (tmp_path / "t.csv").write_text(trace_frame(1, 3).to_csv(index=False))
    (tmp_path / "x.csv").write_text("x\n1\n")
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    filled = [a.format(m=man_csv, o=out_dir, t=tmp_path / "t.csv") for a in args]
    proc = cli(*filled)
    assert_one_line_error(proc, *fragments)
    assert list(out_dir.iterdir()) == []


def test_bad_manifest_rows_are_all_reported_with_row_and_field(cli, tmp_path):
    df = toy_manifest(np.random.default_rng(1), n_talks=1)
    df.loc[3, "audio_s"] = -1
    df["service_s"] = df["service_s"].astype(object)
    df.loc[5, "service_s"] = "slow"
    p = tmp_path / "m.csv"
    df.to_csv(p, index=False)
    proc = cli("replay", p, "--out", tmp_path / "s.csv")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert any("row 6, field 'service_s': 'slow' is not a number" in x for x in lines)
    assert any("row 4, field 'audio_s': -1 is negative" in x for x in lines)
    assert not (tmp_path / "s.csv").exists()


@pytest.mark.slow


def test_failed_requests_fail_closed_unless_allowed(cli, tmp_path):
    df = toy_manifest(np.random.default_rng(2))
    df["error"] = ""
    df.loc[(df["talk_id"] == "t1") & (df["system"] == "F") & (df["condition"] == "timer:w=4"), "error"] = ""
    bad = df.index[(df["talk_id"] == "t1") & (df["system"] == "F") & (df["condition"] == "timer:w=4")][2]
    df.loc[bad, "error"] = "RuntimeError: voice crashed"
    df.loc[bad, "audio_s"] = np.nan
    p = tmp_path / "m.csv"
    df.to_csv(p, index=False)
    proc = cli("replay", p, "--out", tmp_path / "s.csv")
    assert_one_line_error(proc, "1 incomplete output(s)", "talk_id=t1, system=F, condition=timer:w=4",
                          "--allow-incomplete")
    cli("replay", p, "--out", tmp_path / "s.csv", "--allow-incomplete", check=True)
    s = pd.read_csv(tmp_path / "s.csv")
    assert len(s) == 15 and "excluded:1" in s["signature"][0]
    proc = cli("eta", tmp_path / "s.csv", "--a", "A", "--f", "F", "--reference", "immediate",
               "--out", tmp_path / "e.csv", "--draws", "50")
    assert_one_line_error(proc, "missing", "talk_id=t1, system=F, condition=timer:w=4")
    cli("eta", tmp_path / "s.csv", "--a", "A", "--f", "F", "--reference", "immediate", "--draws", "50",
        "--out", tmp_path / "e.csv", "--allow-incomplete", check=True)
    e = pd.read_csv(tmp_path / "e.csv")
    assert e["n_talks"][0] == 3 and "excluded:1" in e["signature"][0]


@pytest.mark.slow


def test_contrast_of_rules_whose_canonical_names_hold_commas(cli, tmp_path, man_csv):
    df = toy_manifest(np.random.default_rng(3))
    extra = df[df["condition"] == "timer:w=4"].assign(condition="punct:cap=2,min_words=3")
    pd.concat([df, extra]).to_csv(tmp_path / "m.csv", index=False)
    cli("replay", tmp_path / "m.csv", "--out", tmp_path / "s.parquet", check=True)
    cli("eta", tmp_path / "s.parquet", "--a", "A", "--f", "F", "--reference", "immediate", "--draws", "50",
        "--contrast", "punct:cap=2,min_words=3,timer:w=4", "--out", tmp_path / "e.csv", check=True)
    c = pd.read_csv(tmp_path / "e.contrasts.csv")
    assert (c["p1"][0], c["p2"][0]) == ("punct:cap=2,min_words=3", "timer:w=4")


def test_text_that_is_not_a_string_or_only_whitespace_is_refused(cli, tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text(json.dumps({"talk_id": "t", "system": "A", "source_s": 3,
                             "updates": [{"time_s": 0, "text": {"a": [1, 2]}}, {"time_s": 1, "text": "   "}]}))
    proc = cli("validate", p)
    assert proc.returncode == 2
    assert "field 'text': is a dict, not text" in proc.stderr and "field 'text': is only whitespace" in proc.stderr


def help_text(cli, *command):
    """A command's --help as one line: box borders and line wrapping removed."""
    out = cli(*command, "--help", env={"COLUMNS": "100"}, check=True).stdout
    return " ".join(out.replace("│", " ").split())


@pytest.mark.parametrize("command,phrases", [
    ((), ["Times are seconds from source start."]),
    (("replay",), ["Columns ending in _s are seconds; first_play_s and end_s count from source start",
                   "offset_s (L = C_m − S)", "scale=F (service time × F)"]),
    (("eta",), ["columns ending in _s are seconds"]),
    (("group",), ["timer[:w=SECONDS]", "dispatch_s (seconds from source start)"]),
    (("render",), ["floor(p × rate + 1/2), p in seconds", "sample_rate (Hz)",
                   "Seconds from sample counts, counted from source start"]),
    (("report",), ["the first --listen-s seconds from source start"]),
])
def test_help_explains_units(cli, command, phrases):
    text = help_text(cli, *command)
    for phrase in phrases:
        assert phrase in text, f"{' '.join(command) or 'simulplay'} --help lacks {phrase!r}: {text}"
