"""Edge-silence replay on real Piper audio with the bundled Silero VAD."""

import hashlib
import math
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest
import soxr

from simulplay.analysis.edge_replay import nonspeech_share
from simulplay.analysis.edges import guard_samples, keep_bounds, speech_samples
from simulplay.manifest import read_manifest
from simulplay.sim import replay
from simulplay.store.store import AudioStore
from simulplay.vad import SileroVad, to_vad_input
from simulplay.workflows.edges import edge_replay, speech_probabilities
from tests.support.factories import reference_playback, stream

RATE = 22_050
ONE_FRAME = math.ceil(512 * RATE / 16_000)  # 706 samples: one 512-sample frame at 16 kHz
GUARD = guard_samples(100, RATE)


def texts():
    return [stream([0.0, 1.5], ["Hello there, my friend.", "How are you today?"], talk_id="t1", system="A",
                   source_s=6.0),
            stream([0.5, 2.0], ["Good morning, everybody.", "One, two, three."], talk_id="t1", system="F",
                   source_s=6.0),
            stream([0.0, 1.0], ["Thank you very much.", "See you soon!"], talk_id="t2", system="A", source_s=5.0),
            stream([0.2, 2.5], ["Yes, of course.", "That is all for today."], talk_id="t2", system="F",
                   source_s=5.0)]


@pytest.fixture(scope="module")
def synthesized(piper_runs):
    run = piper_runs.run("edges_vad", texts())
    store = AudioStore(run.store)
    manifest, meta = read_manifest(run.manifest)
    assert (manifest["n_samples"] > 0).all() and set(manifest["sample_rate"]) == {RATE}
    return store, manifest, meta


@pytest.fixture
def fresh(synthesized, tmp_path):
    """The synthesized store without any cached probabilities."""
    store, manifest, meta = synthesized
    shutil.copytree(store.root, tmp_path / "store", ignore=shutil.ignore_patterns("vad"))
    return AudioStore(tmp_path / "store"), manifest, meta


def replace_audio(manifest, store, make):
    """A copy of ``manifest`` whose request i has the samples ``make(i, samples)`` (stored)."""
    m = manifest.copy()
    for i, key in enumerate(manifest["audio_key"]):
        samples, rate = store.load_audio(key)
        new = make(i, samples)
        if new is samples:
            continue
        m.loc[i, ["audio_key", "n_samples", "audio_s"]] = store.put_audio(new, rate), len(new), len(new) / rate
    m["n_samples"] = m["n_samples"].astype(np.int64)
    return m


def silence(n, noise_std, rng):
    return rng.normal(0, noise_std, n).round().astype(np.int16) if noise_std else np.zeros(n, np.int16)


FIVE_FRAMES = 3528  # five 512-sample frames at 16 kHz are exactly 3528 samples at 22,050 Hz
HANGOVER = 4 * ONE_FRAME  # Silero's probability decays over a few frames after speech (≤ 3 on the demo's audio)


@pytest.mark.parametrize("noise_std", [0, 20])
@pytest.mark.slow
def test_known_padding_is_removed_down_to_the_guard(synthesized, noise_std):
    """Silence (zeros, or noise near -64 dBFS) added around Piper requests is removed down to
    the 100 ms guard: at the start within one frame (the frame holding the first speech
    sample may start up to one frame earlier), at the end within one frame plus the
    model's hangover. More silence added outside moves the kept span by exactly that much,
    within one frame: whole frames keep the 16 kHz grid, and the model state differs only
    through what it saw long before (a frame at the speech edge may then cross the
    threshold). Piper runs without noise (noise_scale 0), so the audio is reproducible."""
    store, manifest, _ = synthesized
    rng = np.random.default_rng(noise_std)
    lead, trail, extra = 4 * FIVE_FRAMES, 2 * FIVE_FRAMES, 4 * FIVE_FRAMES
    base = replace_audio(manifest, store, lambda i, w: np.concatenate(
        [silence(lead, noise_std, rng), w, silence(trail, noise_std, rng)]))
    more = replace_audio(base, store, lambda i, w: np.concatenate(
        [silence(extra, noise_std, rng), w, silence(extra, noise_std, rng)]))
    odd = replace_audio(manifest, store, lambda i, w: np.concatenate(
        [silence(12_345, noise_std, rng), w, silence(4321, noise_std, rng)]))
    a, b, c = (edge_replay(m, store, [0.3, 0.5, 0.7], guard_ms=100).trims for m in (base, more, odd))
    for tr, before, after in ((a, lead, trail), (b, lead + extra, trail + extra), (c, 12_345, 4321)):
        assert (tr["n_samples"] == np.tile(manifest["n_samples"].to_numpy(), 3) + before + after).all()
        assert (tr["keep_end"] > tr["keep_start"]).all()
        assert (tr["keep_start"] >= before - GUARD - ONE_FRAME).all()
        assert (tr["n_samples"] - tr["keep_end"] >= after - GUARD - ONE_FRAME - HANGOVER).all()
    assert (abs(b["keep_start"] - a["keep_start"] - extra) <= ONE_FRAME).all()
    assert (abs(b["keep_end"] - a["keep_end"] - extra) <= ONE_FRAME).all()
    removed_a, removed_b = (t["n_samples"] - (t["keep_end"] - t["keep_start"]) for t in (a, b))
    assert (abs(removed_b - removed_a - 2 * extra) <= 2 * ONE_FRAME).all()


