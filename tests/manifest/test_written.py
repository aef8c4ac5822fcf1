"""The writer and the reader share one format: every column synthesis writes is one the
reader requires or passes through, what synthesis writes validates, and a writer that
produces a table the reader would refuse fails before anything is written."""

import re
from pathlib import Path

import pytest

from simulplay.core.errors import InputError, SimulplayError
from simulplay.core.tables import read_table
from simulplay.grouping.rules import Immediate, Timer
from simulplay.manifest import (
    CHUNK_ORDER,
    MANIFEST_COLUMNS,
    MANIFEST_ORDER,
    WrittenTableError,
    chunk_path,
    read_chunks,
    read_manifest,
)
from simulplay.manifest.chunks import CHUNK_REQUIRED
from simulplay.store.store import AudioStore
from simulplay.synthesis.run import synthesize_to_manifest
from tests.support.factories import stream
from tests.support.fakes import FakeSettings

ROOT = Path(__file__).resolve().parents[2]
#: docs/formats.md: the columns every request manifest has, and every chunk table
FORMATS_MANIFEST = ("talk_id", "system", "condition", "seq", "dispatch_s", "service_s", "audio_s", "source_s")
FORMATS_CHUNKS = ("talk_id", "system", "condition", "seq", "chunk", "ready_offset_s", "audio_s")


def synthesize(tmp_path: Path, **kw):
    streams = [stream([0.5, 1.0, 2.5, 4.0], ["a b.", "c d", "e f.", "g"], talk_id=t, system=s)
               for t in ("t1", "t2") for s in ("A", "F")]
    return synthesize_to_manifest(streams, [Immediate(), Timer(w=2)], FakeSettings(), AudioStore(tmp_path / "store"),
                                  tmp_path / "m.parquet", **kw)


def test_the_writer_writes_every_column_the_reader_requires():
    assert MANIFEST_COLUMNS == FORMATS_MANIFEST and CHUNK_REQUIRED == FORMATS_CHUNKS
    assert set(MANIFEST_COLUMNS) <= set(MANIFEST_ORDER) and set(CHUNK_REQUIRED) <= set(CHUNK_ORDER)
    assert len(set(MANIFEST_ORDER)) == len(MANIFEST_ORDER) and len(set(CHUNK_ORDER)) == len(CHUNK_ORDER)


def test_a_manifest_written_by_synthesis_validates_and_keeps_every_column(tmp_path):
    synthesize(tmp_path)
    raw, _ = read_table(tmp_path / "m.parquet")
    assert tuple(raw.columns) == MANIFEST_ORDER  # as written
    manifest, _ = read_manifest(tmp_path / "m.parquet")
    assert set(MANIFEST_ORDER) <= set(manifest.columns) and len(manifest) == len(raw)  # the reader passes them on
    chunks_raw, _ = read_table(chunk_path(tmp_path / "m.parquet"))
    assert tuple(chunks_raw.columns) == CHUNK_ORDER and len(read_chunks(tmp_path / "m.parquet")) == len(chunks_raw)


def test_the_chunk_table_lies_beside_its_manifest():
    assert chunk_path("/x/run/manifest.backend2.parquet") == Path("/x/run/manifest.backend2.chunks.parquet")
    assert chunk_path("m.csv") == Path("m.chunks.parquet")


def test_no_module_builds_the_chunk_path_by_hand():
    hand = [str(p.relative_to(ROOT)) for p in (ROOT / "simulplay").rglob("*.py")
            if re.search(r"[\"']\.chunks\.parquet[\"']", p.read_text(encoding="utf-8"))]
    assert hand == ["simulplay/manifest/columns.py"]


@pytest.mark.parametrize("table,column,value,problem", [
    ("manifest", "seq", 0, "repeats"),  # every request numbered 0
    ("manifest", "audio_s", -1.0, "audio_s"),
    ("chunks", "ready_offset_s", -0.5, "ready_offset_s"),
])
def test_a_writer_that_produces_a_bad_table_fails_before_writing(tmp_path, monkeypatch, table, column, value,
                                                                  problem):
    import simulplay.synthesis.run as run
    from simulplay.synthesis.collect import build_manifest

    def broken(plan, store):
        manifest, chunks, *rest = build_manifest(plan, store)  # the runs and noise seeds pass through
        bad = manifest if table == "manifest" else chunks
        bad[column] = value
        return manifest, chunks, *rest

    monkeypatch.setattr(run, "build_manifest", broken)
    with pytest.raises(WrittenTableError) as e:
        synthesize(tmp_path)
    assert problem in str(e.value) and isinstance(e.value.__cause__, InputError)
    assert not isinstance(e.value, SimulplayError)  # a bug: the command line shows its traceback
    assert not (tmp_path / "m.parquet").exists() and not chunk_path(tmp_path / "m.parquet").exists()
