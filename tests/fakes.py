"""A deterministic test backend: audio length from the text, failures on chosen words."""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from simulplay.backends.base import BACKENDS, Backend, BackendConfig, register_backend


@dataclass(frozen=True)
class FakeSettings(BackendConfig):
    """``fail_on``: requests whose text contains this word raise; ``delay``: seconds per request;
    ``die_on``: the worker process kills itself (SIGKILL) on a request containing this word —
    only once if ``die_marker`` names a file that does not exist yet (it is created);
    ``gate``: a folder where each process, on its first request, leaves a file and then
    waits until ``gate_n`` processes have (so that all of them hold a request at once)."""

    fail_on: str = ""
    delay: float = 0.0
    die_on: str = ""
    die_marker: str = ""
    reuse: str = ""
    gate: str = ""
    gate_n: int = 2
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


def _pass_gate(folder: Path, n: int) -> None:
    from tests.checks import wait_until

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
