"""Reuse of a run's derived folders whose inputs have not changed (docs/experiments.md#reuse).

A run writes its tables first and then three folders derived from them: ``sweep/`` (the
modelled sweep), ``explore/`` (the explorer) and ``report/`` (figures, Listen clips, tables).
Each derived folder records, in :data:`RECORD`, what it was made from — the simulplay
version, its settings, and a digest of every input file — and the SHA-256 of every file it
holds. A later run makes the folder again only when that record no longer matches: an input
or a setting changed, the version changed, or a file of the folder was changed or removed.

The inputs of a derived folder are the run folder's files outside the derived folders, the
audio store and hidden files (the tables, manifests, chunk tables and ``run.json``), and for
``report/`` and ``explore/`` also the files of ``sweep/``. A digest is a file's SHA-256, but
for what a run that changed nothing still rewrites differently: the machine's load averages
(``machine.load`` and ``machine.load_at_end`` in ``run.json`` and in a Parquet file's
metadata), the run's timings and what it did itself rather than found done (``run.json``'s
:data:`VOLATILE_RUN`: requests synthesized now against found in the store, retries, VAD
inferences against cached ones). A reused report therefore shows the load averages and
these counts of the run that made it. The audio itself needs no digest:
the manifests name every request's audio by the SHA-256 key of its samples.

The quality tables of a run keep the same record (:func:`remember`, :func:`reusable`) in
``.quality-inputs.json`` beside them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from simulplay.core.atomic import write_atomic
from simulplay.core.provenance import sha256_of_file
from simulplay.core.version import __version__

#: The record each derived folder keeps of its inputs and files.
RECORD = ".simulplay-inputs.json"
#: The run folder's derived folders, in the order a run makes them.
DERIVED = ("sweep", "explore", "report")
#: Keys of ``machine`` that change from one run to the next without changing a number.
VOLATILE_MACHINE = ("load", "load_at_end")
#: Keys of ``run.json`` (at any depth) that change from one run to the next without changing
#: a number: the run's timings, and what this run did itself rather than found done — the
#: requests it synthesized (in all, per worker, per backend), the retries and worker deaths
#: of that synthesis and its parallel/serial service ratio, the edge replay's VAD inferences
#: against cached ones.
VOLATILE_RUN = ("timings_s", "synthesized", "already_in_store", "per_worker", "retries", "worker_deaths",
                "service_time_parallel_over_serial", "inferred", "cached", "inference_s")


def _steady(meta: Any, drop: tuple[str, ...] = ()) -> Any:
    """``meta`` without the machine's load averages and the keys ``drop``, at any depth
    (through dicts and lists), in a copy."""
    if isinstance(meta, list):
        return [_steady(v, drop) for v in meta]
    if not isinstance(meta, dict):
        return meta
    out = {k: v for k, v in meta.items() if k not in drop}
    if isinstance(out.get("machine"), dict):
        out["machine"] = {k: v for k, v in out["machine"].items() if k not in VOLATILE_MACHINE}
    return {k: _steady(v, drop) for k, v in out.items()}


def digest(path: Path) -> str:
    """The file's digest for reuse: its SHA-256, but for ``run.json`` and Parquet files the
    SHA-256 of their content without the load averages and timings (see the module docstring)."""
    if path.name == "run.json":
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return sha256_of_file(path)
        return hashlib.sha256(json.dumps(_steady(data, VOLATILE_RUN), sort_keys=True).encode()).hexdigest()
    if path.suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pq.read_table(path)
        meta = dict(table.schema.metadata or {})
        steady = {}
        for k, v in meta.items():
            try:
                steady[k.decode()] = _steady(json.loads(v))
            except ValueError:
                steady[k.decode()] = v.decode("utf-8", "replace")
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema.remove_metadata()) as writer:
            writer.write_table(table.replace_schema_metadata(None))
        h = hashlib.sha256(sink.getvalue().to_pybytes())
        h.update(json.dumps(steady, sort_keys=True, default=str).encode())
        return h.hexdigest()
    return sha256_of_file(path)


def input_files(run_dir: Path, folder: str) -> list[Path]:
    """The inputs of the derived folder ``folder`` of ``run_dir`` (module docstring)."""
    skip = {"store", *DERIVED} - ({"sweep"} if folder != "sweep" else set())
    out = []
    for top in run_dir.iterdir():  # the skipped folders are not walked (the store holds thousands of files)
        if top.name in skip or top.name.startswith("."):
            continue
        if top.is_file():
            out.append(top)
        elif top.is_dir():
            out += [p for p in top.rglob("*") if p.is_file()
                    and not any(part.startswith(".") for part in p.relative_to(run_dir).parts)]
    return sorted(out)


_DIGESTS: dict[tuple[str, int, int, int], str] = {}  # (path, size, mtime_ns, inode) → digest


def _digest_once(path: Path) -> str:
    """:func:`digest`, computed once per file version in this process (a file rewritten since
    has another modification time or inode, and is digested again)."""
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns, st.st_ino)
    if key not in _DIGESTS:
        _DIGESTS[key] = digest(path)
    return _DIGESTS[key]


def inputs_key(run_dir: Path, folder: str, settings: Mapping[str, Any]) -> dict[str, Any]:
    """What ``folder`` is made from: the version, its settings and its input files' digests."""
    files = {p.relative_to(run_dir).as_posix(): _digest_once(p) for p in input_files(run_dir, folder)}
    return {"version": __version__, "settings": json.loads(json.dumps(settings, default=str)), "inputs": files}


def _files(folder: Path) -> list[str]:
    return [p.relative_to(folder).as_posix() for p in sorted(folder.rglob("*")) if p.is_file() and p.name != RECORD]


def reusable(record: Path, key: Mapping[str, Any], base: Path, names: Sequence[str] | None = None) -> bool:
    """Whether ``record`` (:func:`remember`) was made from ``key`` and every file it lists (or
    each of ``names``, when given), relative to ``base``, is still there unchanged."""
    try:
        saved = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    files = saved.get("files") if isinstance(saved, dict) else None
    if not isinstance(files, dict) or saved.get("key") != json.loads(json.dumps(key, default=str)):
        return False
    listed = files if names is None else {n: files.get(n) for n in names}
    return all((base / rel).is_file() and sha256_of_file(base / rel) == h for rel, h in listed.items())


def remember(record: Path, key: Mapping[str, Any], base: Path, names: Sequence[str]) -> None:
    """Record ``key`` (what the files were made from) and the SHA-256 of each file of ``names``
    relative to ``base``, written whole or not at all: a derived folder's record and that of
    the quality tables."""
    files = {n: sha256_of_file(base / n) for n in names}
    write_atomic(record, json.dumps({"key": key, "files": files}, indent=1, default=str).encode("utf-8"))


def make_or_reuse(run_dir: Path, folder: str, settings: Mapping[str, Any], make: Callable[[], Any],
                  reused: list[str]) -> bool:
    """Make ``run_dir/folder`` with ``make()`` unless it can be reused; a reused folder's
    name is added to ``reused``. Returns whether it was reused."""
    target = run_dir / folder
    key = inputs_key(run_dir, folder, settings)
    if reusable(target / RECORD, key, target):
        reused.append(f"{folder}/")
        return True
    make()
    remember(target / RECORD, key, target, _files(target))
    return False


def names(reused: Iterable[str]) -> str:
    """``sweep/, explore/ and report/``."""
    items = list(reused)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
