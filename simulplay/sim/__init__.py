"""Simulation: service clock, playback, replay variants (pure functions of arrays)."""

from simulplay.sim.chunks import read_chunks
from simulplay.sim.manifest import output_keys, read_manifest, validate_manifest
from simulplay.sim.replay import ReplayResult, replay

__all__ = ["ReplayResult", "output_keys", "read_chunks", "read_manifest", "replay", "validate_manifest"]
