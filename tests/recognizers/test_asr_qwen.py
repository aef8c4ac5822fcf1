"""The Qwen3-ASR adapter and the forced aligner against fakes (no weights are available
offline): settings, language names, capacity detection, window offsets, and word times
from the aligner. Missing weights are one-line errors (see test_asr.py for the CLI)."""

import sys
from types import ModuleType, SimpleNamespace

import numpy as np
import pytest

from simulplay.core.errors import InputError
from simulplay.recognizers import parse_recognizer
from simulplay.recognizers import qwen as qwen_module
from simulplay.recognizers.base import SAMPLE_RATE
from simulplay.recognizers.windows import WindowRule, transcribe_waveform
from simulplay.workflows.diagnostics import forced_aligner


class FakeQwen3ASR:
    """The surface of qwen_asr.Qwen3ASRModel the adapter uses: ``transcribe`` and the token
    counter its loader attaches. One token per 0.25 s of audio; one word per second."""

    def __init__(self):
        self._simulplay_tokens = []
        self.languages = []

    def transcribe(self, audio, context, language):
        wav, rate = audio
        assert rate == SAMPLE_RATE and context == ""
        self.languages.append(language)
        self._simulplay_tokens.append(len(wav) // (SAMPLE_RATE // 4))
        words = " ".join(f"w{int(wav[i])}" for i in range(0, len(wav), SAMPLE_RATE))
        return [SimpleNamespace(text=" " + words + " ", language=language)]


class FakeAligner:
    def align(self, audio, text, language):
        wav, _ = audio
        items = [SimpleNamespace(text=w, start_time=0.5 * k, end_time=0.5 * k + 0.25)
                 for k, w in enumerate(text.split())]
        return [SimpleNamespace(items=items)]


@pytest.fixture(autouse=True)
def qwen_asr_stand_in(monkeypatch):
    """The qwen extra's check finds a module named qwen_asr (the package is not installed here;
    the adapter's loaders are replaced by fakes)."""
    monkeypatch.setitem(sys.modules, "qwen_asr", ModuleType("qwen_asr"))


@pytest.fixture
def weights(tmp_path, monkeypatch):
    folder = tmp_path / "qwen"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    fake = FakeQwen3ASR()
    monkeypatch.setattr(qwen_module, "_load_asr", lambda config: fake)
    return folder, fake


def ramp(seconds):
    return np.arange(int(seconds * SAMPLE_RATE), dtype=np.float32)


def test_qwen_words_have_no_times_and_capacity_splits_the_window(weights):
    folder, fake = weights
    rec = parse_recognizer(f"qwen3-asr:model={folder},max_new_tokens=30").create()
    rec.check_language("de")
    pieces = transcribe_waveform(rec, ramp(10), "de", WindowRule(window_s=10))
    assert [(p.level, p.start, p.end, p.tokens) for p in pieces] == [(1, 0, 80_000, 20), (1, 80_000, 160_000, 20)]
    assert fake._simulplay_tokens == [20] and fake.languages == ["German"] * 3  # the last decode's count
    assert pieces[1].text == "w80000 w96000 w112000 w128000 w144000"
    assert all(np.isnan(w.end_s) for p in pieces for w in p.words)
    ident = rec.identity()
    assert ident["package"].startswith("qwen-asr@") and ident["model"] == "qwen" and ident["max_new_tokens"] == 30
    assert len(ident["model_sha256"]) == 64


def test_forced_aligner_times_replace_the_recognizer_s_and_get_the_window_offset(weights, tmp_path, monkeypatch):
    folder, _ = weights
    aligner_dir = tmp_path / "aligner"
    aligner_dir.mkdir()
    (aligner_dir / "config.json").write_text("{}")
    aligner = forced_aligner(aligner_dir)
    monkeypatch.setattr(qwen_module.ForcedAligner, "load", lambda self: FakeAligner())
    loaded = aligner.load()
    rec = parse_recognizer(f"qwen3-asr:model={folder}").create()

    def align(audio, text):
        return qwen_module.align_words(loaded, audio, text, "en")

    pieces = transcribe_waveform(rec, ramp(6), "en", WindowRule(window_s=4), aligner=align)
    second = pieces[1]
    assert [w.text for w in second.words] == ["w64000", "w80000"]
    assert [(w.start_s, w.end_s) for w in second.words] == [(4.0, 4.25), (4.5, 4.75)]


def test_unknown_language_codes_are_refused(weights):
    folder, _ = weights
    rec = parse_recognizer(f"qwen3-asr:model={folder}").create()
    with pytest.raises(ValueError, match="unknown language code 'xx'"):
        rec.check_language("xx")


@pytest.mark.parametrize("spec,fragment", [
    ("qwen3-asr", "needs model=PATH"),
    ("qwen3-asr:model=/no/such/folder", "model folder /no/such/folder does not exist"),
    ("qwen3-asr:model={folder},dtype=int4", "dtype must be one of float32, bfloat16, float16"),
    ("qwen3-asr:model={folder},max_new_tokens=0", "max_new_tokens must be ≥ 1"),
])
def test_bad_qwen_settings(weights, spec, fragment):
    folder, _ = weights
    with pytest.raises(InputError, match=fragment):
        parse_recognizer(spec.format(folder=folder))


def test_a_folder_without_config_is_not_weights(tmp_path):
    with pytest.raises(InputError, match="has no config.json"):
        parse_recognizer(f"qwen3-asr:model={tmp_path}")
    with pytest.raises(InputError, match="--aligner .*has no config.json"):
        forced_aligner(tmp_path)
