"""A deterministic test backend: audio length from the text, failures on chosen words; a
recognizer and a VAD slow-down for interruption tests (``hang_after``: the next call blocks
until the process is signalled, so a test can interrupt a run at a known point)."""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from simulplay.backends.base import BACKENDS, Backend, BackendConfig, register_backend
from simulplay.recognizers.base import RECOGNIZERS, Decoded, Recognizer, RecognizerConfig, Word, register_recognizer
from simulplay.synthesis.clock_check import PROBE_TEXT


@dataclass(frozen=True)
class FakeSettings(BackendConfig):
    """``fail_on``: requests whose text contains this word raise; ``delay``: seconds per request;
    ``die_on``: the worker process kills itself (SIGKILL) on a request containing this word —
    only once if ``die_marker`` names a file that does not exist yet (it is created);
    ``gate``: a folder where each process, on its first request, leaves a file and then
    waits until ``gate_n`` processes have (so that all of them hold a request at once);
    ``hang_after``: after this many requests in a process, the next one blocks until the
    process is signalled (0: never)."""

    fail_on: str = ""
    delay: float = 0.0
    die_on: str = ""
    die_marker: str = ""
    reuse: str = ""
    gate: str = ""
    gate_n: int = 2
    hang_after: int = 0
    seed_reproducible = True

    def create(self) -> FakeBackend:
        return FakeBackend(self)


if "fake-test" not in BACKENDS.names():
    register_backend("fake-test")(FakeSettings)


class FakeBackend(Backend):
    sample_rate = 16_000
    loads = 0

    def load(self) -> None:
        FakeBackend.loads += 1
        self.loaded = True

    def warmup(self) -> None:
        pass

    def stream(self, text: str):
        c = self.config
        if text != PROBE_TEXT:  # the clock check's probe is not one of the run's requests
            self.calls = getattr(self, "calls", 0) + 1
        if c.hang_after and getattr(self, "calls", 0) > c.hang_after:
            hang()
        if c.gate and not getattr(self, "_through_gate", False):
            _pass_gate(Path(c.gate), c.gate_n)
            self._through_gate = True
        if c.die_on and c.die_on in text and _first_to_die(c.die_marker):
            os.kill(os.getpid(), signal.SIGKILL)
        if self.config.fail_on and self.config.fail_on in text:
            raise RuntimeError(f"refused '{self.config.fail_on}'")
        time.sleep(self.config.delay)
        for sentence in filter(None, text.replace("!", ".").split(".")):
            n = 800 * sum(ch.isalnum() for ch in sentence)
            if n:
                t = np.arange(n) / self.sample_rate
                yield (3000 * np.sin(2 * np.pi * 220 * t)).astype(np.int16)

    def identity(self) -> dict[str, Any]:
        return {"package": "fake@0", "voice": "sine", "settings": {"fail_on": self.config.fail_on}, "seed": 0,
                "device": "cpu"}


def hang() -> None:
    """Block until a signal ends the process (a KeyboardInterrupt raised in the sleep)."""
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        time.sleep(0.05)
    raise RuntimeError("nobody interrupted the hanging fake within 600 s")


@dataclass(frozen=True)
class FakeRecognizerSettings(RecognizerConfig):
    """One word per second of audio; after ``hang_after`` decodes the next one creates the
    file ``marker`` (if given) and blocks (0: never)."""

    hang_after: int = 0
    marker: str = ""

    def create(self) -> FakeRecognizer:
        return FakeRecognizer(self)


if "fake-asr" not in RECOGNIZERS.names():
    register_recognizer("fake-asr")(FakeRecognizerSettings)


class FakeRecognizer(Recognizer):
    decodes = 0

    def load(self) -> None:
        self.loaded = True

    def check_language(self, language: str) -> None:
        pass

    def decode(self, audio: np.ndarray, language: str) -> Decoded:
        FakeRecognizer.decodes += 1
        if self.config.hang_after and FakeRecognizer.decodes > self.config.hang_after:
            if self.config.marker:
                Path(self.config.marker).touch()
            hang()
        n = len(audio) // self.sample_rate
        return Decoded(" ".join("word" for _ in range(n)), [Word("word", k, k + 0.5) for k in range(n)], tokens=n)

    def identity(self) -> dict[str, Any]:
        return {"package": "fake-asr@0", "model": "words"}


def slow_vad(hang_after: int) -> None:
    """Make Silero VAD inference block after ``hang_after`` waveforms in this process."""
    from simulplay.vad.silero import SileroVad

    real = SileroVad.probabilities
    done = [0]

    def probabilities(self, audio):
        done[0] += 1
        if done[0] > hang_after:
            hang()
        return real(self, audio)

    SileroVad.probabilities = probabilities


def _pass_gate(folder: Path, n: int) -> None:
    from tests.support.checks import wait_until

    folder.mkdir(parents=True, exist_ok=True)
    (folder / str(os.getpid())).touch()
    wait_until(lambda: len(list(folder.iterdir())) >= n, f"{n} processes at the gate {folder}")


def _first_to_die(marker: str) -> bool:
    """Without a marker every worker dies; with one, only the worker that creates it
    (atomically, so two workers racing on the same word cannot both die)."""
    if not marker:
        return True
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True
