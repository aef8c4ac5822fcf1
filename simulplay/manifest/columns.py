"""The synthesized manifest's column order and where its chunk table goes.

A manifest written by synthesis has the docs/formats.md columns plus the synthesis columns, in
:data:`MANIFEST_ORDER`; its chunk table (one row per audio chunk a backend yielded, with
the chunk's time since its request started) is written beside it as
``<manifest stem>.chunks.parquet`` (:func:`chunk_path`), where replay looks for it.
The clock columns (``cpu_s``, ``wait_s``, ``load1``, ``contended``) come from the clock check
(:mod:`.clock_check`).
"""

from __future__ import annotations

from pathlib import Path

from simulplay.core.keys import OUTPUT_ID

MANIFEST_ORDER = (*OUTPUT_ID, "seq", "dispatch_s",
                  "service_s", "audio_s", "source_s", "text", "glue", "trigger", "n_updates", "group",
                  "audio_key", "sample_rate", "n_samples", "reused", "error", "worker", "host", "device",
                  "attempts", "request_attempts", "cpu_s", "wait_s", "load1", "contended", "synth_order",
                  "order_id", "condition_pos", "system_pos")
CHUNK_ORDER = (*OUTPUT_ID, "seq", "chunk",
               "ready_offset_s", "audio_s", "n_samples")


def chunk_path(manifest: str | Path) -> Path:
    """The chunk table beside a manifest: ``<stem>.chunks.parquet`` in the same folder."""
    p = Path(manifest)
    return p.with_name(p.stem + ".chunks.parquet")
