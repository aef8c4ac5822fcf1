"""`simulplay edges` and the `edges` key of `simulplay run`, run as real commands."""

import json
import shutil

import pandas as pd
import pytest

import simulplay.report.explore.edges as explore_edges
from simulplay.core.tables import read_table
from simulplay.report.explore import build_explorer, explorer_files
from tests.support.factories import PIPER_BACKEND, experiment_toml, small_trace, stream
from tests.support.factories import manifest as hand_manifest
from tests.support.synth import PiperRun


@pytest.fixture(scope="module")
def synthesized(piper_runs, tmp_path_factory):
    """The shared run, its store copied without the VAD cache: the first sweep here infers."""
    streams = [stream([0.0, 1.5], ["Hello there, my friend.", "How are you?"], talk_id="t1", system="A", source_s=5.0),
               stream([0.5, 2.0], ["Good morning.", "One, two, three."], talk_id="t1", system="F", source_s=5.0)]
    run = piper_runs.run("edges_cli", streams)
    store = tmp_path_factory.mktemp("edges_cli") / "store"
    shutil.copytree(run.store, store, ignore=shutil.ignore_patterns("vad"))
    return PiperRun(run.manifest, store)


@pytest.mark.slow
def test_edges_writes_summary_eta_and_share_and_a_second_sweep_is_cached(cli, synthesized, tmp_path):
    root = synthesized
    n_keys = pd.read_parquet(root.manifest)["audio_key"].nunique()
    first = cli("edges", root.manifest, "--store", root.store, "--thresholds", "0.5",
                "--out", tmp_path / "s.parquet", "--eta-out", tmp_path / "eta.csv", "--a", "A", "--f", "F",
                "--reference", "immediate", "--share-out", tmp_path / "share.csv", "--draws", "100", "--quiet",
                check=True)
    assert f"inferred {n_keys} waveform(s)" in first.stdout and "0 from the cache" in first.stdout
    summary, meta = read_table(tmp_path / "s.parquet")
    assert list(summary.columns) == ["threshold", "talk_id", "system", "condition", "backend", "realization",
                                     "n_parts", "first_play_s", "audio_s", "idle_s", "end_s", "offset_s", "source_s",
                                     "limiting_seq", "untrimmed_audio_s", "n_removed"]
    assert len(summary) == 4 and (summary["threshold"] == 0.5).all()
    assert (summary["audio_s"] <= summary["untrimmed_audio_s"]).all()
    assert meta["vad"]["file"] == "silero_vad.onnx" and len(meta["vad"]["sha256"]) == 64
    eta = pd.read_csv(tmp_path / "eta.csv")
    assert list(eta["condition"]) == ["timer:w=2"] and list(eta["threshold"]) == [0.5]
    for part in ("trim:edges:guard=100ms", "threshold:0.5", "vad:silero-vad@", "silero_vad.onnx/sha256:"):
        assert part in eta["signature"][0], part
    share = pd.read_csv(tmp_path / "share.csv")
    assert set(share["system"]) == {"A", "F"} and set(share["condition"]) == {"timer:w=2"}
    assert (share["reference"] == "immediate").all() and "table:nonspeech-share" in share["signature"][0]

    second = cli("edges", root.manifest, "--store", root.store, "--thresholds", "0.7,0.3",
                 "--guard-ms", "50", "--out", tmp_path / "s2.csv", "--quiet", check=True)
    assert "inferred 0 waveform(s)" in second.stdout and f"{n_keys} from the cache" in second.stdout
    s2 = pd.read_csv(tmp_path / "s2.csv")
    assert list(s2["threshold"].unique()) == [0.3, 0.7] and "trim:edges:guard=50ms" in s2["signature"][0]

    # `simulplay eta` on a sweep analyses each threshold on its own (never pooled)
    cli("eta", tmp_path / "s2.csv", "--a", "A", "--f", "F", "--reference", "immediate", "--draws", "100",
        "--out", tmp_path / "eta2.csv", check=True)
    eta2 = pd.read_csv(tmp_path / "eta2.csv")
    assert list(eta2["threshold"]) == [0.3, 0.7] and (eta2["n_talks"] == 1).all()


@pytest.mark.parametrize("args,fragment", [
    (["--eta-out", "{tmp}/e.csv"], "--eta-out: needs --a, --f and --reference"),
    (["--thresholds", "0.3,abc"], "'abc' is not a number"),
    (["--thresholds", "0.5,1.2"], "1.2 is not in (0, 1]"),
    (["--guard-ms", "-5"], "is not a duration ≥ 0"),
    (["--vad-model", "cobra"], "unknown Silero VAD variant"),
    (["--share-out", "{tmp}/sh.csv"], "--share-out: needs --pair REF,COND or --reference"),
    (["--share-out", "{tmp}/sh.csv", "--pair", "immediate,timer:w=9"], "no condition 'timer:w=9'"),
    (["--eta-out", "{tmp}/e.csv", "--a", "Z", "--f", "F", "--reference", "immediate"], "field '--a': no system 'Z'"),
    (["--a", "A"], "--a: is used only with --eta-out"),
    (["--pair", "immediate,timer:w=2"], "--pair: is used only with --share-out"),
])
@pytest.mark.slow
def test_bad_options_give_one_line_and_write_nothing(cli, synthesized, tmp_path, args, fragment):
    args = [a.format(tmp=tmp_path) for a in args]
    proc = cli("edges", synthesized.manifest, "--store", synthesized.store, "--out", tmp_path / "s.csv",
               "--quiet", *args)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], proc.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow


