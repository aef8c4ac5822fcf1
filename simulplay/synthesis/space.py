"""Will the store hold the audio a run is about to write? An estimate made before synthesis.

Each request the store lacks will be about ``len(text) / CHARS_PER_S`` seconds of speech,
stored at the backend's typical FLAC bytes per second
(:meth:`~simulplay.backends.base.BackendConfig.flac_bytes_per_s`). When the free space of
the store's file system is below that estimate, :func:`warn_if_short` warns (a
:class:`~simulplay.core.errors.SimulplayWarning`, which the command line prints as one line); the
run goes on, keeps every request it finishes, and a full disk ends it in a one-line error
saying what was kept.
"""

from __future__ import annotations

import shutil
import warnings
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from simulplay.backends.base import BackendConfig
from simulplay.core.errors import SimulplayWarning
from simulplay.store.store import AudioStore

#: Characters of request text per second of speech (Piper's English voices speak a little
#: more; fewer characters per second would mean more audio, so this errs towards warning).
CHARS_PER_S = 14.0


@dataclass(frozen=True)
class SpaceEstimate:
    """Requests to synthesize, their estimated seconds and bytes of stored audio, and the
    free bytes of the store's file system."""

    requests: int
    audio_s: float
    needed_bytes: int
    free_bytes: int

    @property
    def short(self) -> bool:
        return self.requests > 0 and self.free_bytes < self.needed_bytes


def estimate_space(plan: pd.DataFrame, config: BackendConfig, store: AudioStore) -> SpaceEstimate:
    """The estimate for the planned requests that have no record in ``store`` yet."""
    todo = plan.drop_duplicates("key")
    todo = todo[~todo["key"].isin(store.completed_keys())]
    audio_s = float(todo["text"].astype(str).str.len().sum()) / CHARS_PER_S
    free = shutil.disk_usage(_existing(store.root)).free
    return SpaceEstimate(len(todo), audio_s, int(audio_s * config.flac_bytes_per_s()), int(free))


def _existing(path: Path) -> Path:
    """``path`` or its nearest existing ancestor: a store not written yet has no folder, and
    its file system is the one its first write will create the folder on."""
    p = Path(path)
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def warn_if_short(plan: pd.DataFrame, config: BackendConfig, store: AudioStore) -> SpaceEstimate:
    """Warn when the store's free space is below the estimated audio of the run."""
    est = estimate_space(plan, config, store)
    if est.short:
        warnings.warn(f"store {store.root}: {_mb(est.free_bytes)} free on its file system, and the {est.requests} "
                      f"requests to synthesize will store about {_mb(est.needed_bytes)} of audio (~{est.audio_s:.0f} "
                      "s); free space or use a store on another file system (a full disk ends the run, keeping "
                      "every request finished)", SimulplayWarning, stacklevel=2)
    return est


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 100_000 else f"{n / 1e3:.0f} kB"
