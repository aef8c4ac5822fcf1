"""Where synthesis runs: ``serial``, ``process:N`` or ``ray[:ADDRESS]``.

Every executor runs each request on a worker that loaded its backend once and warmed
it up, one request at a time, so service times keep their meaning; parallel workers on
shared CPU cores still slow each other down, which the run summary quantifies.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

import pandas as pd

from simulplay.backends.base import BackendConfig
from simulplay.core.errors import FileFault, InputError, Interrupted
from simulplay.core.progress import NO_PROGRESS, Progress
from simulplay.store.store import AudioStore
from simulplay.synthesis.executors.jobs import Driver, Job, WorkerState, split_units, todo_jobs
from simulplay.synthesis.stats import SynthStats

__all__ = ["ExecutorSpec", "SynthStats", "executor_from_dict", "parse_executor", "execute"]


@dataclass(frozen=True)
class ExecutorSpec:
    """Where synthesis runs and with what: ``serial`` ignores the worker settings it keeps."""

    kind: str = "serial"  # serial | process | ray
    workers: int | None = None  # process: N; ray: cap on actors (default: as many as fit)
    address: str | None = None  # ray: None starts a local instance; "auto" or host:port joins
    worker_cpus: float = 1.0
    worker_gpus: float = 0.0
    retries: int = 2

    def label(self) -> str:
        if self.kind == "process":
            return f"process:{self.workers}"
        if self.kind == "ray":
            return "ray" + (f":{self.address}" if self.address else "")
        return "serial"

    def to_dict(self) -> dict[str, object]:
        """The settings as an experiment file writes them: ``executor`` (the label, e.g.
        ``process:4``), ``workers`` (the ray cap; ``None`` for ``process``, whose count is in the
        label), ``worker_cpus``, ``worker_gpus`` and ``retries``; :func:`executor_from_dict`
        rebuilds the spec."""
        return {"executor": self.label(), "workers": None if self.kind == "process" else self.workers,
                "worker_cpus": self.worker_cpus, "worker_gpus": self.worker_gpus, "retries": self.retries}


def executor_from_dict(data: dict, *, source: str = "executor config") -> ExecutorSpec:
    """The spec of ``to_dict()``'s output (errors name ``source``)."""
    return parse_executor(str(data["executor"]), worker_cpus=data["worker_cpus"], worker_gpus=data["worker_gpus"],
                          retries=data["retries"], workers=data["workers"], source=source)


def parse_executor(text: str, *, worker_cpus: float = 1.0, worker_gpus: float = 0.0, retries: int = 2,
                   workers: int | None = None, source: str = "--executor") -> ExecutorSpec:
    """``serial``, ``process:N`` or ``ray[:ADDRESS]`` with the worker settings (``workers``
    caps ray's actors; ``process:N`` sets its own count); errors name ``source``."""
    kind, _, rest = text.strip().partition(":")
    accepted = "serial, process:N (N ≥ 1), ray, ray:auto or ray:HOST:PORT"
    if kind == "serial" and not rest:
        return ExecutorSpec("serial", workers, None, worker_cpus, worker_gpus, retries)
    if kind == "process":
        try:
            n = int(rest)
        except ValueError:
            n = 0
        if n < 1:
            raise InputError.at(f"{source} '{text}'", "needs a worker count", accepted=accepted)
        return ExecutorSpec("process", n, None, worker_cpus, worker_gpus, retries)
    if kind == "ray":
        from simulplay.core.extras import require_extra

        require_extra("ray")
        return ExecutorSpec("ray", workers, rest or None, worker_cpus, worker_gpus, retries)
    raise InputError.at(f"{source} '{text}'", "unknown executor", accepted=accepted)