def test_trimmed_audio_shrinks_as_the_threshold_rises(synthesized):
    store, manifest, meta = synthesized
    rng = np.random.default_rng(1)
    padded = replace_audio(manifest, store, lambda i, w: np.concatenate(
        [silence(9000, 20, rng), w, silence(9000, 20, rng)]))
    res = edge_replay(padded, store, [0.7, 0.3, 0.5], upstream=meta["signature"])
    assert list(dict.fromkeys(res.summary["threshold"])) == [0.3, 0.5, 0.7]
    kept = res.trims.assign(kept=res.trims["keep_end"] - res.trims["keep_start"]).pivot_table(
        index=["system", "condition", "talk_id", "seq"], columns="threshold", values="kept")
    n = padded.set_index(["system", "condition", "talk_id", "seq"])["n_samples"].loc[kept.index]
    assert (kept[0.7] <= kept[0.5]).all() and (kept[0.5] <= kept[0.3]).all() and (kept[0.3] < n).all()
    audio = res.summary.pivot_table(index=["system", "condition", "talk_id"], columns="threshold", values="audio_s")
    untrimmed = res.summary.groupby(["system", "condition", "talk_id"])["untrimmed_audio_s"].first()
    assert (audio[0.7] <= audio[0.5]).all() and (audio[0.5] <= audio[0.3]).all()
    assert (audio[0.3] < untrimmed.loc[audio.index]).all()
    np.testing.assert_allclose(untrimmed.sum(), padded["audio_s"].sum())
    sig = res.signatures[0]
    assert sig["trim"] == "edges:guard=100ms" and sig["threshold"] == 0.3 and sig["backend"].startswith("piper")
    assert sig["vad"].startswith("silero-vad@") and "silero_vad.onnx/sha256:" in sig["vad"]


def test_a_second_sweep_runs_no_inference(fresh, monkeypatch):
    store, manifest, _ = fresh
    calls = []
    real = SileroVad.probabilities
    monkeypatch.setattr(SileroVad, "probabilities", lambda self, x: calls.append(len(x)) or real(self, x))
    first = edge_replay(manifest, store, [0.5])
    n_keys = manifest["audio_key"].nunique()
    assert len(calls) == first.stats.inferred == n_keys and first.stats.cached == 0
    vad = SileroVad()
    files = sorted((store.root / "vad" / vad.model_id).glob("*.npy"))
    assert {f.stem for f in files} == set(manifest["audio_key"])
    identity = pd.read_json(store.root / "vad" / vad.model_id / "identity.json", typ="series")
    assert identity["file"] == "silero_vad.onnx"
    assert identity["sha256"] == hashlib.sha256(vad.path.read_bytes()).hexdigest()
    calls.clear()
    second = edge_replay(manifest, store, [0.3, 0.5, 0.7], vad=vad)
    assert calls == [] and second.stats.inferred == 0 and second.stats.cached == n_keys
    assert "_model" not in vad.__dict__  # the model was never even loaded
    at = second.trims[second.trims["threshold"] == 0.5].reset_index(drop=True)
    pd.testing.assert_frame_equal(at, first.trims)
    pd.testing.assert_frame_equal(second.summary[second.summary["threshold"] == 0.5].reset_index(drop=True),
                                  first.summary)


