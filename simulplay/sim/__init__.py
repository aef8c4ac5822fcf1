"""The replay: service clock, serial playback and replay variants (pure functions of arrays).
The manifest it reads is :mod:`simulplay.manifest`; the player metrics computed from a replay
are :mod:`simulplay.analysis.player`."""

from simulplay.sim import servers as _servers  # noqa: F401  (registers the service model "servers")
from simulplay.sim.replay import ReplayResult, replay

__all__ = ["ReplayResult", "replay"]
