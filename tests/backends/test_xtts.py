"""XTTS-v2 through coqui-tts on a tiny random checkpoint built at test time.

The real loading and inference path runs: config.json → Xtts → checkpoint (legacy pickle,
as published) → stock speaker latents → ``Xtts.inference`` with every setting explicit.
"""

import shutil

import numpy as np
import pytest
import soundfile as sf

from simulplay.backends import parse_backend
from simulplay.backends.base import BackendError
from simulplay.backends.xtts import MODEL_FILES, float_to_int16
from simulplay.core.errors import InputError
from simulplay.core.provenance import _sha256_cached, file_sha256
from simulplay.grouping import parse_rule
from simulplay.manifest import read_manifest
from simulplay.store.store import AudioStore
from simulplay.synthesis.run import synthesize_to_manifest
from tests.support.factories import stream

NUMBERS = "Es waren 1234567 Leute da. " * 8  # 216 characters, over 1,500 tokens once numbers are spelled out


def collect(backend, text):
    return np.concatenate(list(backend.stream(text)))


@pytest.fixture(scope="module")
def xtts(tiny_xtts_dir):
    before = file_sha256(tiny_xtts_dir / "model.pth")
    backend = parse_backend(f"xtts:model_dir={tiny_xtts_dir}").create()
    backend.load()
    backend.warmup()
    _sha256_cached.cache_clear()
    assert file_sha256(tiny_xtts_dir / "model.pth") == before  # the legacy checkpoint is not rewritten
    yield backend
    backend.close()


@pytest.mark.slow
def test_seed_reset_before_each_request_reproduces_the_samples(xtts):
    first = collect(xtts, "Guten Tag, wie geht es?")
    c = xtts.config
    # the same call without the reset draws from the advanced generators: different samples
    unseeded = xtts.model.inference("Guten Tag, wie geht es?", c.language, *xtts.latents, temperature=c.temperature,
                                    length_penalty=c.length_penalty, repetition_penalty=c.repetition_penalty,
                                    top_k=c.top_k, top_p=c.top_p, do_sample=True, num_beams=1, speed=1.0,
                                    enable_text_splitting=False)
    again = collect(xtts, "Guten Tag, wie geht es?")
    assert first.dtype == np.int16 and len(first) > 0
    assert np.array_equal(first, again)
    assert not np.array_equal(first, float_to_int16(np.asarray(unseeded["wav"])))


@pytest.mark.slow
def test_splitter_counts_tokens_as_the_model_receives_them(xtts, tiny_xtts_dir, monkeypatch):
    planner = parse_backend(f"xtts:model_dir={tiny_xtts_dir}").create()  # unloaded, as at planning time
    received = []
    encode = xtts.model.tokenizer.encode
    monkeypatch.setattr(xtts.model.tokenizer, "encode", lambda txt, lang: received.append(encode(txt, lang))
                        or received[-1])
    texts = ["Dr. Müller zahlt 12,50 € am 3. Mai.", "  GROSS und klein!  ", "Es waren 1999 Leute da."]
    for text in texts:
        collect(xtts, text)
    model_counts = [len(ids) for ids in received[1::2]]  # each request: the guard's count, then the model's
    assert model_counts == [planner.count_tokens(t) for t in texts]
    assert model_counts[2] > len(texts[2])  # numbers are spelled out before counting


@pytest.mark.slow
def test_splitter_keeps_character_and_token_limits_and_the_joined_text(xtts):
    splitter = xtts.splitter()
    assert splitter.describe() == "max-chars=253,max-xtts-tokens=401"
    assert len(NUMBERS) <= 253 and xtts.count_tokens(NUMBERS) > 401
    words = "Ein ganz gewöhnlicher Satz ohne Zahlen. " * 20  # 800 characters, under 402 tokens per 253
    for text in (NUMBERS, words):
        pieces = splitter.split(text)
        assert len(pieces) > 1 and " ".join(p for p, _ in pieces) == text
        assert all(len(p) <= 253 and xtts.count_tokens(p) <= 401 for p, _ in pieces)


@pytest.mark.slow
def test_token_guard_refuses_402_tokens_before_inference(xtts, monkeypatch):
    calls = []
    monkeypatch.setattr(xtts.model, "inference", lambda *a, **k: calls.append(1))
    with pytest.raises(BackendError, match=r"request has \d+ XTTS text tokens; the model accepts fewer than 402"):
        collect(xtts, NUMBERS)
    assert calls == []


