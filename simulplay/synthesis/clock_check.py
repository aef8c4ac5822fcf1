"""The clock check: was a run's service clock measured on a machine that left it alone?

Every request carries its wall (service) time, CPU time and run-queue wait
(:mod:`.clock`); a fixed probe request (:data:`PROBE_TEXT`) is re-timed by every worker
before its first request, once :data:`PROBE_EVERY_S` seconds have passed since its last
probe (checked after each request) and at the end.

* A **request is contended** when the process's threads waited for a CPU for at least
  :data:`WAIT_SHARE` (10 %) of its wall time: ``wait_s ≥ 0.10 · service_s``. Where the
  kernel does not report run-queue waits (``wait_s`` empty), a request is contended when
  its wall/CPU ratio exceeds :data:`RATIO_FACTOR` (1.5) × the median ratio of such requests.
* A **run is contended** when either of two things holds; otherwise it is stable:

  - *many requests*: more of its measured requests are contended than an idle machine
    explains. Even idle, a few requests are unlucky (up to :data:`IDLE_SHARE`, 5 %, of them
    on our 2-core machines); the run is contended when its count reaches
    :func:`requests_needed` ``(n)``, the smallest ``k`` with ``P(Binomial(n, 0.05) ≥ k) ≤``
    :data:`FALSE_ALARM` (0.001). The margin shrinks as requests grow: 5 of 10, 10 of 60,
    29 of 300, 74 of 1,000, 570 of 10,000 (a run of one request is never contended by count);
  - *much waiting*: the run's threads waited for a CPU for at least :data:`RUN_WAIT_SHARE`
    (5 %) of its requests' summed wall time (where waits are known), so that a burst of
    contention on a few long requests counts as much as it weighs.

* The **probe spread** (slowest / fastest probe time, with at least two probes; within each
  backend in a run of several) tells how much the machine's own speed drifted during the
  run. Each probe is timed :data:`PROBE_REPEATS` (3) times in a row and counts by its
  fastest time. It is recorded and shown, and the summary notes a spread above
  :data:`PROBE_SPREAD` (1.5), but it does not decide the verdict: on our idle 2-core virtual
  machines, with no thread ever waiting, the end probe of a 60-request run was up to 1.55 ×
  the start probe in 1 of 20 runs (all three repeats alike), i.e. the machine's speed
  drifted with nothing of ours to blame, and a verdict built on it called quiet runs
  contended.

The verdict reads ``clock: stable`` or ``clock: contended, N requests`` (N: contended
requests, each distinct request key counted once), or ``clock: unmeasured`` when no
request has clock readings (records written before the check existed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

WAIT_SHARE = 0.10
RATIO_FACTOR = 1.5
#: The share of requests an idle machine still flags (a handful of unlucky requests).
IDLE_SHARE = 0.05
#: The chance that an idle run is called contended for its count of contended requests.
FALSE_ALARM = 0.001
RUN_WAIT_SHARE = 0.05
#: A probe spread above this is noted in the summary (the machine's speed drifted).
PROBE_SPREAD = 1.5
#: Times each probe is timed in a row; it counts by the fastest.
PROBE_REPEATS = 3
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


def requests_needed(n: int) -> int:
    """The count of contended requests among ``n`` measured ones from which a run is
    contended: the smallest ``k ≥ 1`` with ``P(X ≥ k) ≤`` :data:`FALSE_ALARM` for ``X ~
    Binomial(n,`` :data:`IDLE_SHARE` ``)`` (summed exactly, in logarithms, from ``k = 0``)."""
    if n <= 0:
        return 1
    p = IDLE_SHARE
    log_pmf = n * math.log1p(-p)  # P(X = 0)
    odds = math.log(p) - math.log1p(-p)
    cdf = 0.0
    for k in range(n + 1):
        cdf += math.exp(log_pmf)
        if 1.0 - cdf <= FALSE_ALARM:  # P(X ≥ k + 1) ≤ FALSE_ALARM
            return k + 1
        log_pmf += math.log(n - k) - math.log(k + 1) + odds
    return n + 1


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
    #: Summed wall seconds and run-queue wait seconds of the measured requests whose wait
    #: is known (None: no wait known).
    wall_s: float | None = None
    waited_s: float | None = None

    @property
    def share(self) -> float | None:
        """Share of measured requests that were contended (None: none measured)."""
        return self.contended / self.measured if self.measured else None

    @property
    def wait_share(self) -> float | None:
        """Share of the measured wall time the requests' threads waited for a CPU (None: unknown)."""
        return self.waited_s / self.wall_s if self.wall_s and self.waited_s is not None else None

    @property
    def reasons(self) -> list[str]:
        """Which of the two criteria hold: ``requests``, ``waiting``."""
        share = self.wait_share
        return [name for name, holds in (
            ("requests", self.contended >= requests_needed(self.measured)),
            ("waiting", share is not None and share >= RUN_WAIT_SHARE)) if holds]

    @property
    def spread(self) -> float | None:
        """The probe spread (slowest / fastest probe time), None with fewer than two probes."""
        return probe_spread(self.probes)

    @property
    def is_contended(self) -> bool:
        """Whether the run is contended (see the module docstring for the definition)."""
        return bool(self.measured) and bool(self.reasons)

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
        if spread is not None and spread > PROBE_SPREAD:
            probes += f" (above {PROBE_SPREAD}: the machine's speed drifted during the run)"
        share = "" if self.share is None else f" ({100 * self.share:.1f} %)"
        waited = "" if self.wait_share is None else (
            f"; their threads waited {100 * self.wait_share:.1f} % of their wall time (summed over threads)")
        return (f"{self.contended} of {self.measured} measured requests contended{share}{waited}; {probes}")

    def to_dict(self) -> dict[str, Any]:
        """What ``run.json`` and the manifest's metadata record under ``clock``."""
        return {"verdict": self.verdict, "measured": self.measured, "unmeasured": self.unmeasured,
                "contended": self.contended, "share_contended": self.share, "criterion": self.criterion,
                "requests_needed": requests_needed(self.measured), "wall_s": self.wall_s,
                "waited_s": self.waited_s, "wait_share": self.wait_share, "reasons": self.reasons,
                "probe_spread": self.spread, "probes": self.probes,
                "definition": {"wait_share": WAIT_SHARE, "ratio_factor": RATIO_FACTOR, "idle_share": IDLE_SHARE,
                               "false_alarm": FALSE_ALARM, "run_wait_share": RUN_WAIT_SHARE,
                               "probe_spread": PROBE_SPREAD, "probe_repeats": PROBE_REPEATS,
                               "probe_every_s": PROBE_EVERY_S, "probe_text": PROBE_TEXT}}


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
    wait = first["wait_s"].to_numpy(float)
    waits = np.isfinite(wait)[measured]
    criterion = "wait" if waits.all() else "ratio" if not waits.any() else "wait+ratio"
    timed = measured & np.isfinite(wait)
    wall, waited = (float(service[timed].sum()), float(wait[timed].sum())) if timed.any() else (None, None)
    return ClockCheck(int(measured.sum()), int((~measured).sum()), int(flags.sum()),
                      criterion if measured.any() else "none", list(probes or []), wall, waited)


def load_at_measurement(manifest: pd.DataFrame) -> dict[str, Any] | None:
    """The machine's 1-minute load average while the manifest's requests were measured (its
    ``load1`` column, each request once by ``audio_key``): median, max and the requests it
    covers; None when no request recorded one. Unlike the load when a run or report is made,
    it describes the audio's own service times, also when a later run found them in the store."""
    if "load1" not in manifest:
        return None
    rows = manifest.drop_duplicates("audio_key") if "audio_key" in manifest else manifest
    load = pd.to_numeric(rows["load1"], errors="coerce").to_numpy(float)
    load = load[np.isfinite(load)]
    if not len(load):
        return None
    return {"median": round(float(np.median(load)), 2), "max": round(float(load.max()), 2), "requests": len(load)}
