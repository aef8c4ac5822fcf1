"""The clock check: was a run's service clock measured on a machine that left it alone?

Every request carries its wall (service) time, CPU time and run-queue wait
(:mod:`.clock`); a fixed probe request (:data:`PROBE_TEXT`) is re-timed by every worker
before its first request, once :data:`PROBE_EVERY_S` seconds have passed since its last
probe (checked after each request) and at the end.

* A **request is contended** when the process's threads waited for a CPU for at least
  :data:`WAIT_SHARE` (10 %) of its wall time: ``wait_s ≥ 0.10 · service_s``. Where the
  kernel does not report run-queue waits (``wait_s`` empty), a request is contended when
  its wall/CPU ratio exceeds :data:`RATIO_FACTOR` (1.5) × the median ratio of such requests.
* A **run is contended** when at least :data:`RUN_SHARE` (5 %, and at least one) of its
  measured requests are, or when its probe spread (slowest / fastest probe time, with at
  least two probes; within each backend in a run of several) exceeds :data:`PROBE_SPREAD`
  (1.5). Otherwise it is stable.

The verdict reads ``clock: stable`` or ``clock: contended, N requests`` (N: contended
requests, each distinct request key counted once), or ``clock: unmeasured`` when no
request has clock readings (records written before the check existed).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

WAIT_SHARE = 0.10
RATIO_FACTOR = 1.5
RUN_SHARE = 0.05
PROBE_SPREAD = 1.5
#: Seconds of a worker's time between probes: a probe costs about 0.15 % of a run's time.
PROBE_EVERY_S = 60.0
#: The probe request: fixed, about as long as a typical request (1.3 s of audio with Piper's
#: en_US-joe-medium).
PROBE_TEXT = "The clock is steady."


def contended_requests(service_s: Any, cpu_s: Any, wait_s: Any) -> np.ndarray:
    """Per request (arrays of seconds, NaN: not measured): whether it was contended, by
    the run-queue wait where known and by the wall/CPU ratio fallback elsewhere."""
    service = np.asarray(service_s, float)
    cpu = np.asarray(cpu_s, float)
    wait = np.asarray(wait_s, float)
    measured = np.isfinite(service) & np.isfinite(cpu) & (service > 0)
    by_wait = measured & np.isfinite(wait)
    out = by_wait & (wait >= WAIT_SHARE * service)
    rest = measured & ~np.isfinite(wait) & (cpu > 0)
    if rest.any():
        ratio = np.where(rest, service / np.where(cpu > 0, cpu, 1.0), np.nan)
        out |= rest & (ratio > RATIO_FACTOR * np.nanmedian(ratio))
    return out


def probe_spread(probes: list[dict[str, Any]]) -> float | None:
    """Slowest / fastest probe service time, or None with fewer than two timed probes. Probes
    of several backends (a run of several engines tags each with its ``backend``) are compared
    within each backend, whose probe lasts as long as that engine takes, and the largest
    spread counts."""
    times: dict[Any, list[float]] = {}
    for p in probes:
        t = p.get("service_s")
        if t is not None and np.isfinite(t) and t > 0:
            times.setdefault(p.get("backend"), []).append(t)
    spreads = [max(ts) / min(ts) for ts in times.values() if len(ts) >= 2]
    return max(spreads) if spreads else None


@dataclass
class ClockCheck:
    """A run's clock check: requests measured, unmeasured and contended (distinct keys),
    how they were judged (``wait``, ``ratio`` or both), and the probes' timings."""

    measured: int
    unmeasured: int
    contended: int
    criterion: str
    probes: list[dict[str, Any]] = field(default_factory=list)

    @property
    def share(self) -> float | None:
        """Share of measured requests that were contended (None: none measured)."""
        return self.contended / self.measured if self.measured else None

    @property
    def spread(self) -> float | None:
        """The probe spread (slowest / fastest probe time), None with fewer than two probes."""
        return probe_spread(self.probes)

    @property
    def is_contended(self) -> bool:
        """Whether the run is contended (see the module docstring for the definition)."""
        spread = self.spread
        many = self.contended >= max(1.0, RUN_SHARE * self.measured)
        return bool(self.measured) and (many or (spread is not None and spread > PROBE_SPREAD))

    @property
    def label(self) -> str:
        """``stable``, ``contended, N requests`` or ``unmeasured`` (the signature's ``clock``)."""
        if not self.measured:
            return "unmeasured"
        if not self.is_contended:
            return "stable"
        return f"contended, {self.contended} request{'' if self.contended == 1 else 's'}"

    @property
    def verdict(self) -> str:
        """``clock: stable`` / ``clock: contended, N requests`` (``clock: unmeasured``)."""
        return f"clock: {self.label}"

    def details(self) -> str:
        """The numbers behind the verdict, for a summary line."""
        spread = self.spread
        probes = (f"probe spread {spread:.3f} over {len(self.probes)} probes" if spread is not None
                  else f"{len(self.probes)} probe(s)")
        share = "" if self.share is None else f" ({100 * self.share:.1f} %)"
        return f"{self.contended} of {self.measured} measured requests contended{share}; {probes}"

    def to_dict(self) -> dict[str, Any]:
        """What ``run.json`` and the manifest's metadata record under ``clock``."""
        return {"verdict": self.verdict, "measured": self.measured, "unmeasured": self.unmeasured,
                "contended": self.contended, "share_contended": self.share, "criterion": self.criterion,
                "probe_spread": self.spread, "probes": self.probes,
                "definition": {"wait_share": WAIT_SHARE, "ratio_factor": RATIO_FACTOR, "run_share": RUN_SHARE,
                               "probe_spread": PROBE_SPREAD, "probe_every_s": PROBE_EVERY_S, "probe_text": PROBE_TEXT}}


def check_clock(manifest: pd.DataFrame, keys: Any, probes: list[dict[str, Any]] | None = None) -> ClockCheck:
    """The clock check of a manifest's requests (``keys``: each row's request key, so a
    reused request counts once) and the run's probes; adds the ``contended`` column."""
    frame = manifest.assign(_key=list(keys))
    cols = [c for c in ("cpu_s", "wait_s") if c not in frame]
    frame = frame.assign(**{c: np.nan for c in cols})
    first = frame.drop_duplicates("_key")
    flags = contended_requests(first["service_s"], first["cpu_s"], first["wait_s"])
    service = first["service_s"].to_numpy(float)
    measured = np.isfinite(service) & (service > 0) & np.isfinite(first["cpu_s"].to_numpy(float))
    by_key = dict(zip(first["_key"], flags))
    manifest["contended"] = frame["_key"].map(by_key).astype(bool).to_numpy()
    waits = np.isfinite(first["wait_s"].to_numpy(float))[measured]
    criterion = "wait" if waits.all() else "ratio" if not waits.any() else "wait+ratio"
    return ClockCheck(int(measured.sum()), int((~measured).sum()), int(flags.sum()),
                      criterion if measured.any() else "none", list(probes or []))
