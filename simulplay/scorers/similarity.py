"""Speaker similarity: cosines of Resemblyzer's GE2E speaker embeddings.

Audio is resampled to 16 kHz with soxr (quality HQ, :func:`~simulplay.scorers.dnsmos.to_16k`),
then prepared as Resemblyzer prepares it (``preprocess_wav``: level raised to −30 dBFS when
quieter, long silences removed with its webrtcvad rule) and embedded with
``VoiceEncoder.embed_utterance`` (partials of 1.6 s, averaged, L2-normed), on the CPU, with the
``pretrained.pt`` the wheel bundles. Embeddings have unit length, so a cosine is their dot
product: 1 for the same audio, lower for less similar voices.

Audio with less than :data:`MIN_SPEECH_S` of speech left after the silence removal (three
quarters of one 1.6 s partial, the coverage Resemblyzer itself requires of a partial) is too
short to embed: :func:`embed` returns ``None`` and callers count it; it is never scored 0.
"""

from __future__ import annotations

import warnings

import numpy as np

from simulplay.scorers.dnsmos import SR, to_16k

PARTIAL_S = 1.6
MIN_SPEECH_S = 0.75 * PARTIAL_S
_encoder = None


def encoder():
    """The GE2E encoder (loaded once, on the CPU, from the wheel's bundled weights)."""
    global _encoder
    if _encoder is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            from resemblyzer import VoiceEncoder

        _encoder = VoiceEncoder("cpu", verbose=False)
    return _encoder


def speech(samples: np.ndarray, rate: int) -> np.ndarray:
    """The 16 kHz float samples Resemblyzer embeds: resampled, level-normalized, long silences removed."""
    with warnings.catch_warnings():  # resemblyzer imports scipy.ndimage.morphology (deprecated, still there)
        warnings.simplefilter("ignore", DeprecationWarning)
        from resemblyzer import preprocess_wav

    x = to_16k(samples, rate).astype(np.float64)
    return preprocess_wav(x, source_sr=SR) if len(x) else x


def embed(samples: np.ndarray, rate: int) -> np.ndarray | None:
    """The unit-length GE2E embedding (256 floats) of mono audio at ``rate`` Hz, or ``None``
    when it holds less than :data:`MIN_SPEECH_S` of speech (module docstring)."""
    x = speech(samples, rate)
    if len(x) < MIN_SPEECH_S * SR:
        return None
    return np.asarray(encoder().embed_utterance(x.astype(np.float32)), np.float64)


def cosine(a: np.ndarray | None, b: np.ndarray | None) -> float:
    """Cosine of two embeddings; NaN when either is missing (too short to embed)."""
    if a is None or b is None:
        return float("nan")
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def signature() -> dict[str, str]:
    """What shaped the similarities: the package, its model and the speech floor."""
    from importlib.metadata import version

    return {"similarity": f"resemblyzer-{version('Resemblyzer')}-ge2e", "similarity_min_speech_s": f"{MIN_SPEECH_S:g}"}
