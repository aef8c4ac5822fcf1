"""DNSMOS and speaker similarity on real Piper and eSpeak NG audio, against the packages'
own functions run here (speechmos' ``dnsmos.run``; Resemblyzer's ``preprocess_wav`` and
``VoiceEncoder.embed_utterance``) and against what a voice must be: itself."""

import numpy as np
import pytest
import soxr

from simulplay.backends import parse_backend
from simulplay.scorers import dnsmos, similarity

pytestmark = pytest.mark.slow

TEXT = ("The city built a crossing near the school, and the children walk to class on their own now. "
        "Nobody expected the change to come so quickly, but the street is quieter than it has been for years.")
OTHER = "Last winter the river froze over for the first time in a decade, and the whole town went skating."


def speak(backend: str, text: str) -> tuple[np.ndarray, int]:
    b = parse_backend(backend).create()
    b.load()
    try:
        return np.concatenate(list(b.stream(text))).astype(np.int16), int(b.sample_rate)
    finally:
        b.close()


@pytest.fixture(scope="module")
def voices():
    return {"piper": speak("piper", TEXT), "piper2": speak("piper", OTHER), "espeak": speak("espeak", OTHER)}


def package_16k(samples: np.ndarray, rate: int) -> np.ndarray:
    return np.clip(soxr.resample(samples / 32768.0, rate, 16000, quality="HQ"), -1, 1).astype(np.float32)


def test_dnsmos_equals_speechmos_on_one_window(voices):
    from speechmos import dnsmos as package

    samples, rate = voices["piper2"]
    x = package_16k(samples, rate)
    assert len(x) <= int(9.01 * 16000)  # one window: the package's own function, as is
    want = package.run(x, 16000)
    got = dnsmos.score(samples, rate)
    for ours, theirs in zip(dnsmos.SCORES, ("sig_mos", "bak_mos", "ovrl_mos", "p808_mos")):
        assert got[ours] == pytest.approx(float(want[theirs]), abs=1e-6)
    assert got["dnsmos_windows"] == 1 and 1 <= got["dnsmos_ovrl"] <= 5


def test_dnsmos_of_long_audio_is_the_mean_over_whole_windows(voices):
    from speechmos import dnsmos as package

    samples = np.concatenate([voices["piper"][0], voices["piper2"][0]])
    rate = voices["piper"][1]
    x = package_16k(samples, rate)
    w = int(9.01 * 16000)
    assert w < len(x) < 3 * w
    # whole windows from the start, the last one ending with the audio
    starts = [0, w] if len(x) > 2 * w else [0]
    starts = starts + [len(x) - w] if starts[-1] + w < len(x) else starts
    want = np.mean([float(package.run(x[s:s + w], 16000)["ovrl_mos"]) for s in starts])
    got = dnsmos.score(samples, rate)
    assert got["dnsmos_ovrl"] == pytest.approx(want, abs=1e-6) and got["dnsmos_windows"] == len(starts)


def test_a_clip_against_itself_scores_one_and_equals_resemblyzer(voices):
    from resemblyzer import VoiceEncoder, preprocess_wav

    samples, rate = voices["piper"]
    e = similarity.embed(samples, rate)
    assert similarity.cosine(e, e) == pytest.approx(1.0, abs=1e-6)
    wav = preprocess_wav(package_16k(samples, rate).astype(np.float64), source_sr=16000)
    want = VoiceEncoder("cpu", verbose=False).embed_utterance(wav.astype(np.float32))
    assert np.allclose(e, want, atol=1e-5)


def test_piper_against_espeak_scores_below_piper_against_piper(voices):
    piper, piper2, espeak = (similarity.embed(*voices[k]) for k in ("piper", "piper2", "espeak"))
    same_voice = similarity.cosine(piper, piper2)  # Piper, two different sentences
    other_voice = similarity.cosine(piper, espeak)  # eSpeak NG reading the second sentence
    assert other_voice < same_voice - 0.1, (same_voice, other_voice)


def test_too_short_to_embed_is_none_never_zero(voices):
    samples, rate = voices["piper"]
    short = samples[: int(0.5 * rate)]
    assert similarity.embed(short, rate) is None
    assert np.isnan(similarity.cosine(None, similarity.embed(samples, rate)))
