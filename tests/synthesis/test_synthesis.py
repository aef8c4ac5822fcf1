"""Real synthesis with Piper, the audio store, reuse and fail-closed behaviour."""

import json

import numpy as np
import pandas as pd
import pytest
import soundfile as sf

from simulplay.backends import parse_backend
from simulplay.core.errors import IncompleteError, InputError
from simulplay.grouping import parse_rule
from simulplay.manifest import read_chunks, read_manifest
from simulplay.sim import replay
from simulplay.store.store import AudioStore
from simulplay.synthesis.plan import plan_requests
from simulplay.synthesis.request import synthesize_request
from simulplay.synthesis.run import synthesize_to_manifest
from tests.support import fakes  # noqa: F401  (registers the fake backend)
from tests.support.factories import stream

PIPER = "piper:intra_op_threads=1"


@pytest.fixture(scope="module")
def piper():
    backend = parse_backend(PIPER).create()
    backend.load()
    backend.warmup()
    return backend


def short_streams():
    return [stream([0.0, 1.0, 2.0, 3.5], ["Hello there,", "my friend.", "How are", "you today?"],
                   talk_id="t1", system="A", source_s=5.0),
            stream([0.5, 2.5], ["Hi, my dear", "friend. How are you?"], talk_id="t1", system="F", source_s=5.0)]


def test_piper_durations_come_from_sample_counts_and_flac_is_sample_exact(tmp_path, piper):
    audio, service, chunks = synthesize_request(piper, "One sentence. And another one!")
    assert len(chunks) == 2 and sum(n for _, n in chunks) == len(audio) > 0
    assert service > 0 and chunks[0][0] <= chunks[1][0] <= service
    store = AudioStore(tmp_path)
    key = store.put_audio(audio, piper.sample_rate)
    back, rate = store.load_audio(key)
    assert rate == 22_050 and back.dtype == np.int16 and np.array_equal(back, audio)
    info = sf.info(store.audio_path(key))
    assert info.format == "FLAC" and info.frames == len(audio)


def test_punctuation_only_request_has_no_samples_but_a_service_time(piper):
    audio, service, chunks = synthesize_request(piper, "…")
    assert len(audio) == 0 and chunks == [] and service > 0


@pytest.mark.slow


def test_manifest_from_real_piper(piper_runs):
    """The session's shared Piper run of :func:`short_streams` (immediate and timer:w=2)."""
    run = piper_runs.run("synthesis", short_streams())
    m, meta = read_manifest(run.manifest)
    assert (m["audio_s"] == m["n_samples"] / m["sample_rate"]).all()
    assert set(m["backend"]) == {"piper:en_US-joe-medium"} and (m["error"] == "").all()
    assert meta["signature"]["backend"].startswith("piper-tts@") and meta["identity"]["voice_sha256"]
    assert meta["identity"]["threads"] == "intra=1,inter=1,sequential"
    chunks = read_chunks(run.manifest)
    per_request = chunks.groupby(["condition", "system", "seq"])["n_samples"].sum()
    assert per_request.sum() == m["n_samples"].sum()
    # one realization: reuse by text (one record per text, the other rows of a text reused)
    assert m["audio_key"].nunique() == m["text"].nunique() == (~m["reused"]).sum() < len(m)
    request = replay(m).summary
    chunk = replay(m, release="chunk", chunks=chunks).summary
    assert (chunk["end_s"] <= request["end_s"] + 1e-9).all()
    assert (chunk["n_parts"] >= request["n_parts"]).all()


@pytest.mark.slow


def test_loading_happens_once_and_before_the_clock(tmp_path, monkeypatch):
    import onnxruntime

    made = []
    real = onnxruntime.InferenceSession

    def counting(*a, **k):
        made.append(1)
        return real(*a, **k)

    monkeypatch.setattr(onnxruntime, "InferenceSession", counting)
    config = parse_backend(PIPER)
    synthesize_to_manifest(short_streams(), [parse_rule("immediate")], config, AudioStore(tmp_path),
                           tmp_path / "m.parquet")
    assert len(made) == 1


@pytest.mark.slow


def test_reuse_within_a_realization_and_fresh_audio_across_realizations(tmp_path):
    config = parse_backend(PIPER)
    s = [stream([0.0, 1.0], ["Same words here.", "Other words."], source_s=3.0)]
    rules = [parse_rule("immediate"), parse_rule("timer:w=0")]  # identical requests under both rules
    synthesize_to_manifest(s, rules, config, AudioStore(tmp_path / "st"), tmp_path / "m.parquet",
                           realizations=2)
    m, _ = read_manifest(tmp_path / "m.parquet")
    r0, r1 = m[m["realization"] == "0"], m[m["realization"] == "1"]
    assert r0["reused"].sum() == 2 and r1["reused"].sum() == 2
    assert r0.groupby("text")["audio_key"].nunique().max() == 1
    # Piper is not seed-reproducible: realization 1 was synthesized afresh
    assert set(r0["service_s"]).isdisjoint(set(r1["service_s"]))


