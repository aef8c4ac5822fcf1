"""Rules that group text as a voice framework does (docs/frameworks.md): LiveKit Agents'
streaming sentence tokenizer, pipecat's text aggregator and RealtimeTTS's sentence
generator.

Each update's text is pushed to the framework's splitter at its availability, with the
space that joins it to the previous update (none for a glued one); a group is what the
splitter emits, dispatched at the availability of the push that made it emit, and what
is left when the stream ends is flushed as the framework flushes it, at the last update.
The splitters cut inside a push, so these rules give character spans of the joined text
(:class:`~simulplay.grouping.registry.Group`). The sentence tokenizers the frameworks
delegate to (BlingFire, sentencex, stream2sentence) are the frameworks' own packages, in the
``frameworks`` extra.
"""

from simulplay.grouping.frameworks import livekit as _livekit  # noqa: F401  (registers the rule)
from simulplay.grouping.frameworks import livekit_pacer as _livekit_pacer  # noqa: F401  (registers the policy)
from simulplay.grouping.frameworks import pipecat as _pipecat  # noqa: F401  (registers the rule)
from simulplay.grouping.frameworks import realtimetts as _realtimetts  # noqa: F401  (registers the rule)
