"""The request manifest and its chunk table, in one place: the columns synthesis writes
(:mod:`.columns`, with ``chunk_path``, where the chunk table lies beside its manifest), the
reading and validation every later step applies (:mod:`.validate`, :mod:`.chunks`), the
trace files a manifest records (:mod:`.traces`) and the writer's check (:mod:`.written`).
Below synthesis, so the writer checks what it writes against the reader's format."""

from simulplay.manifest.chunks import read_chunks, validate_chunks
from simulplay.manifest.columns import CHUNK_ORDER, MANIFEST_ORDER, chunk_path
from simulplay.manifest.validate import MANIFEST_COLUMNS, output_keys, read_manifest, validate_manifest
from simulplay.manifest.written import WrittenTableError, check_written

__all__ = ["CHUNK_ORDER", "MANIFEST_COLUMNS", "MANIFEST_ORDER", "WrittenTableError", "check_written", "chunk_path",
           "output_keys", "read_chunks", "read_manifest", "validate_chunks", "validate_manifest"]
