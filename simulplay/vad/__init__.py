"""Voice activity detection: the bundled Silero VAD models (the model adapter of the
edge-silence replay), their frame grid, and the probability cache in the audio store.
The sweep over a manifest is a workflow (:mod:`simulplay.workflows.edges`)."""

from simulplay.vad.cache import ProbabilityCache, VadStats
from simulplay.vad.silero import SileroVad, to_vad_input

__all__ = ["ProbabilityCache", "SileroVad", "VadStats", "to_vad_input"]
