"""The scheduling loop shared by parallel executors.

A pool starts named workers, runs jobs on them, and reports events:
``("outcome", worker, Outcome)`` or ``("dead", worker, None)`` when a worker process or
actor died. A unit (one output's requests) stays on one worker, which gets its next job
only after answering the previous one: one job in flight per worker, so a death is
blamed on exactly the job that was running (an answer lost in a dying process cannot
be mistaken for it). Jobs a dead worker had not finished go back to the front of the
queue; the one it was running counts one retry, and a job that killed workers more than
``retries`` times is recorded as failed.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import deque

from simulplay.core.errors import SimulplayError
from simulplay.synthesis.executors.jobs import Driver, Job, Outcome, died, end_probe, is_dynamic


class Pool(ABC):
    @abstractmethod
    def start(self, name: str) -> None:
        """Start a worker (load and warm its backend); raise SimulplayError if it cannot."""

    @abstractmethod
    def submit(self, name: str, unit: list[Job]) -> None: ...

    @abstractmethod
    def poll(self, timeout: float) -> list[tuple[str, str, Outcome | None]]: ...

    @abstractmethod
    def stop(self) -> None: ...


def _loop_job(unit, driver: Driver) -> Job | None | bool:
    """A loop unit's next job, claimed (None: the unit is done; False: another process
    holds the key, try later). A key whose record appeared meanwhile is served from it."""
    while (job := unit.next_job()) is not None:
        mine, busy = driver.claim([job])
        if mine:
            return job
        if busy:
            return False
        unit.finished(job.key)
    return None


def schedule(pool: Pool, names: list[str], units: list, driver: Driver, retries: int) -> None:
    """Run the units on the pool's workers (module docstring); a loop unit (closed-loop
    output) stays on one worker, which gets each next request once the previous is stored."""
    queue: deque = deque(units)
    inflight: dict[str, deque[Job]] = {}
    loop_of: dict[str, object] = {}  # worker → the loop unit it runs
    idle: deque[str] = deque()
    spawned = idle_deaths = 0
    for name in names:
        pool.start(name)
        idle.append(name)
    try:
        while queue or any(inflight.values()):
            later = []
            while idle and queue:
                unit = queue.popleft()
                if is_dynamic(unit):
                    job = _loop_job(unit, driver)
                    if job is False:
                        later.append(unit)
                    elif job is not None:
                        name = idle.popleft()
                        inflight[name], loop_of[name] = deque([job]), unit
                        pool.submit(name, [job])
                    continue
                mine, busy = driver.claim(unit)
                driver.deferred.extend(busy)
                if not mine:
                    continue
                name = idle.popleft()
                inflight[name] = deque(mine)
                pool.submit(name, [mine[0]])
            queue.extend(later)
            for kind, name, out in pool.poll(0.5):
                pending = inflight.get(name, deque())
                if kind == "outcome":
                    if not pending:  # a late answer from a worker declared dead: already requeued
                        continue
                    job = pending.popleft()
                    if job.key != out.key:
                        raise SimulplayError(f"worker {name} answered {out.key} for {job.key}")
                    driver.outcome(job, out)
                    if name in loop_of:
                        loop_of[name].finished(job.key)
                        nxt = _loop_job(loop_of[name], driver)
                        if nxt is False:
                            queue.append(loop_of[name])
                        elif nxt is not None:
                            pending.append(nxt)
                        if not pending:
                            loop_of.pop(name)
                    if pending:
                        pool.submit(name, [pending[0]])
                    else:
                        inflight.pop(name, None)
                        idle.append(name)
                    continue
                # a worker died: retry what it was running, requeue the rest, replace it
                inflight.pop(name, None)
                if name in idle:
                    idle.remove(name)
                driver.stats.worker_deaths += 1
                unit = loop_of.pop(name, None)
                if pending:
                    job = pending[0]
                    job.attempts += 1
                    driver.retry(job)
                    if job.attempts > retries:
                        pending.popleft()
                        driver.outcome(job, died(job, name, retries))
                        if unit is not None:
                            unit.finished(job.key)
                    for j in pending:  # give the claims back; the requeued unit claims again
                        fd = driver.locks.pop(j.key, None)
                        if fd is not None:
                            driver.store.unlock(fd, j.key)
                    if unit is not None:
                        queue.appendleft(unit)
                    elif pending:
                        queue.appendleft(list(pending))
                else:  # died with nothing to do: not a request's fault, so bounded separately
                    idle_deaths += 1
                    if idle_deaths > len(names) * (retries + 1):
                        raise SimulplayError(f"idle workers keep dying ({idle_deaths} times); giving up")
                spawned += 1
                replacement = f"{name.rsplit('.', 1)[0]}.{spawned}"
                pool.start(replacement)
                idle.append(replacement)
        end_probes(pool, list(idle), driver)
    finally:
        pool.stop()


def end_probes(pool: Pool, names: list[str], driver: Driver) -> None:
    """Every live worker times the clock probe once more before it stops (the run's end)."""
    waiting = set(names)
    for name in names:
        pool.submit(name, [end_probe()])
    while waiting:
        for kind, name, out in pool.poll(0.5):
            if name in waiting:
                waiting.discard(name)
                if kind == "outcome":
                    driver.outcome(end_probe(), out)
