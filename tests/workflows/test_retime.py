"""`simulplay retime`: the stored audio kept, new clocks, the comparison."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from simulplay.manifest import chunk_path
from tests.support.checks import assert_one_line_error
from tests.support.factories import small_trace

KEYS = ["talk_id", "system", "condition", "backend", "realization", "seq"]
# the first test compares two runs' clocks: the whole module (one shared fixture) runs with the machine to itself
pytestmark = pytest.mark.alone


def meta(path):
    return json.loads(pq.read_schema(path).metadata[b"simulplay"])


@pytest.fixture(scope="module")
def synthesized(piper_runs, tmp_path_factory):
    """The session's real-Piper run of two streams of :func:`small_trace` (immediate and
    timer:w=3), re-timed whole into a folder of this module: (folder, run, the command's output)."""
    from simulplay.traces import read_trace, streams_from_frame
    from tests.support.cli import run_cli as cli

    d = tmp_path_factory.mktemp("retime")
    small_trace(d / "trace.jsonl", n_streams=2, n_updates=10)
    streams = streams_from_frame(read_trace(d / "trace.jsonl"))
    run = piper_runs.run("retime", streams, rules=("immediate", "timer:w=3"))
    done = cli("retime", run.manifest, "--store", run.store, "--all", "--out", d / "all.parquet", "--quiet",
               check=True)
    return d, run, done


@pytest.mark.slow
def test_retime_all_keeps_the_audio_and_reproduces_the_service_times_up_to_the_machines_speed(synthesized):
    d, run, done = synthesized
    old, new = pd.read_parquet(run.manifest), pd.read_parquet(d / "all.parquet")
    pd.testing.assert_frame_equal(new[KEYS + ["text", "audio_key", "n_samples", "audio_s", "dispatch_s"]],
                                  old[KEYS + ["text", "audio_key", "n_samples", "audio_s", "dispatch_s"]])
    assert new["retimed"].all() and (new["original_service_s"] == old["service_s"]).all()
    assert (new["service_s"] != old["service_s"]).all() and (new["wait_s"] >= 0).all()
    # rows that share one record (reused) share its new time
    for _, g in new[new["reused"] | new.duplicated("audio_key", keep=False)].groupby("audio_key"):
        assert g["service_s"].nunique() == 1
    # the same requests timed again, up to the machine's speed: each distinct request's new
    # time over its old one stays near the run's median ratio (a time copied from another
    # request, or the probe's, would not: the requests last 1–4 words, 0.05–0.3 s), and the
    # median ratio is within a factor 2 (our idle VMs drift up to 1.6× between runs and
    # probes alike, so the probes' spread is no tighter bound)
    first = new.drop_duplicates("audio_key").set_index("audio_key")
    ratio = first["service_s"] / old.drop_duplicates("audio_key").set_index("audio_key")["service_s"]
    median = float(ratio.median())
    assert 0.5 <= median <= 2.0, median
    near = ((ratio / median).between(1 / 1.5, 1.5)).mean()
    assert near >= 0.8, (near, ratio.describe())
    spread = old["service_s"].max() / old["service_s"].min()
    assert spread > 2.0, spread  # the texts' own spread, which a wrong pairing would show
    assert meta(d / "all.parquet")["signature"]["retime"] == "all"
    assert "re-timed" in done.stdout and "original clock:" in done.stdout and "clock: " in done.stdout


@pytest.mark.slow
def test_the_comparison_holds_each_outputs_median_and_worst_ratio(synthesized):
    d, run, _ = synthesized
    old, new = pd.read_parquet(run.manifest), pd.read_parquet(d / "all.parquet")
    comp = pd.read_csv(d / "all.retime.csv")
    ratio = new.assign(r=new["service_s"] / old["service_s"])
    assert len(comp) == ratio.groupby(["talk_id", "system", "condition"]).ngroups == 4
    for row in comp.itertuples():
        r = ratio[(ratio["system"] == row.system) & (ratio["condition"] == row.condition)]["r"].to_numpy()
        assert row.n_retimed == len(r)
        assert row.median_ratio == pytest.approx(np.median(r))
        assert row.worst_ratio == pytest.approx(r[np.argmax(np.abs(np.log(r)))])
    assert comp["signature"].str.contains("table:retime").all()


@pytest.mark.slow
def test_replay_reads_the_retimed_manifest_and_its_chunks(cli, synthesized, tmp_path):
    d, _, _ = synthesized
    cli("replay", d / "all.parquet", "--release", "chunk", "--out", tmp_path / "s.csv", check=True)
    assert "retime:all" in pd.read_csv(tmp_path / "s.csv")["signature"][0]
    chunks, new = pd.read_parquet(d / "all.chunks.parquet"), pd.read_parquet(d / "all.parquet")
    last = chunks.groupby(KEYS)["ready_offset_s"].max().reset_index().merge(new[KEYS + ["service_s"]], on=KEYS)
    assert (last["ready_offset_s"] <= last["service_s"]).all()  # a chunk is ready before its request ends


@pytest.mark.slow
def test_a_sample_retimes_that_many_distinct_requests(cli, synthesized, tmp_path):
    _, run, _ = synthesized
    cli("retime", run.manifest, "--store", run.store, "--sample", "3", "--out", tmp_path / "s.parquet",
        "--quiet", check=True)
    old, new = pd.read_parquet(run.manifest), pd.read_parquet(tmp_path / "s.parquet")
    done = new[new["retimed"]]
    assert done["audio_key"].nunique() == 3
    assert (new.loc[~new["retimed"], "service_s"] == old.loc[~new["retimed"], "service_s"]).all()
    assert meta(tmp_path / "s.parquet")["signature"]["retime"] == "sample:3"


def test_another_backend_is_refused_before_loading(cli, synthesized, tmp_path):
    _, run, _ = synthesized
    proc = cli("retime", run.manifest, "--store", run.store, "--backend", "piper:intra_op_threads=2",
               "--out", tmp_path / "x.parquet")
    assert_one_line_error(proc, run.manifest.name, "--backend", "was synthesized with another backend", "threads")
    assert not (tmp_path / "x.parquet").exists()


def test_a_csv_copy_is_refused(cli, synthesized, tmp_path):
    _, run, _ = synthesized
    pd.read_parquet(run.manifest).to_csv(tmp_path / "m.csv", index=False)
    proc = cli("retime", tmp_path / "m.csv", "--store", run.store, "--out", tmp_path / "x.parquet")
    assert_one_line_error(proc, "m.csv", "is not a Parquet manifest", "lacks the backend and clock metadata")


def test_a_request_that_fails_when_re_timed_keeps_its_old_time_and_is_reported(tmp_path, monkeypatch):
    """In process with the fake backend: the re-timing of one text raises; that request is
    kept with its old clock (not dropped, not marked retimed), the others are re-timed, the
    manifest is still written and the failure named in the result (the CLI prints it and exits 1)."""
    import tests.support.fakes as fakes
    from simulplay.backends import parse_backend
    from simulplay.grouping import parse_rule
    from simulplay.store.store import AudioStore
    from simulplay.synthesis.run import synthesize_files
    from simulplay.workflows.retime import retime_manifest

    small_trace(tmp_path / "trace.jsonl", n_streams=1, n_updates=6)
    synthesize_files(parse_backend("fake-test"), tmp_path / "store", tmp_path / "m.parquet",
                     traces=[tmp_path / "trace.jsonl"], rules=[parse_rule("immediate")])
    old = pd.read_parquet(tmp_path / "m.parquet")
    victim = str(old["text"].iloc[2])
    real = fakes.FakeBackend.stream

    def stream(self, text):
        if text == victim:
            raise RuntimeError("the machine said no")
        return real(self, text)

    monkeypatch.setattr(fakes.FakeBackend, "stream", stream)
    res = retime_manifest(tmp_path / "m.parquet", AudioStore(tmp_path / "store"), tmp_path / "all.parquet",
                          sample=None)
    new = pd.read_parquet(tmp_path / "all.parquet")
    assert len(new) == len(old) and len(res.failed) == 1 and "the machine said no" in res.failed[0]
    hit = new["text"] == victim
    assert not new.loc[hit, "retimed"].any() and (new.loc[hit, "service_s"] == old.loc[hit, "service_s"]).all()
    assert new.loc[~hit, "retimed"].all() and res.retimed == int((~hit).sum())


def test_a_damaged_chunk_table_is_refused_in_one_line_before_any_work(cli, synthesized, tmp_path):
    """The source's chunk table is the user's input: checked as every reader checks it, before
    the backend loads, not caught later as a bug of the writer."""
    _, run, _ = synthesized
    shutil.copy(run.manifest, tmp_path / "m.parquet")
    chunks = pd.read_parquet(chunk_path(run.manifest))
    chunks.loc[0, "ready_offset_s"] = -1.0
    chunks.to_parquet(tmp_path / "m.chunks.parquet", index=False)
    proc = cli("retime", tmp_path / "m.parquet", "--store", run.store, "--out", tmp_path / "x.parquet")
    assert_one_line_error(proc, "m.chunks.parquet", "ready_offset_s")
    assert not (tmp_path / "x.parquet").exists()
