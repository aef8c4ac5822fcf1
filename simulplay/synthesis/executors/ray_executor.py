"""The Ray executor: one actor per worker slot, each with its own loaded backend.

``ray`` starts a local Ray instance; ``ray:auto`` or ``ray:ADDRESS`` joins a running
cluster (``ray start --head`` on one machine, ``ray start --address=HEAD:6379`` on the
others). Calls to an actor run in submission order, so an output's requests stay in
order on one worker. Actors return samples and clocks; only the driver writes.
"""

from __future__ import annotations

import socket

from simulplay.backends.base import BackendConfig
from simulplay.core.errors import SimulplayError
from simulplay.core.extras import MissingExtra
from simulplay.synthesis.executors.jobs import Driver, Job, Outcome, WorkerState
from simulplay.synthesis.executors.schedule import Pool, schedule


class RayWorker:
    """Actor body (wrapped with ``ray.remote`` at run time)."""

    def __init__(self, config: BackendConfig, name: str):
        self.state = WorkerState.start(config, f"{name}@{socket.gethostname()}")

    def ready(self) -> str:
        return self.state.name

    def run(self, job: Job) -> Outcome:
        return self.state.run(job)


class RayPool(Pool):
    def __init__(self, config: BackendConfig, cpus: float, gpus: float):
        import ray

        self.ray = ray
        self.config = config
        self.actor_cls = ray.remote(num_cpus=cpus, num_gpus=gpus, max_restarts=0)(RayWorker)
        self.actors: dict[str, object] = {}
        self.refs: dict[object, tuple[str, int]] = {}  # ref → (worker, submission number)
        self.submitted = 0

    def start(self, name: str) -> None:
        actor = self.actor_cls.remote(self.config, name)
        try:
            self.ray.get(actor.ready.remote())
        except self.ray.exceptions.RayError as e:
            raise SimulplayError(f"Ray worker {name} could not load its backend: {e}".splitlines()[0]) from e
        self.actors[name] = actor

    def submit(self, name: str, unit: list[Job]) -> None:
        actor = self.actors[name]
        for job in unit:
            self.refs[actor.run.remote(job)] = (name, self.submitted)
            self.submitted += 1

    def poll(self, timeout: float):
        if not self.refs:
            return []
        ready, _ = self.ray.wait(list(self.refs), num_returns=len(self.refs), timeout=timeout)
        events, dead = [], set()
        for ref in sorted(ready, key=lambda r: self.refs[r][1]):  # submission order per actor
            name, _ = self.refs.pop(ref)
            if name in dead:
                continue
            try:
                events.append(("outcome", name, self.ray.get(ref)))
            except self.ray.exceptions.RayActorError:
                dead.add(name)
        for name in dead:
            for ref in [r for r, (n, _) in self.refs.items() if n == name]:
                del self.refs[ref]
            self.actors.pop(name, None)
            events.append(("dead", name, None))
        return events

    def stop(self) -> None:
        for actor in self.actors.values():
            self.ray.kill(actor)
        self.actors.clear()


def run_ray(config: BackendConfig, units: list[list[Job]], driver: Driver, address: str | None, workers: int | None,
            cpus: float, gpus: float, retries: int) -> None:
    try:
        import ray
    except ImportError as e:
        raise MissingExtra("ray") from e
    started = not ray.is_initialized()
    if started:
        ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        resources = ray.cluster_resources()
        slots = int(resources.get("GPU", 0) // gpus) if gpus else int(resources.get("CPU", 1) // max(cpus, 1e-9))
        n = min(workers, slots) if workers else slots
        if n < 1:
            raise SimulplayError(f"the Ray cluster has no slot for a worker with {cpus} CPU(s) and {gpus} GPU(s) "
                                 f"(resources: {resources})")
        schedule(RayPool(config, cpus, gpus), [f"ray-{i}.0" for i in range(n)], units, driver, retries)
    finally:
        if started:
            ray.shutdown()