def test_silent_requests_are_removed_and_readiness_stays(synthesized):
    store, manifest, _ = synthesized
    rng = np.random.default_rng(2)
    quiet = {0: np.zeros(RATE, np.int16), 3: silence(RATE, 20, rng)}  # one second of zeros / of low noise
    m = replace_audio(manifest, store, lambda i, w: quiet.get(i, w))
    before = replay(m)
    res = edge_replay(m, store, [0.3, 0.5, 0.7])
    for t in (0.3, 0.5, 0.7):
        parts = res.parts[res.parts["threshold"] == t].reset_index(drop=True)
        np.testing.assert_array_equal(parts["ready_s"].to_numpy(), before.parts["ready_s"].to_numpy())
        assert (parts.loc[[0, 3], "audio_s"] == 0).all() and parts.loc[[0, 3], "play_s"].isna().all()
        assert (parts.drop(index=[0, 3])["audio_s"] > 0).all()
        summary = res.summary[res.summary["threshold"] == t].reset_index(drop=True)
        assert len(summary) == len(before.summary) > 0 and (summary["n_parts"] == before.summary["n_parts"]).all()
        assert summary["n_removed"].sum() == 2
        for _, out in summary.iterrows():  # playback recomputed from the trimmed durations
            mine = (parts[["talk_id", "system", "condition"]] == out[["talk_id", "system", "condition"]]).all(axis=1)
            ref = reference_playback(parts.loc[mine, "ready_s"], parts.loc[mine, "audio_s"])
            assert out["end_s"] == pytest.approx(ref["end"]) and out["idle_s"] == pytest.approx(ref["idle"])
            assert out["audio_s"] == pytest.approx(ref["audio"])


def test_agrees_with_silero_speech_timestamps(synthesized, tmp_path):
    """At 16 kHz with no guard, the kept span runs from silero's own first speech start to its
    last speech end, and speech samples add up its segments, when its state machine is set
    to the same rule (threshold for entering and leaving speech, no minimum durations, no
    padding)."""
    import torch
    from silero_vad import get_speech_timestamps, load_silero_vad

    store, manifest, _ = synthesized
    model = load_silero_vad(onnx=True)
    store16 = AudioStore(tmp_path / "s16")
    for key in manifest["audio_key"].unique()[:4]:
        w, rate = store.load_audio(key)
        x = np.concatenate([np.zeros(7000), soxr.resample(w.astype(np.float64), rate, 16_000), np.zeros(3001)])
        x = x.round().astype(np.int16)
        key16 = store16.put_audio(x, 16_000)
        probs = speech_probabilities([(key16, len(x), 16_000)], store16, SileroVad())[0][key16]
        for t in (0.3, 0.5, 0.7):
            segs = get_speech_timestamps(torch.from_numpy(x.astype(np.float32) / 32768), model, threshold=t,
                                         neg_threshold=t, min_speech_duration_ms=0, min_silence_duration_ms=0,
                                         speech_pad_ms=0)
            assert segs, "speech was found"
            assert keep_bounds(probs, len(x), 16_000, t, guard_ms=0) == (segs[0]["start"], segs[-1]["end"])
            assert speech_samples(probs, len(x), 16_000, t) == sum(s["end"] - s["start"] for s in segs)


def test_bundled_variants_agree(synthesized):
    store, manifest, _ = synthesized
    w, rate = store.load_audio(manifest["audio_key"].iloc[0])
    x = to_vad_input(w, rate)
    onnx = SileroVad("onnx").probabilities(x)
    assert len(onnx) == math.ceil(len(x) / 512)
    for variant in ("onnx", "sequence", "jit"):  # the state is reset per waveform
        vad = SileroVad(variant)
        other = vad.probabilities(to_vad_input(store.load_audio(manifest["audio_key"].iloc[2])[0], rate))
        np.testing.assert_array_equal(vad.probabilities(x), vad.probabilities(x))
        assert len(other) and not np.array_equal(vad.probabilities(x)[:3], other[:3])
    np.testing.assert_array_equal(SileroVad("sequence").probabilities(x), onnx)
    np.testing.assert_allclose(SileroVad("jit").probabilities(x), onnx, atol=1e-3)
    assert SileroVad("jit").model_id != SileroVad("onnx").model_id != SileroVad("sequence").model_id


