"""Process-wide state a backend changes, saved when it loads and restored when it closes.

XTTS-v2 has no seed argument and CosyVoice seeds per session, so those backends seed the
global generators of ``random``, NumPy and torch before synthesizing; XTTS may also set
torch's intra-op thread count, and CosyVoice puts its source checkout on ``sys.path``.
A backend takes a :class:`ProcessState` snapshot in ``load()`` before changing anything
and restores it in ``close()``, so the process continues as it was before the backend
was used: same torch thread count, same generator states, same ``sys.path``.
"""

from __future__ import annotations

import random
import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class ProcessState:
    """Generator states, torch's thread count and the ``sys.path`` entries added since."""

    random_state: Any
    numpy_state: Any
    torch: Any = None  # the torch module, when the backend uses it
    torch_threads: int | None = None
    torch_rng: Any = None
    added_paths: list[str] = field(default_factory=list)

    @classmethod
    def save(cls, torch: Any = None) -> ProcessState:
        """Snapshot now (pass the torch module when the backend seeds or threads it)."""
        state = cls(random.getstate(), np.random.get_state(), torch)
        if torch is not None:
            state.torch_threads = torch.get_num_threads()
            state.torch_rng = torch.random.get_rng_state()
        return state

    def add_path(self, path: str) -> None:
        """Put ``path`` first on ``sys.path`` (unless it is there already) until :meth:`restore`."""
        if path not in sys.path:
            sys.path.insert(0, path)
            self.added_paths.append(path)

    def restore(self) -> None:
        """Put back the generator states and thread count; take the added paths off ``sys.path``."""
        random.setstate(self.random_state)
        np.random.set_state(self.numpy_state)
        if self.torch is not None:
            self.torch.set_num_threads(self.torch_threads)
            self.torch.random.set_rng_state(self.torch_rng)
        for path in self.added_paths:
            if path in sys.path:
                sys.path.remove(path)
        self.added_paths.clear()