def test_a_manifest_without_audio_or_a_wrong_store_is_refused(cli, synthesized, tmp_path):
    hand = tmp_path / "hand.csv"
    hand_manifest({("t1", "A", "immediate"): [(0.0, 0.5, 1.0)]}).to_csv(hand, index=False)
    proc = cli("edges", hand, "--store", synthesized.store, "--out", tmp_path / "s.csv")
    assert proc.returncode == 2 and "missing columns audio_key, sample_rate, n_samples" in proc.stderr
    proc = cli("edges", synthesized.manifest, "--store", tmp_path / "nowhere", "--out", tmp_path / "s.csv")
    assert proc.returncode == 2 and "is not an audio store" in proc.stderr
    assert not (tmp_path / "s.csv").exists()


def test_help_states_units_and_the_rule(cli):
    out = " ".join(cli("edges", "--help", check=True).stdout.split())
    for part in ("16 kHz", "512-sample frames", "≥ the threshold", "Milliseconds", "cached in the store",
                 "share_pct"):
        assert part in out, part


BACKLOG = "backlog:below=1,max_chars=300,min_words=3"
EXPERIMENT = experiment_toml(name="edges", backend=PIPER_BACKEND, rules=["immediate", "timer:w=3", "backlog:below=1"],
                             analysis={"draws": 200, "seed": 0, "edges": [0.5, 0.3]})


@pytest.mark.slow
def test_run_writes_the_edge_tables_the_report_reads(cli, tmp_path, monkeypatch):
    small_trace(tmp_path / "trace.jsonl", n_streams=4, n_updates=5)
    (tmp_path / "exp.toml").write_text(EXPERIMENT)
    first = cli("run", tmp_path / "exp.toml", "--quiet", check=True)
    assert "edge-silence replay" in first.stdout
    out = tmp_path / "run"
    summary = pd.read_parquet(out / "edges_summary.parquet")
    assert sorted(summary["threshold"].unique()) == [0.3, 0.5] and len(summary) == 2 * 3 * 2 * 2
    pd.testing.assert_frame_equal(pd.read_csv(out / "edges_summary.csv").drop(columns="signature"),
                                  summary.astype({"realization": int}), check_dtype=False)
    eta = pd.read_csv(out / "eta_edges.csv")
    assert list(eta["threshold"]) == [0.3, 0.3, 0.5, 0.5] and set(eta["condition"]) == {"timer:w=3", BACKLOG}
    assert (eta["n_talks"] == 2).all() and "vad:silero-vad@" in eta["signature"][0]
    share = pd.read_csv(out / "edges_nonspeech.csv")
    assert len(share) == 2 * 2 * 2 and set(share["system"]) == {"A", "F"} and (share["reference"] == "immediate").all()
    # the explorer `run` made from memory is the one made from the folder, whose edge replay decides the
    # closed-loop outputs again on the run's traces as the run did
    given, replay_trimmed = [], explore_edges.replay_trimmed
    monkeypatch.setattr(explore_edges, "replay_trimmed", lambda *a, **k: (given.append(k["streams"]),
                                                                          replay_trimmed(*a, **k))[1])
    again = explorer_files(build_explorer(out))
    assert {n: (out / "explore" / n).read_bytes() for n in again} == again
    assert sorted((s.talk_id, s.system) for s in given[0]) == [(f"talk{k // 2}", "AF"[k % 2]) for k in range(4)]
    panel = again["data/panel.js"].decode()
    for t in ("0.3", "0.5"):  # a lane per threshold; backlog's 4 outputs, decided again, are not drawn on it
        assert f'"key":"edges-{t}"' in panel and f"Variant edges-{t}: 4 closed-loop output(s) decided again" in panel
    monkeypatch.undo()
    assert {"share_pct", "nonspeech_s", "speech_s", "reduction_s"} <= set(share.columns)
    record = json.loads((out / "run.json").read_text())
    assert record["edges_vad"]["inferred"] > 0 and len(record["edges_vad"]["sha256"]) == 64
    assert list(record["experiment"]["edges"]) == [0.3, 0.5]
    cli("run", tmp_path / "exp.toml", "--quiet", check=True)
    again = json.loads((out / "run.json").read_text())["edges_vad"]
    assert again["inferred"] == 0 and again["cached"] == record["edges_vad"]["inferred"]


@pytest.mark.parametrize("value,fragment", [("[0.5, 2]", "2 is not a threshold in (0, 1]"),
                                            ('["high"]', "'high' is not a threshold"),
                                            ("[0.5, 0.5]", "repeats a threshold"),
                                            ('"0.5"', "is not a list")])
def test_experiment_edges_key_is_checked(cli, tmp_path, value, fragment):
    small_trace(tmp_path / "trace.jsonl", n_streams=2, n_updates=2)
    (tmp_path / "exp.toml").write_text(EXPERIMENT.replace("edges = [0.5, 0.3]", f"edges = {value}"))
    proc = cli("run", tmp_path / "exp.toml", "--quiet")
    assert proc.returncode == 2 and "key 'analysis.edges'" in proc.stderr and fragment in proc.stderr, proc.stderr
    assert not (tmp_path / "run").exists()
