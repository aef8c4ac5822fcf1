"""The tests' one ``synth`` helper (and :func:`synth_args`, the command's arguments, for
tests that run ``simulplay synth`` itself), and the real-Piper runs they share.

:func:`synth` plans and synthesizes streams under grouping rules with
:func:`simulplay.synthesis.run.synthesize_to_manifest` (the manifest at ``out``, its chunk
table beside it). :class:`PiperRuns` is what the session fixture ``piper_runs``
(tests/conftest.py) holds: real Piper runs of named stream sets, all in one audio store.
A set is synthesized the first time a test module asks for it, and a text that another set
already synthesized is taken from the store (same request key), so a text costs one
synthesis per test session: under ``make test`` (pytest-xdist, ``--dist loadscope``) one
per worker, never more than the modules' own fixtures cost before. Piper runs with both
noises at 0 and one thread: the same samples in every run, whichever set synthesized a text.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simulplay.backends import parse_backend
from simulplay.grouping import parse_rule
from simulplay.store.store import AudioStore
from simulplay.synthesis.run import SynthResult, synthesize_to_manifest
from simulplay.traces.model import Stream

#: Real Piper with both noises at 0 (the same samples every run) on one onnxruntime thread.
PIPER = "piper:intra_op_threads=1,noise_scale=0,noise_w_scale=0"
RULES = ("immediate", "timer:w=2")


def synth_args(*plan: Any, store: Path, out: Path, backend: str = PIPER, extra: Sequence[Any] = ()) -> list[Any]:
    """The arguments of ``simulplay synth`` for tests that run the command itself: ``plan``
    (trace files with ``--rule`` options, or ``--requests FILE``), ``backend``, ``store``,
    ``out``, ``--quiet``, then ``extra`` options."""
    return ["synth", *plan, "--backend", backend, "--store", store, "--out", out, "--quiet", *extra]


def synth(streams: Iterable[Stream], store: AudioStore | Path, out: Path, *, backend: str = PIPER,
          rules: Sequence[str] = RULES, **options: Any) -> SynthResult:
    """``streams`` grouped under ``rules`` and synthesized with ``backend`` (a spec) into
    ``store`` (an :class:`AudioStore` or its folder), the manifest written at ``out``;
    ``options`` go to ``synthesize_to_manifest`` (realizations, reuse, executor, …)."""
    store = store if isinstance(store, AudioStore) else AudioStore(store)
    return synthesize_to_manifest(list(streams), [parse_rule(r) for r in rules], parse_backend(backend), store,
                                  Path(out), **options)


@dataclass(frozen=True)
class PiperRun:
    """One named set's manifest (its chunk table beside it) and the shared store's folder."""

    manifest: Path
    store: Path


class PiperRuns:
    """Real Piper runs (:data:`PIPER`, :data:`RULES`) of named stream sets in one store,
    each set synthesized once (module docstring)."""

    def __init__(self, root: Path):
        self.root = root
        self.store = root / "store"
        self.runs: dict[str, tuple[list[tuple], PiperRun]] = {}

    def run(self, name: str, streams: Sequence[Stream], *, rules: Sequence[str] = RULES,
            backend: str = PIPER) -> PiperRun:
        """The run of ``streams`` under ``rules`` with ``backend`` named ``name``: synthesized
        on the first call, the same run after (asking again under one name with other streams,
        rules or backend is an error). Another backend than :data:`PIPER` (a Piper with noise)
        shares no audio with the other sets: its request keys differ."""
        content = [(s.talk_id, s.system, s.source_s, s.times.tolist(), s.texts, s.glue.tolist()) for s in streams]
        content.append((tuple(rules), backend))
        if name not in self.runs:
            out = self.root / f"{name}.parquet"
            synth(streams, self.store, out, rules=rules, backend=backend)
            self.runs[name] = (content, PiperRun(out, self.store))
        kept, run = self.runs[name]
        assert kept == content, f"piper run {name!r} was made from other streams, rules or backend"
        return run
