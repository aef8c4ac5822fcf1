"""A small stand-in CosyVoice checkout: ``cosyvoice/cli/cosyvoice.py`` with the same
bistream generator interface as the real one (``AutoModel``, ``add_zero_shot_spk``,
``inference_zero_shot(text_generator, …)`` yielding ``{"tts_speech": [1, n] float}``).

Its "model" keeps state across feeds: one 10 ms tone segment per letter, the tone's
phase running over the whole session, plus noise from NumPy's global generator. The
flattened audio therefore depends only on the flattened text and the seed, whatever
the feed boundaries — as the paper found for CosyVoice 3. Each piece is answered
``DELAY`` seconds after it is received; ``LOG`` records, per session, every piece and
the ``time.perf_counter()`` at which the generator delivered it.
"""

from pathlib import Path

MODULE = '''
import time

import numpy as np

DELAY = 0.05
RATE = 24000
LOG = []


class AutoModel:
    sample_rate = RATE

    def __init__(self, model_dir, fp16=False, **kwargs):
        self.model_dir, self.fp16, self.speakers = model_dir, fp16, {}

    def add_zero_shot_spk(self, prompt_text, prompt_wav, zero_shot_spk_id):
        self.speakers[zero_shot_spk_id] = (prompt_text, prompt_wav)
        return True

    def inference_zero_shot(self, tts_text, prompt_text, prompt_wav, zero_shot_spk_id="", stream=False,
                            speed=1.0, text_frontend=True):
        if zero_shot_spk_id not in self.speakers:
            raise KeyError(zero_shot_spk_id)
        session = {"pieces": [], "times": [], "stream": stream, "text_frontend": text_frontend}
        LOG.append(session)
        position = 0  # samples produced so far in this session: the state kept across feeds
        for piece in tts_text:
            session["pieces"].append(piece)
            session["times"].append(time.perf_counter())
            n = 240 * sum(ch.isalnum() for ch in piece)
            time.sleep(DELAY)
            t = (position + np.arange(n)) / RATE
            position += n
            wav = 0.2 * np.sin(2 * np.pi * 220 * t) + np.random.uniform(-0.01, 0.01, n)
            yield {"tts_speech": wav[None, :].astype(np.float32)}
'''


def make_checkout(folder: Path, *, broken: bool = False) -> Path:
    """A checkout folder; ``broken``: its module fails to import like one missing its requirements."""
    cli = folder / "cosyvoice" / "cli"
    cli.mkdir(parents=True)
    (folder / "third_party" / "Matcha-TTS").mkdir(parents=True)
    (folder / "cosyvoice" / "__init__.py").write_text("")
    (cli / "__init__.py").write_text("")
    body = "import hyperpyyaml_not_installed\n" if broken else MODULE
    (cli / "cosyvoice.py").write_text(body)
    return folder


def make_model_and_prompt(folder: Path) -> tuple[Path, Path]:
    import numpy as np
    import soundfile as sf

    model = folder / "Fun-CosyVoice3-0.5B-2512"
    model.mkdir(parents=True)
    (model / "llm.pt").write_bytes(b"not real weights")
    wav = folder / "prompt.wav"
    sf.write(wav, 0.1 * np.sin(2 * np.pi * 150 * np.arange(16_000) / 16_000), 16_000)
    return model, wav
