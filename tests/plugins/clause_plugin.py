"""A plugin as a user writes it (tests/plugins/test_plugins.py installs it, or names its file
with ``--plugin``): a grouping rule ``clause`` that releases at clause boundaries (a comma,
semicolon, colon or sentence end) and a backend ``tone`` that answers every request with a
deterministic 220 Hz tone, 0.05 s per letter or digit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from simulplay.backends.base import Backend, BackendConfig, register_backend
from simulplay.grouping import Group, Rule, register_rule
from simulplay.grouping.rules import buffered_groups

__version__ = "0.1.0"

CLAUSE_ENDS = (",", ";", ":", ".", "?", "!")


@register_rule("clause")
@dataclass(frozen=True)
class Clause(Rule):
    """Release when the pending text ends a clause, or ``cap`` seconds after its first update."""

    cap: float = 4.0

    def group(self, stream) -> list[Group]:
        return buffered_groups(stream, self.cap, lambda text: text.rstrip().endswith(CLAUSE_ENDS), "punct")


@register_backend("tone")
@dataclass(frozen=True)
class ToneConfig(BackendConfig):
    """A deterministic tone: ``per_char`` seconds per letter or digit at ``hz``."""

    hz: float = 220.0
    per_char: float = 0.05
    seed_reproducible = True

    def create(self) -> ToneBackend:
        return ToneBackend(self)


class ToneBackend(Backend):
    sample_rate = 16_000

    def load(self) -> None:
        self.loaded = True

    def warmup(self) -> None:
        pass

    def stream(self, text: str):
        n = int(self.sample_rate * self.config.per_char * sum(ch.isalnum() for ch in text))
        if n:
            t = np.arange(n) / self.sample_rate
            yield (3000 * np.sin(2 * np.pi * self.config.hz * t)).astype(np.int16)

    def identity(self) -> dict[str, Any]:
        return {"package": f"tone@{__version__}", "voice": "sine", "settings": self.config.settings(), "seed": 0,
                "device": "cpu"}
