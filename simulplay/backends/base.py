"""The backend protocol: how simulplay talks to any TTS.

A backend is configured by a frozen dataclass registered by name (``@register_backend``);
``create()`` builds the runtime object, which loads its model once (``load``), warms up
(``warmup``) and then synthesizes. Three kinds fit the protocol:

* ``request`` backends (Piper, XTTS-v2) synthesize one request at a time:
  ``stream(text)`` yields audio chunks (int16 mono arrays) as they are produced;
* ``session`` backends (CosyVoice 3 bistream) keep state across feeds within a block:
  ``open_session()`` returns a :class:`Session` that receives text over time;
* ``served`` backends are request backends reached over HTTP.

The caller times everything: a chunk's time is when the backend yields it, measured
from the start of the request, so text preparation, inference and transfer of samples
are inside the clock while loading, warm-up, logging and storage are outside it.
Every backend declares its identity (package@version, voice/model id, model file hash,
every inference setting, seed, device, threads) and whether a seed reproduces samples.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from simulplay.core.errors import InputError
from simulplay.core.signature import settings_hash
from simulplay.core.specs import Registry, canonical_spec, params
from simulplay.grouping import Splitter

REUSE_POLICIES = ("never", "same-realization", "always")
#: Share of the 16-bit PCM bytes the store's FLAC keeps of synthesized speech (Piper's voices
#: at the store's fastest level keep a little over half; rounded up for a margin).
FLAC_SHARE = 0.6


class BackendError(RuntimeError):
    """A synthesis request failed inside a backend (recorded, never dropped)."""


@dataclass(frozen=True)
class BackendConfig:
    """Base of backend configs: fields are settings; ``create()`` builds the backend."""

    name: ClassVar[str] = ""
    kind: ClassVar[str] = "request"
    #: whether the same seed reproduces samples (XTTS: yes; Piper: no, onnxruntime noise)
    seed_reproducible: ClassVar[bool] = False
    #: settings that are file or folder paths (an experiment file resolves them against its folder)
    path_settings: ClassVar[tuple[str, ...]] = ()
    #: the usual sample rate of its audio (Hz), known before a model is loaded: it sizes the
    #: audio a run will store (:meth:`flac_bytes_per_s`)
    typical_sample_rate: ClassVar[int] = 22_050

    def create(self) -> Backend:  # pragma: no cover - interface
        """The runtime backend, not loaded yet (no files are read)."""
        raise NotImplementedError

    def voice_language(self) -> tuple[str, str] | None:
        """The language the voice speaks (an ISO 639-1 code such as ``en``) and the voice's
        name, when the config says; None when it does not (the text's language is then not
        compared with the voice's)."""
        return None

    def check(self) -> None:
        """Raise ValueError when a file or folder this config names is missing or unusable
        on this machine (``parse_backend`` and the backend's ``load()`` call it; building
        the config does not)."""

    def spec(self) -> str:
        return canonical_spec(self)

    def settings(self) -> dict[str, Any]:
        return params(self)

    def to_dict(self) -> dict[str, Any]:
        return {"backend": self.name, **self.settings()}

    def reproducible(self) -> bool:
        """Whether a rerun reproduces what timing depends on, so that identical requests may share
        audio across realizations by default (the class's ``seed_reproducible``; Piper: its presets)."""
        return self.seed_reproducible

    def signature_fields(self) -> dict[str, Any]:
        """Fields this configuration adds to the run's signature (none by default)."""
        return {}

    def flac_bytes_per_s(self) -> float:
        """Typical bytes per second of its audio as the store keeps it: 16-bit mono FLAC, about
        :data:`FLAC_SHARE` of the PCM bytes, at the config's ``sample_rate`` setting when it has
        one, else at ``typical_sample_rate``."""
        rate = getattr(self, "sample_rate", 0) or self.typical_sample_rate
        return float(rate) * 2 * FLAC_SHARE

    def reuse_policy(self) -> str:
        """The configured reuse policy, or the backend's default."""
        reuse = getattr(self, "reuse", "") or ("always" if self.reproducible() else "same-realization")
        if reuse not in REUSE_POLICIES:
            raise ValueError(f"reuse must be one of {', '.join(REUSE_POLICIES)}, got '{reuse}'")
        return reuse


BACKENDS: Registry[BackendConfig] = Registry("backend", group="simulplay.backends", key="backend")


def register_backend(name: str):
    """Class decorator adding a backend config to the registry under ``name``."""
    return BACKENDS.register(name)


class Backend(ABC):
    """A loaded backend. Subclasses implement the synthesis of one request."""

    config: BackendConfig
    sample_rate: int
    #: The seed of the synthesis noise this loaded backend draws from, when it draws a fresh
    #: one per load (Piper: from the OS, :mod:`simulplay.backends.piper`); recorded with
    #: every request it synthesizes (``noise_seed`` in the store's records). None: no such
    #: seed (a fixed seed in the identity, as XTTS's, or no noise).
    noise_seed: int | None = None

    def __init__(self, config: BackendConfig):
        self.config = config
        self.loaded = False

    @abstractmethod
    def load(self) -> None:
        """Load model files (outside the clock); starts with :meth:`check_files`."""

    def check_files(self) -> None:
        """The config's :meth:`~BackendConfig.check` as a one-line :class:`InputError`."""
        try:
            self.config.check()
        except ValueError as e:
            raise InputError.at(f"backend {self.config.name}", str(e), accepted=getattr(e, "accepted", None)
                                or "files and folders that exist on this machine") from e

    def warmup(self) -> None:
        """Synthesize once outside the clock so the first timed request is warm."""
        for _ in self.stream("Warm up."):
            pass

    @abstractmethod
    def stream(self, text: str) -> Iterator[np.ndarray]:
        """Yield int16 mono chunks of the request's audio as they are produced."""

    @abstractmethod
    def identity(self) -> dict[str, Any]:
        """Package@version, voice, model hash, settings, seed, device, threads."""

    def label(self) -> str:
        """The value of the manifest's ``backend`` column, e.g. ``piper:en_US-joe-medium``."""
        return self.config.name

    def splitter(self) -> Splitter:
        """The backend's input-limit splitter (none by default)."""
        return Splitter()

    def prepare(self, realization: int) -> None:
        """Called before each realization's requests (seeded backends reset here)."""

    def phonemizer(self) -> Callable[[str], list[list[str]]] | None:
        """The backend's own phonemizer: a text's sentences as the model reads them, each
        a list of phoneme symbols (None for a backend without one). Loads no model."""
        return None

    def close(self) -> None:
        """Release resources."""


class Session(ABC):
    """A continuing synthesis session (one block): text arrives over time, state persists.

    ``feed`` and ``finish`` may be called from another thread while ``chunks`` runs the
    model: ``chunks`` yields int16 mono audio as it is produced and ends after ``finish``
    once the model has drained.
    """

    @abstractmethod
    def feed(self, text: str) -> None:
        """Append text (with any separating space already included) to the session's input."""

    @abstractmethod
    def finish(self) -> None:
        """No more text: the model completes what it was fed."""

    @abstractmethod
    def chunks(self) -> Iterator[np.ndarray]:
        """Audio chunks as the model produces them."""


class SessionBackend(Backend):
    """A backend of kind ``session``: each block gets a fresh :class:`Session` (state reset
    between blocks, kept across feeds within one)."""

    @abstractmethod
    def open_session(self) -> Session:
        """A new session with fresh state and the seed reset (outside any clock)."""

    def stream(self, text: str) -> Iterator[np.ndarray]:
        raise BackendError(f"backend '{self.config.name}' synthesizes continuing sessions, not requests "
                           "(use `simulplay blocks`)")

    def warmup(self) -> None:
        session = self.open_session()
        session.feed("Warm up.")
        session.finish()
        for _ in session.chunks():
            pass


# ---- identity ------------------------------------------------------------------


def identity_key(identity: dict[str, Any]) -> str:
    """Hash of a backend identity: requests synthesized under it may be reused."""
    return settings_hash(identity)


def backend_summary(identity: dict[str, Any]) -> str:
    """``package@version/voice/settings-hash`` for signatures."""
    return f"{identity.get('package', '?')}/{identity.get('voice', '?')}/{identity_key(identity)}"


LengthFn = Callable[[str], int]