def two_talks():
    second = [stream(s.times, [t.replace("my dear", "dear") for t in s.texts], talk_id="t2", system=s.system,
                     source_s=5.0) for s in short_streams()]
    return short_streams() + second


@pytest.mark.slow


def test_failed_requests_are_recorded_and_comparisons_fail_closed(tmp_path, cli):
    # only talk t1's F request under timer:w=2 contains "my dear friend"
    config = parse_backend("fake-test:fail_on=my dear friend")
    m_path = tmp_path / "m.parquet"
    rules = [parse_rule("immediate"), parse_rule("timer:w=2")]
    synthesize_to_manifest(two_talks(), rules, config, AudioStore(tmp_path / "store"), m_path)
    m, _ = read_manifest(m_path)
    failed = m[m["error"] != ""]
    assert len(failed) == 1 and failed["error"].iloc[0] == "RuntimeError: refused 'my dear friend'"
    with pytest.raises(IncompleteError, match="1 incomplete output.*talk_id=t1, system=F, condition=timer:w=2"):
        replay(m)
    proc = cli("replay", m_path, "--out", tmp_path / "s.csv")
    assert proc.returncode == 2 and "incomplete output" in proc.stderr and not (tmp_path / "s.csv").exists()
    cli("replay", m_path, "--out", tmp_path / "s.csv", "--allow-incomplete", check=True)
    s = pd.read_csv(tmp_path / "s.csv")
    assert len(s) == 7 and "excluded:1" in s["signature"][0]
    proc = cli("eta", tmp_path / "s.csv", "--a", "A", "--f", "F", "--reference", "immediate",
               "--out", tmp_path / "e.csv")
    assert proc.returncode == 2 and "missing" in proc.stderr and "talk_id=t1, system=F" in proc.stderr
    cli("eta", tmp_path / "s.csv", "--a", "A", "--f", "F", "--reference", "immediate", "--allow-incomplete",
        "--out", tmp_path / "e.csv", "--draws", "100", check=True)
    e = pd.read_csv(tmp_path / "e.csv")
    assert e["n_talks"][0] == 1 and "excluded:1" in e["signature"][0]
    # a rerun retries the failure; with the cause removed every request completes
    ok = synthesize_to_manifest(two_talks(), rules, parse_backend("fake-test"), AudioStore(tmp_path / "store2"),
                                m_path)
    assert (ok.manifest["error"] == "").all()


def test_seed_reproducible_backends_reuse_across_realizations(tmp_path):
    res = synthesize_to_manifest(short_streams(), [parse_rule("immediate")], parse_backend("fake-test"),
                                 AudioStore(tmp_path), tmp_path / "m.parquet", realizations=3)
    assert res.stats.synthesized == res.manifest["text"].nunique()
    assert res.manifest.loc[res.manifest["realization"] > 0, "reused"].all()
    assert res.signature["reuse"] == "always"


def test_plan_is_counterbalanced_and_keys_follow_the_reuse_policy():
    backend = parse_backend("fake-test:reuse=never").create()
    rules = [parse_rule(r) for r in ("immediate", "timer:w=2", "timer:w=4")]
    s = [stream([0.0, 1.0], ["a b.", "c d."], talk_id=f"t{i}", source_s=3.0) for i in range(3)]
    plan = plan_requests(s, rules, backend).frame
    first = plan.drop_duplicates("talk_id")["condition"].tolist()
    assert len(set(first)) == 3  # each talk starts with a different condition
    assert plan["key"].is_unique  # never: every request is its own
    same = plan_requests(s, rules, parse_backend("fake-test:reuse=same-realization").create()).frame
    assert same["key"].nunique() == 3  # "a b.", "c d." and the timer group "a b. c d."


@pytest.mark.parametrize("spec,fragment", [
    ("piper:voice=/nope.onnx", "voice file /nope.onnx does not exist"),
    ("piper:noise_scale=loud", "'noise_scale=loud' is not a float"),
    ("piper:threads=4", "unknown parameter 'threads=4'"),
    ("piper:reuse=sometimes", "reuse must be one of"),
    ("festival", "unknown backend 'festival'"),
])
def test_bad_backend_specs(spec, fragment):
    with pytest.raises(InputError, match=fragment.replace("(", r"\(")):
        parse_backend(spec)


def test_store_records_are_json_and_events_are_logged(tmp_path):
    store = AudioStore(tmp_path)
    synthesize_to_manifest(short_streams(), [parse_rule("immediate")], parse_backend("fake-test"), store,
                           tmp_path / "m.csv")
    events = store.events()
    assert events and all(e["event"] == "synthesized" for e in events)
    rec = json.loads(next((tmp_path / "records").glob("*.json")).read_text())
    assert {"audio_key", "n_samples", "service_s", "chunks", "origin", "worker", "host"} <= set(rec)
