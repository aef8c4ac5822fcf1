"""A tiny, randomly initialised XTTS-v2 checkpoint built at test time (never committed).

The real XTTS-v2 architecture with a 2-layer, 64-channel GPT, 4 heads, at most 12 audio
tokens per request and a character-level ``vocab.json`` made with the ``tokenizers``
package (XTTS's special tokens ``[STOP] [UNK] [SPACE] [START]`` and one ``[lang]`` token
per language). ``speakers_xtts.pth`` holds "Ana Florence" (latents of a 220 Hz tone) and
``model.pth`` pickles the config object, as the published checkpoint does. About 90 MB,
built in about 15 s on 2 cores.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

CHARS = "abcdefghijklmnopqrstuvwxyzäöüßàâçéèêëîïôûùÿœæáíóúñ0123456789.,!?;:'\"-()"
MAX_AUDIO_TOKENS = 12


def build_tiny_xtts(folder: Path, *, seed: int = 0) -> Path:
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from TTS.tts.configs.xtts_config import XttsConfig
    from TTS.tts.layers.xtts.tokenizer import VoiceBpeTokenizer
    from TTS.tts.models.xtts import Xtts, _legacy_safe_globals

    folder.mkdir(parents=True, exist_ok=True)
    cfg = XttsConfig()
    special = ["[STOP]", "[UNK]", "[SPACE]", "[START]"] + [f"[{lang}]" for lang in cfg.languages]
    vocab = {t: i for i, t in enumerate(dict.fromkeys(special + list(CHARS)))}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.add_special_tokens(special)
    tok.save(str(folder / "vocab.json"))
    a = cfg.model_args
    a.gpt_layers, a.gpt_n_model_channels, a.gpt_n_heads, a.decoder_input_dim = 2, 64, 4, 64
    a.gpt_max_audio_tokens = MAX_AUDIO_TOKENS
    a.gpt_num_audio_tokens, a.gpt_start_audio_token, a.gpt_stop_audio_token = 1026, 1024, 1025
    a.gpt_use_perceiver_resampler = True
    cfg.save_json(str(folder / "config.json"))
    torch.manual_seed(seed)
    model = Xtts(cfg)
    model.tokenizer = VoiceBpeTokenizer(folder / "vocab.json")
    model.init_models()
    model.eval()
    with _legacy_safe_globals():  # pickle the config under its published module path
        torch.save({"model": model.state_dict(), "config": cfg}, folder / "model.pth")
    tone = torch.tensor(0.3 * np.sin(2 * np.pi * 220 * np.arange(2 * 22_050) / 22_050), dtype=torch.float32)[None]
    voice = {"gpt_cond_latent": model.get_gpt_cond_latents(tone, 22_050),
             "speaker_embedding": model.get_speaker_embedding(tone, 22_050)}
    torch.save({"Ana Florence": voice}, folder / "speakers_xtts.pth")
    return folder
