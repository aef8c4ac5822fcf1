"""The manifest's and the chunk table's columns, and where the chunk table goes.

Every manifest has the docs/formats.md columns, :data:`MANIFEST_COLUMNS` (what the reader
requires); a manifest written by synthesis has them with the run's panel keys and the
synthesis columns, in :data:`MANIFEST_ORDER`, which is built from them so that the writer
always writes what the reader requires. Its chunk table (one row per audio chunk a backend yielded, with
the chunk's time since its request started) is written beside it as
``<manifest stem>.chunks.parquet`` (:func:`chunk_path`), where replay looks for it.
The clock columns (``cpu_s``, ``wait_s``, ``load1``, ``contended``) come from the clock check
(:mod:`.clock_check`).
"""

from __future__ import annotations

from pathlib import Path

from simulplay.core.keys import OUTPUT_ID, OUTPUT_KEYS

#: A request's place and times (seconds): the columns every manifest has after its output keys.
REQUEST_COLUMNS = ("seq", "dispatch_s", "service_s", "audio_s", "source_s")
#: The columns the reader requires (:func:`simulplay.manifest.validate.validate_manifest`).
MANIFEST_COLUMNS = (*OUTPUT_KEYS, *REQUEST_COLUMNS)
#: What synthesis adds: the text and its grouping, the audio (samples at sample_rate Hz), the
#: outcome, where and how it ran, the clock check's columns and the synthesis order.
SYNTHESIS_COLUMNS = ("text", "glue", "trigger", "n_updates", "group",
                     "audio_key", "sample_rate", "n_samples", "reused", "error", "worker", "host", "device",
                     "attempts", "request_attempts", "cpu_s", "wait_s", "load1", "contended", "synth_order",
                     "order_id", "condition_pos", "system_pos")
#: A synthesized manifest's columns, in order.
MANIFEST_ORDER = (*OUTPUT_ID, *REQUEST_COLUMNS, *SYNTHESIS_COLUMNS)
#: A chunk's place and time: the columns every chunk table has after its output keys.
CHUNK_COLUMNS = ("seq", "chunk", "ready_offset_s", "audio_s")
#: The columns the chunk reader requires (:func:`simulplay.manifest.chunks.validate_chunks`).
CHUNK_REQUIRED = (*OUTPUT_KEYS, *CHUNK_COLUMNS)
#: A chunk table's columns as synthesis writes them, in order (``n_samples`` at the request's rate).
CHUNK_ORDER = (*OUTPUT_ID, *CHUNK_COLUMNS, "n_samples")


def chunk_path(manifest: str | Path) -> Path:
    """The chunk table beside a manifest: ``<stem>.chunks.parquet`` in the same folder."""
    p = Path(manifest)
    return p.with_name(p.stem + ".chunks.parquet")