@pytest.mark.slow
def test_manifest_durations_from_samples_reuse_always_and_a_recorded_token_failure(tmp_path, xtts, tiny_xtts_dir):
    config = parse_backend(f"xtts:model_dir={tiny_xtts_dir}")
    assert config.reuse_policy() == "always"
    s = [stream([0.0, 1.0, 2.0], ["Guten Morgen.", "Wie geht es?", NUMBERS.strip()], source_s=4.0)]
    rules = [parse_rule("immediate"), parse_rule("timer:w=0")]  # identical requests under both rules
    store = AudioStore(tmp_path / "store")
    res = synthesize_to_manifest(s, rules, config, store, tmp_path / "m.parquet", realizations=2,
                                 max_chars=1000)
    m, meta = read_manifest(tmp_path / "m.parquet")
    ok = m[m["error"] == ""]
    assert res.stats.synthesized == 2 and len(ok) == 8 and ok["reused"].sum() == 6
    assert (ok["sample_rate"] == 24_000).all() and (ok["audio_s"] == ok["n_samples"] / 24_000).all()
    samples, rate = store.load_audio(ok.loc[ok["text"] == "Guten Morgen.", "audio_key"].iloc[0])
    assert rate == 24_000 and np.array_equal(samples, collect(xtts, "Guten Morgen."))  # another instance, same seed
    failed = m[m["error"] != ""]
    assert len(failed) == 4 and failed["error"].str.contains("XTTS text tokens").all()
    ident = meta["identity"]
    assert ident["seed"] == 5242 and ident["device"].startswith("cpu:") and ident["sample_rate"] == 24_000
    assert set(ident["model_sha256"]) == set(MODEL_FILES) and ident["package"].startswith("coqui-tts@")
    assert ident["settings"]["temperature"] == 0.75 and ident["settings"]["repetition_penalty"] == 10
    assert set(m["backend"]) == {"xtts:Ana Florence"}


@pytest.mark.slow
def test_cloned_voice_from_a_reference_recording(tmp_path, tiny_xtts_dir):
    wav = tmp_path / "ref.wav"
    t = np.arange(16_000 * 2) / 16_000
    sf.write(wav, 0.3 * np.sin(2 * np.pi * 180 * t), 16_000)
    backend = parse_backend(f"xtts:model_dir={tiny_xtts_dir},speaker_wav={wav}").create()
    backend.load()
    audio = collect(backend, "Hallo.")
    assert len(audio) > 0 and backend.label() == "xtts:clone:ref"
    ident = backend.identity()
    assert ident["voice_sha256"] == file_sha256(wav) and ident["clone_settings"]["gpt_cond_len"] > 0


@pytest.mark.slow
def test_unknown_speaker_names_the_stock_speakers(tiny_xtts_dir):
    backend = parse_backend(f"xtts:model_dir={tiny_xtts_dir},speaker=Nobody").create()
    with pytest.raises(InputError, match="speakers_xtts.pth, field 'speaker': has no speaker 'Nobody'.*Ana Florence"):
        backend.load()


@pytest.mark.slow
@pytest.mark.parametrize("missing", MODEL_FILES)
def test_incomplete_model_folder_names_the_missing_file(tmp_path, tiny_xtts_dir, missing):
    folder = tmp_path / "xtts"
    folder.mkdir()
    for name in MODEL_FILES:
        if name != missing:
            shutil.copy(tiny_xtts_dir / name, folder / name) if name == "config.json" else (folder / name).touch()
    with pytest.raises(InputError, match=f"has no {missing} .*coqui/XTTS-v2 model repository"):
        parse_backend(f"xtts:model_dir={folder}")


def test_missing_model_folder_is_a_one_line_error(cli, tmp_path):
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"talk_id": "t", "system": "A", "source_s": 2, "updates": [{"time_s": 0, "text": "Hallo."}]}\n')
    proc = cli("synth", trace, "--rule", "immediate", "--backend", f"xtts:model_dir={tmp_path / 'none'}",
               "--store", tmp_path / "store", "--out", tmp_path / "m.parquet")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "is not a folder" in proc.stderr
    assert "config.json, model.pth, vocab.json and speakers_xtts.pth" in proc.stderr
    assert not (tmp_path / "m.parquet").exists()


@pytest.mark.slow
def test_synth_command_with_xtts(cli, tmp_path, tiny_xtts_dir):
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"talk_id": "t", "system": "A", "source_s": 3, "updates": '
                     '[{"time_s": 0, "text": "Hallo."}, {"time_s": 1, "text": "Tschüss."}]}\n')
    proc = cli("synth", trace, "--rule", "immediate", "--backend", f"xtts:model_dir={tiny_xtts_dir}",
               "--store", tmp_path / "store", "--out", tmp_path / "m.parquet", "--quiet")
    assert proc.returncode == 0, proc.stderr
    m, meta = read_manifest(tmp_path / "m.parquet")
    assert len(m) == 2 and (m["error"] == "").all() and (m["service_s"] > 0).all()
    assert meta["signature"]["splitter"] == "max-chars=253,max-xtts-tokens=401"


@pytest.mark.slow
def test_experiment_file_selects_xtts_and_checks_its_folder(tmp_path, tiny_xtts_dir):
    from simulplay.workflows.experiment import load_experiment

    text = ('name = "x"\ntraces = ["t.jsonl"]\na = "A"\nf = "F"\nrules = ["immediate"]\nreference = "immediate"\n'
            '[backend]\nname = "xtts"\nmodel_dir = "{}"\nspeaker = "Ana Florence"\n')
    (tmp_path / "t.jsonl").write_text('{"talk_id": "t", "system": "A", "source_s": 2, "updates": '
                                      '[{"time_s": 0, "text": "Hallo."}]}\n')
    (tmp_path / "exp.toml").write_text(text.format(tiny_xtts_dir))
    assert load_experiment(tmp_path / "exp.toml").backends[0].spec().startswith(f"xtts:model_dir={tiny_xtts_dir},")
    (tmp_path / "exp.toml").write_text(text.format(tmp_path / "missing"))
    with pytest.raises(InputError, match="exp.toml: table 'backend'.*is not a folder.*coqui/XTTS-v2"):
        load_experiment(tmp_path / "exp.toml")