def execute(plan: pd.DataFrame, config: BackendConfig, store: AudioStore, executor: ExecutorSpec, *,
            progress: Progress = NO_PROGRESS, contention_sample: int = 8, loops: dict | None = None) -> SynthStats:
    """Synthesize every planned key the store lacks (or holds damaged); only this process
    writes the store, holding its session lock throughout. A write the machine refuses (a
    full disk) ends the run as a :class:`~simulplay.core.errors.FileFault` saying what was kept.
    ``loops``: the loop units of closed-loop outputs by placeholder key
    (:mod:`simulplay.synthesis.loop`)."""
    try:
        with store.session():
            return _execute(plan, config, store, executor, progress, contention_sample, loops)
    except KeyboardInterrupt as e:  # Ctrl-C or SIGTERM: the store keeps every finished request
        raise Interrupted(_kept(plan, store), e) from None
    except FileFault as e:
        raise e.keeping(_kept(plan, store)) from e.__cause__
    except OSError as e:  # the session lock or events.jsonl
        raise FileFault(store.root, "cannot write", e, _kept(plan, store)) from e


def _kept(plan: pd.DataFrame, store: AudioStore) -> str:
    total = int(plan["key"].nunique())
    done = len(set(plan["key"]) & store.completed_keys())
    return f"{done} of {total} requests done and kept; run the same command again to resume"


def _execute(plan, config, store, executor, progress, contention_sample, loops=None) -> SynthStats:
    from simulplay.synthesis.executors.local import run_processes, run_serial

    driver = Driver(store, progress)
    units, done, damaged = todo_jobs(plan, store, loops)
    driver.stats.skipped, driver.stats.damaged = done, damaged
    state, finished = None, False
    try:
        if executor.kind == "serial":
            state = run_serial(config, units, driver)
        else:
            n = executor.workers or 1
            if config.kind == "request":
                units = split_units(units, n)
            if executor.kind == "process":
                run_processes(config, units, driver, n, executor.retries)
            else:
                from simulplay.synthesis.executors.ray_executor import run_ray

                run_ray(config, units, driver, executor.address, executor.workers, executor.worker_cpus,
                        executor.worker_gpus, executor.retries)
        # keys another process held: wait for it, then do what it did not finish
        while driver.deferred:
            batch, driver.deferred = driver.deferred, []
            mine, _ = driver.claim(batch, wait=True)
            driver.release_all()
            if mine:
                state = run_serial(config, [mine], driver, state)
        driver.stats.skipped += sum(u.from_store for u in (loops or {}).values())  # served without synthesis
        if state is not None and state.runs:  # the serial worker's last probe
            driver.stats.probes.append(state.probe("end"))
        if executor.kind != "serial" and contention_sample and driver.stats.synthesized:
            state = _measure_contention(config, plan, store, driver.stats, contention_sample, state)
        finished = True
    finally:
        driver.release_all()
        if state is not None:
            state.close()
        if driver.stats.synthesized and driver.stats.probes:
            try:
                store.put_probes(driver.run_id, driver.stats.probes)
            except FileFault:  # a full disk: a fault of the run itself is the one to report
                if finished:
                    raise
    return driver.stats


def _measure_contention(config, plan, store, stats, k, state) -> WorkerState:
    """Re-time a sample of requests serially (not stored) against their parallel times."""
    rows = plan.drop_duplicates("key")
    recs = [(r["key"], r["text"], int(r["realization"]), store.get_record(r["key"])) for r in rows.to_dict("records")]
    recs = [x for x in recs if x[3] is not None and x[3]["n_samples"] > 0 and x[3].get("pid")]
    if not recs:
        return state
    step = max(1, len(recs) // k)
    sample = recs[::step][:k]
    state = state or WorkerState.start(config, "serial-check")
    ratios = []
    for key, text, realization, rec in sample:
        out = state.run(Job(key, text, realization, {}))
        if not out.error and out.service_s > 0:
            ratios.append(rec["service_s"] / out.service_s)
    if ratios:
        stats.contention_ratio = statistics.median(ratios)
        stats.contention_sample = len(ratios)
    return state
