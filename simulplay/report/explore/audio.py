"""The stored audio an explorer lane plays, shipped as it is in the store.

The page renders each lane's listener audio itself, by ``simulplay render``'s rule
(:mod:`simulplay.sim.listener_audio`: silence while the player waits, every part's
samples from the sample nearest its playback start), from the requests' stored FLAC
files: so every variant and every output can be heard without encoding anything here.
A page opened from disk may not read files with ``fetch``, so each talk's files travel
base64-encoded in one script (``data/audio/<talk>.js``), loaded when a lane first plays.
The page checks what it decodes as the store does: the sample count the manifest names,
and, where the browser offers SHA-256 (``crypto.subtle``), that the samples hash to their
key. A file missing from the store or unreadable is named here; the lanes that need it
say so, the others play.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from simulplay.report.listen import find_store
from simulplay.report.read_run import RunData
from simulplay.store.store import AudioStore

AUDIO_COLUMNS = ("audio_key", "n_samples", "sample_rate")


@dataclass
class StoreAudio:
    """Where the lanes' audio comes from: the store, or why there is none."""

    store: AudioStore | None
    why: str = ""  # when there is no store: what the page says
    problems: dict[str, str] = field(default_factory=dict)

    def files(self, keys: Iterable[str]) -> tuple[dict[str, bytes], dict[str, str]]:
        """Base64 (ASCII bytes) of each key's FLAC file, and the keys that could not be read (why)."""
        data, problems = {}, {}
        if self.store is None:
            return data, problems
        for key in keys:
            try:
                data[key] = base64.b64encode(self.store.audio_path(key).read_bytes())
            except FileNotFoundError:
                problems[key] = f"audio {key} is missing from the store {self.store.root}"
            except OSError as e:
                problems[key] = f"audio {key} cannot be read from the store {self.store.root} ({e.strerror})"
        return data, problems


def store_audio(run: RunData, store: str | Path | None) -> StoreAudio:
    """The store of the run's audio (``store`` when given, else a run folder's own), or
    why the page has no audio. A ``store`` given that is no store is an error."""
    given = AudioStore.open(store, create=False, field="--store") if store is not None else None
    if not set(AUDIO_COLUMNS) <= set(run.manifest.frame.columns):
        return StoreAudio(None, "the manifest has no stored audio (it was not synthesized by simulplay)")
    if given is not None:
        return StoreAudio(given)
    folder, why = find_store(run, None)
    if folder is None:
        return StoreAudio(None, why)
    return StoreAudio(AudioStore.open(folder, create=False, field="--store"))
