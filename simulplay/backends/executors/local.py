"""Executors on one machine: ``serial`` (in this process) and ``process:N`` (N worker
processes, each with its own loaded backend)."""

from __future__ import annotations

import multiprocessing as mp
import os
import queue as queue_mod
import socket

from simulplay.backends.base import BackendConfig
from simulplay.backends.executors.jobs import Driver, Job, WorkerState
from simulplay.backends.executors.schedule import Pool, schedule
from simulplay.errors import SimulplayError


def run_serial(config: BackendConfig, units: list[list[Job]], driver: Driver, state: WorkerState | None = None,
               ) -> WorkerState | None:
    """One request at a time in this process; the backend loads only if there is work."""
    for unit in units:
        mine, busy = driver.claim(unit)
        driver.deferred.extend(busy)
        for job in mine:
            if state is None:
                state = WorkerState(config, f"serial@{socket.gethostname()}")
            driver.outcome(job, state.run(job))
    return state


def _worker_main(config: BackendConfig, name: str, tasks, results, parent: int) -> None:
    try:
        state = WorkerState(config, name)
    except Exception as e:  # noqa: BLE001 - reported to the driver, which stops the run
        results.put(("fatal", name, f"{type(e).__name__}: {e}"))
        return
    results.put(("ready", name, None))
    while True:
        try:
            unit = tasks.get(timeout=1.0)
        except queue_mod.Empty:
            if os.getppid() != parent:  # the driver died: stop
                return
            continue
        if unit is None:
            state.close()
            return
        for job in unit:
            results.put(("outcome", name, state.run(job)))


class ProcessPool(Pool):
    def __init__(self, config: BackendConfig):
        self.config = config
        self.ctx = mp.get_context("spawn")
        self.results = self.ctx.Queue()
        self.workers: dict[str, tuple] = {}

    def start(self, name: str) -> None:
        tasks = self.ctx.Queue()
        proc = self.ctx.Process(target=_worker_main, args=(self.config, name, tasks, self.results, os.getpid()),
                                name=name, daemon=True)
        proc.start()
        self.workers[name] = (proc, tasks)
        while True:  # wait until it has loaded and warmed up
            try:
                kind, who, payload = self.results.get(timeout=5.0)
            except queue_mod.Empty:
                if not proc.is_alive():
                    raise SimulplayError(f"worker {name} exited while loading its backend") from None
                continue
            if kind == "fatal":
                raise SimulplayError(f"worker {who} could not load its backend: {payload}")
            if kind == "ready" and who == name:
                return

    def submit(self, name: str, unit: list[Job]) -> None:
        self.workers[name][1].put(unit)

    def poll(self, timeout: float):
        events = []
        try:
            events.append(self.results.get(timeout=timeout))
            while True:
                events.append(self.results.get_nowait())
        except queue_mod.Empty:
            pass
        events = [e for e in events if e[0] == "outcome"]
        if not events:
            for name, (proc, _) in list(self.workers.items()):
                if not proc.is_alive():
                    proc.join()
                    del self.workers[name]
                    events.append(("dead", name, None))
        return events

    def stop(self) -> None:
        for proc, tasks in self.workers.values():
            if proc.is_alive():
                tasks.put(None)
        for proc, _ in self.workers.values():
            proc.join(timeout=10)
            if proc.is_alive():
                proc.kill()
        self.workers.clear()


def run_processes(config: BackendConfig, units: list[list[Job]], driver: Driver, n: int, retries: int) -> None:
    host = socket.gethostname()
    schedule(ProcessPool(config), [f"process-{i}@{host}.0" for i in range(n)], units, driver, retries)
