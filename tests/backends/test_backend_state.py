"""Backend configs without side effects, and backends that leave the process as they found it.

A config is a value: building it reads no file, so a saved config (``to_dict()``) can be
rebuilt on a machine that lacks its files; the files are checked by ``parse_backend``
(the command line's factory) and by ``load()``. A backend that seeds global generators,
sets torch's thread count or extends ``sys.path`` puts them back when it closes.
"""

import random
import sys

import numpy as np
import pytest

from simulplay.backends import backend_from_dict, parse_backend
from simulplay.backends.piper import PiperSettings
from simulplay.core.errors import InputError
from tests.support.fake_cosyvoice import make_checkout, make_model_and_prompt

# a module fixture of real runs takes seconds: every test here counts as slow (make test-fast leaves them out)
pytestmark = pytest.mark.slow


def test_a_piper_config_naming_a_missing_voice_builds_and_round_trips_without_looking():
    config = PiperSettings(voice="/nonexistent.onnx", intra_op_threads=2)
    saved = config.to_dict()
    assert saved["backend"] == "piper" and saved["voice"] == "/nonexistent.onnx"
    assert backend_from_dict(saved) == config
    assert parse_backend(config.spec(), check=False) == config
    backend = config.create()  # nothing is read yet
    with pytest.raises(InputError, match="backend piper: voice file /nonexistent.onnx does not exist"):
        backend.load()
    with pytest.raises(InputError, match="--backend 'piper:.*voice file /nonexistent.onnx does not exist"):
        parse_backend("piper:voice=/nonexistent.onnx")


def test_an_unknown_name_in_a_saved_config_lists_the_known_backends():
    with pytest.raises(InputError, match="unknown backend 'nope'.*piper"):
        backend_from_dict({"backend": "nope"})


def process_state(torch):
    """Torch threads, sys.path and the three generators' states (after a test's own seeding)."""
    return (torch.get_num_threads(), list(sys.path), random.getstate(), np.random.get_state()[1].tolist(),
            torch.random.get_rng_state().tolist())


def test_xtts_puts_back_torch_threads_and_the_generators_it_seeds(tiny_xtts_dir):
    import torch

    threads = 1 if torch.get_num_threads() != 1 else 2
    random.seed(11), np.random.seed(11), torch.manual_seed(11)  # a state no backend seed (5242) makes
    before = process_state(torch)
    backend = parse_backend(f"xtts:model_dir={tiny_xtts_dir},threads={threads},device=cpu").create()
    backend.load()
    assert torch.get_num_threads() == threads  # the setting is in force while the backend is loaded
    audio = np.concatenate(list(backend.stream("Guten Tag.")))
    assert len(audio) > 0 and np.random.get_state()[1].tolist() != before[3]  # seeded per request
    backend.close()
    assert process_state(torch) == before


def test_cosyvoice_takes_its_checkout_off_sys_path_and_restores_the_generators(tmp_path):
    import torch

    checkout = make_checkout(tmp_path / "CosyVoice")
    model, wav = make_model_and_prompt(tmp_path)
    random.seed(12), np.random.seed(12), torch.manual_seed(12)  # a state no backend seed (5242) makes
    before = process_state(torch)
    backend = parse_backend(f"cosyvoice:checkout={checkout},model_dir={model},prompt_wav={wav},"
                            "prompt_text=Hallo.").create()
    backend.load()
    assert str(checkout) in sys.path
    session = backend.open_session()  # seeds random, NumPy and torch
    session.feed("Hallo Welt.")
    session.finish()
    assert sum(len(c) for c in session.chunks()) > 0
    backend.close()
    assert process_state(torch) == before
