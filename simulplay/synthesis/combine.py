"""A run of several engines: the syntheses of one plan under each backend as one manifest.

Each backend is synthesized on its own (its manifest with its identity, spec, clock check
and probes, so each can be retimed alone) and their rows are stacked into one manifest,
told apart by its ``backend`` column, where every row keeps its own backend's signature.
The run-level signature keeps the fields all backends share and joins the others that a
reader needs (``backend``, ``clock``) with `` + ``; the clock check adds up the backends'
requests and judges each backend's probes against its own (:func:`.clock_check.probe_spread`).
The stacked manifest and chunk table pass the reader's check before they are written
(:func:`simulplay.manifest.check_written`; a failure is a :class:`simulplay.manifest.WrittenTableError`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from simulplay.core.errors import InputError
from simulplay.core.tables import write_table
from simulplay.manifest.columns import chunk_path
from simulplay.manifest.written import check_written
from simulplay.synthesis.clock_check import ClockCheck
from simulplay.synthesis.run import SynthResult
from simulplay.synthesis.stats import SynthStats

COUNTS = ("synthesized", "failed", "skipped", "damaged", "retries", "worker_deaths", "audio_s", "service_s")


def backend_label(res: SynthResult) -> str:
    """The ``backend`` column of a one-backend synthesis (its backend's label)."""
    return str(res.manifest["backend"].iloc[0])


def check_labels(labels: Sequence[str], source: str) -> None:
    """Backends of one run must label their rows differently (an InputError naming the twin)."""
    for i, label in enumerate(labels):
        if label in labels[:i]:
            raise InputError.at(source, f"two backends label their rows '{label}'",
                                accepted="backends that differ in name, voice or settings")


def combine_syntheses(results: Sequence[SynthResult], out: Path, *, traces: Sequence[dict[str, Any]] = ()
                      ) -> SynthResult:
    """Write ``out`` (and its chunk table) from one-backend syntheses of the same plan;
    ``traces`` as the one-backend manifests record them."""
    labels = [backend_label(r) for r in results]
    check_labels(labels, str(out))
    manifest = pd.concat([r.manifest for r in results], ignore_index=True)
    chunks = pd.concat([r.chunks for r in results], ignore_index=True)
    stats = combined_stats(results, labels)
    common = combined_signature([r.signature for r in results], stats.clock)
    sigs = [{**r.signature, "rule": c} for r in results for c in r.manifest["condition"]]
    check_written(manifest, chunks, out)
    write_table(manifest, out, sigs, kind="manifest",
                extra_meta={"signature": common, "traces": list(traces), "clock": stats.clock.to_dict(),
                            "machine": stats.machine,
                            "manifests": [{"backend": b, "path": str(Path(r.path).resolve())}
                                          for b, r in zip(labels, results)]})
    write_table(chunks, chunk_path(out), common, kind="chunks")
    return SynthResult(manifest, chunks, stats, common, Path(out))


def combined_signature(signatures: Sequence[dict[str, Any]], clock: ClockCheck) -> dict[str, Any]:
    """The first signature's fields that every backend's signature shares, ``backend``
    joined with `` + `` and the combined clock label (in the first signature's key order)."""
    first, out = signatures[0], {}
    for key, value in first.items():
        if key == "backend":
            out[key] = " + ".join(str(s.get("backend")) for s in signatures)
        elif key == "clock":
            out[key] = clock.label
        elif all(s.get(key) == value for s in signatures[1:]):
            out[key] = value
    return out


def _sum_known(values: Iterable[float | None]) -> float | None:
    """The sum of the known values (None: none known)."""
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def combined_stats(results: Sequence[SynthResult], labels: Sequence[str]) -> SynthStats:
    """Counts added up, workers named by backend, the clock check of all requests (probes
    tagged with their backend) and the first synthesis' machine."""
    stats = SynthStats(**{k: sum(getattr(r.stats, k) for r in results) for k in COUNTS})
    for r, label in zip(results, labels):
        stats.failures += r.stats.failures
        stats.per_worker |= {f"{label} {w}": v for w, v in r.stats.per_worker.items()}
        stats.probes += [{**p, "backend": label} for p in r.stats.probes]
    checks = [r.stats.clock for r in results if r.stats.clock is not None]
    criteria = list(dict.fromkeys(c.criterion for c in checks if c.criterion != "none")) or ["none"]
    stats.clock = ClockCheck(sum(c.measured for c in checks), sum(c.unmeasured for c in checks),
                             sum(c.contended for c in checks),
                             criteria[0] if len(criteria) == 1 else "wait+ratio",
                             [{**p, "backend": label} for r, label in zip(results, labels)
                              for p in (r.stats.clock.probes if r.stats.clock else [])],
                             _sum_known(c.wall_s for c in checks), _sum_known(c.waited_s for c in checks))
    stats.machine = {**results[0].stats.machine, "load_at_end": results[-1].stats.machine.get("load_at_end")}
    return stats