def test_resampling_to_16k_uses_soxr_and_keeps_the_time_axis(synthesized, tmp_path):
    store, manifest, _ = synthesized
    w, rate = store.load_audio(manifest["audio_key"].iloc[1])
    x = to_vad_input(w, rate)
    np.testing.assert_array_equal(x, soxr.resample(w.astype(np.float32) / 32768, rate, 16_000, quality="HQ"))
    np.testing.assert_array_equal(to_vad_input(w, 16_000), w.astype(np.float32) / 32768)  # no resampling at 16k
    # the same speech stored at 16 kHz keeps the same seconds (the grid maps to 22,050 Hz samples)
    padded = np.concatenate([np.zeros(9000, np.int16), w, np.zeros(5000, np.int16)])
    as16 = soxr.resample(padded.astype(np.float64), rate, 16_000).round().astype(np.int16)
    s = AudioStore(tmp_path / "s")
    keys = [(s.put_audio(padded, rate), len(padded), rate), (s.put_audio(as16, 16_000), len(as16), 16_000)]
    probs, stats = speech_probabilities(keys, s, SileroVad())
    assert stats.inferred == 2
    for t in (0.3, 0.5, 0.7):
        (a0, a1), (b0, b1) = (keep_bounds(probs[k], n, r, t) for k, n, r in keys)
        assert abs(a0 / rate - b0 / 16_000) <= 2 * 0.032 and abs(a1 / rate - b1 / 16_000) <= 2 * 0.032


def test_nonspeech_share_of_a_reduction_made_of_silence_is_all_nonspeech(synthesized):
    """Condition `longer` is `immediate` with whole frames of silence added around every
    request: its whole reduction is non-speech (each speech edge may move by a frame)."""
    store, manifest, _ = synthesized
    imm = replace_audio(manifest[manifest["condition"] == "immediate"].reset_index(drop=True), store,
                        lambda i, w: np.concatenate([np.zeros(4 * FIVE_FRAMES, np.int16), w,
                                                     np.zeros(2 * FIVE_FRAMES, np.int16)]))
    longer = replace_audio(imm, store, lambda i, w: np.concatenate(
        [np.zeros(6 * FIVE_FRAMES, np.int16), w, np.zeros(3 * FIVE_FRAMES, np.int16)])).assign(condition="longer")
    res = edge_replay(pd.concat([imm, longer], ignore_index=True), store, [0.3, 0.5, 0.7])
    table, sigs = nonspeech_share(res, [("longer", "immediate")])
    assert len(table) == 2 * 3 and set(table["system"]) == {"A", "F"} and (table["n_talks"] == 2).all()
    added_s = 2 * 9 * FIVE_FRAMES / RATE  # two requests per output
    np.testing.assert_allclose(table["reduction_s"], added_s)
    tolerance_s = 2 * 2 * ONE_FRAME / RATE  # two requests, two speech edges each
    assert (abs(table["nonspeech_s"] - added_s) <= tolerance_s).all()
    assert (abs(table["speech_s"]) <= tolerance_s).all()
    np.testing.assert_allclose(table["nonspeech_s"] + table["speech_s"], table["reduction_s"])
    assert ((table["share_pct"] - 100).abs() <= 100 * tolerance_s / added_s).all()
    assert (abs(table["edge_s"] - added_s) <= tolerance_s).all()  # all of it lies at the request edges
    assert sigs[0]["table"] == "nonspeech-share" and sigs[0]["reference"] == "longer"
    assert sigs[0]["rule"] == "immediate" and sigs[0]["threshold"] == 0.3


@pytest.mark.slow


def test_nothing_is_downloaded(tmp_path):
    """Load and run every bundled variant with the network switched off and empty caches
    (and leave torch's thread count as it was)."""
    script = textwrap.dedent("""
        import socket
        def refuse(*a, **k):
            raise OSError("network use attempted")
        socket.socket.connect = refuse
        socket.create_connection = refuse
        socket.getaddrinfo = refuse
        import numpy as np
        import torch
        from simulplay.vad import SileroVad
        torch.set_num_threads(3)
        x = np.sin(np.arange(16000) / 5).astype(np.float32) * 0.1
        for v in ("onnx", "sequence", "jit"):
            p = SileroVad(v).probabilities(x)
            assert len(p) == 32, len(p)
        assert torch.get_num_threads() == 3, "importing silero_vad changed torch's threads"
        print("offline ok")
    """)
    env = {"HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache"), "TORCH_HOME": str(tmp_path / "torch"),
           "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "offline ok" in proc.stdout
    assert not (tmp_path / "torch").exists()  # no torch.hub cache
    written = [p.name for p in tmp_path.rglob("*") if p.is_file()]  # onnxruntime keeps a device id here
    assert not [n for n in written if n.endswith((".onnx", ".jit", ".pt", ".pth", ".safetensors"))], written
