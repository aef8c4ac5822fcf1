"""Executors on one machine: ``serial`` (in this process) and ``process:N`` (N worker
processes, each with its own loaded backend)."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import socket
from multiprocessing.connection import Connection, wait

from simulplay.backends.base import BackendConfig
from simulplay.core.errors import SimulplayError
from simulplay.synthesis.executors.jobs import Driver, Job, WorkerState, is_dynamic
from simulplay.synthesis.executors.schedule import Pool, schedule


def run_serial(config: BackendConfig, units: list[list[Job]], driver: Driver, state: WorkerState | None = None,
               ) -> WorkerState | None:
    """One request at a time in this process; the backend loads only if there is work.
    A loop unit's jobs come one by one, each once the previous one is stored."""
    for unit in units:
        if is_dynamic(unit):
            while (job := unit.next_job()) is not None:
                mine, _ = driver.claim([job], wait=True)
                if mine:
                    if state is None:
                        state = WorkerState.start(config, f"serial@{socket.gethostname()}")
                    driver.outcome(job, state.run(job))
                unit.finished(job.key)
            continue
        mine, busy = driver.claim(unit)
        driver.deferred.extend(busy)
        for job in mine:
            if state is None:
                state = WorkerState.start(config, f"serial@{socket.gethostname()}")
            driver.outcome(job, state.run(job))
    return state


def _worker_main(config: BackendConfig, name: str, tasks: Connection, results: Connection, parent: int) -> None:
    """A worker process: its own pipes to the driver, so a worker killed in the middle of
    sending can only damage its own channel, never another worker's answers. Ctrl-C in a
    terminal reaches every process of the group: the worker ignores it, the driver stops it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        state = WorkerState.start(config, name)
    except Exception as e:  # noqa: BLE001 - reported to the driver, which stops the run
        results.send(("fatal", f"{type(e).__name__}: {e}"))
        return
    results.send(("ready", None))
    while True:
        if not tasks.poll(1.0):
            if os.getppid() != parent:  # the driver died: stop
                return
            continue
        try:
            unit = tasks.recv()
        except EOFError:  # the driver closed the pipe
            return
        if unit is None:
            state.close()
            return
        for job in unit:
            results.send(("outcome", state.run(job)))


class ProcessPool(Pool):
    def __init__(self, config: BackendConfig):
        self.config = config
        self.ctx = mp.get_context("spawn")
        self.workers: dict[str, tuple] = {}  # name → (process, task sender, result receiver)

    def start(self, name: str) -> None:
        task_recv, task_send = self.ctx.Pipe(duplex=False)
        result_recv, result_send = self.ctx.Pipe(duplex=False)
        proc = self.ctx.Process(target=_worker_main, args=(self.config, name, task_recv, result_send, os.getpid()),
                                name=name, daemon=True)
        proc.start()
        task_recv.close()  # the child holds its own copies
        result_send.close()
        self.workers[name] = (proc, task_send, result_recv)
        while True:  # wait until it has loaded and warmed up
            if not result_recv.poll(5.0):
                if not proc.is_alive():
                    raise SimulplayError(f"worker {name} exited while loading its backend")
                continue
            try:
                kind, payload = result_recv.recv()
            except (EOFError, OSError):
                raise SimulplayError(f"worker {name} exited while loading its backend") from None
            if kind == "fatal":
                raise SimulplayError(f"worker {name} could not load its backend: {payload}")
            return

    def submit(self, name: str, unit: list[Job]) -> None:
        self.workers[name][1].send(unit)

    def poll(self, timeout: float):
        receivers = {w[2]: name for name, w in self.workers.items()}
        events = []
        for conn in wait(list(receivers), timeout=timeout):
            name = receivers[conn]
            try:
                kind, payload = conn.recv()
            except (EOFError, OSError):  # closed or cut mid-message: the worker died
                self._forget(name)
                events.append(("dead", name, None))
                continue
            if kind == "outcome":
                events.append(("outcome", name, payload))
        for name, (proc, _, conn) in list(self.workers.items()):
            if not proc.is_alive() and not conn.poll(0):
                self._forget(name)
                events.append(("dead", name, None))
        return events

    def _forget(self, name: str) -> None:
        proc, send, recv = self.workers.pop(name)
        proc.join(timeout=5)
        send.close()
        recv.close()

    def stop(self) -> None:
        for proc, send, _ in self.workers.values():
            if proc.is_alive():
                try:
                    send.send(None)
                except OSError:
                    pass
        for proc, send, recv in self.workers.values():
            proc.join(timeout=10)
            if proc.is_alive():
                proc.kill()
            send.close()
            recv.close()
        self.workers.clear()


def run_processes(config: BackendConfig, units: list[list[Job]], driver: Driver, n: int, retries: int) -> None:
    host = socket.gethostname()
    schedule(ProcessPool(config), [f"process-{i}@{host}.0" for i in range(n)], units, driver, retries)
