"""`simulplay serve --workers K`: K backend instances, a request takes a free one, requests
beyond K wait first in, first out; the identity endpoint records K (127.0.0.1 only)."""

import asyncio
import json
import threading
import urllib.request

import numpy as np

from simulplay.backends import parse_backend
from simulplay.workflows.server import WorkerPool, make_server
from tests.support.checks import wait_until
from tests.support.fakes import FakeBackend, FakeSettings


class HeldFake(FakeBackend):
    """Counts the requests inside its synthesis, and holds each there until ``release`` is set."""

    release = threading.Event()
    lock = threading.Lock()
    entered: list[str] = []
    active = 0
    most = 0

    def stream(self, text):
        with HeldFake.lock:
            HeldFake.entered.append(text)
            HeldFake.active += 1
            HeldFake.most = max(HeldFake.most, HeldFake.active)
        try:
            if not HeldFake.release.wait(60):
                raise RuntimeError("the test never released the request")
            yield from super().stream(text)
        finally:
            with HeldFake.lock:
                HeldFake.active -= 1


def test_two_workers_serve_two_requests_at_once_and_the_third_waits():
    server = make_server([HeldFake(FakeSettings()) for _ in range(2)], "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    results: dict[str, int] = {}

    def ask(text: str) -> None:
        client = parse_backend(f"http:base_url={server.url},model={server.model}").create()
        results[text] = len(np.concatenate(list(client.stream(text))))

    threads = [threading.Thread(target=ask, args=(t,), daemon=True) for t in ("ab.", "abc.", "abcd.")]
    try:
        for t in threads:
            t.start()
        wait_until(lambda: len(HeldFake.entered) == 2 and server.pool.waiting == 1,
                   "two requests in synthesis and one waiting")
        assert HeldFake.active == 2 and len(HeldFake.entered) == 2  # both in service at once; the third waits
        HeldFake.release.set()
        for t in threads:
            t.join(60)
        with urllib.request.urlopen(f"{server.url}/simulplay/identity", timeout=10) as r:
            identity = json.loads(r.read())
    finally:
        HeldFake.release.set()
        server.shutdown()
        server.server_close()
    assert HeldFake.most == 2 and len(HeldFake.entered) == 3
    assert results == {"ab.": 1600, "abc.": 2400, "abcd.": 3200}  # 800 samples per letter
    assert identity["workers"] == 2 and identity["voice"] == "sine"


def test_waiting_requests_get_an_instance_first_in_first_out():
    async def scenario() -> list[str]:
        pool = WorkerPool(["only"])  # one instance: every other caller queues
        held = await pool.acquire()
        order: list[str] = []

        async def waiter(name: str) -> None:
            got = await pool.acquire()
            order.append(name)
            pool.release(got)

        tasks = []
        for name in ("first", "second", "third"):  # each starts waiting only after the one before it
            tasks.append(asyncio.create_task(waiter(name)))
            while pool.waiting < len(tasks):
                await asyncio.sleep(0)
        pool.release(held)
        await asyncio.gather(*tasks)
        assert pool.waiting == 0
        return order

    assert asyncio.run(scenario()) == ["first", "second", "third"]


def test_a_one_worker_server_keeps_the_identity_it_had_before_workers_existed():
    """The http client puts the server's identity into its own, and audio keys hold it: a plain
    server's identity is the backend's alone, so stores made against it before are reused."""
    backend = FakeBackend(FakeSettings())
    server = make_server(backend, "127.0.0.1", 0)
    try:
        assert server.identity == backend.identity()
        assert "workers" not in server.identity
    finally:
        server.server_close()
