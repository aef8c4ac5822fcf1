"""Traces: the update-stream model, readers, writers and validation, and the translator-log
importers (:mod:`.importers`)."""

from simulplay.traces.model import Stream, join_texts, streams_from_frame
from simulplay.traces.readers import read_trace, read_traces
from simulplay.traces.validate import stream_stats, trace_stats
from simulplay.traces.writers import write_trace

__all__ = ["Stream", "join_texts", "read_trace", "read_traces", "stream_stats",
           "streams_from_frame", "trace_stats", "write_trace"]
