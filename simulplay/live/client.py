"""The real-time client: each output's requests released on a monotonic clock and sent
over HTTP (httpx's asyncio client), one request in flight per output.

Time base: every time here is wall seconds on :func:`time.perf_counter` (a monotonic clock)
since the output's time 0, the instant its source starts. ``--speed K`` divides every
trace time by K before it gets here, so the times are those of the trace scaled by 1/K
(audio plays at its real rate; docs/live.md, "The time base").

A request is *released* by the rule at ``dispatch_s``; it is *due* at
``max(dispatch_s, end of the previous request)`` (one request in flight per output, as the
serial synthesizer of docs/concepts.md); the client records when it woke for it
(``released_s``), when it sent it (``sent_s``), the first body byte (``first_byte_s``),
each piece of audio with the samples it completed (``chunk_s``, ``chunk_n``), the first
audible audio (the arrival of the piece that ends the first 10 ms window at or above
−40 dBFS, :func:`simulplay.analysis.player.first_audible_part`) and the end of the response
(``last_byte_s``). Lateness = actual − due, for the release and for the send. A request
that fails (refused connection, HTTP status other than 200, a stream that stalls longer
than the timeout or is cut off) keeps its ``status`` and ``error``; the output goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib.util
import math
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import httpx
import numpy as np

from simulplay.analysis.player import first_audible_part
from simulplay.backends.audio_formats import decoder_for
from simulplay.backends.base import BackendError

if importlib.util.find_spec("sniffio") is None:
    # httpcore asks ``import sniffio`` on every lock and every request; without sniffio
    # installed (httpx no longer needs it) each failed import searches sys.path again, about
    # 50 µs a time and ten times a request, on the event loop. A None entry makes the import
    # fail at once, with the same result (httpcore then assumes asyncio, as it would).
    sys.modules.setdefault("sniffio", None)

NAN = math.nan
#: Seconds before a release at which the client stops sleeping on the loop's timer (whose
#: wake-up is up to a millisecond late: epoll counts whole milliseconds) and yields to the
#: loop until the release instead (docs/live.md, "Lateness and the verdict"). Longer spins
#: (1.5 ms) made the p99 worse on a busy machine: a process that keeps running loses the
#: scheduler's preference that a waking one gets.
SPIN_S = 0.0005
#: Seconds between the moment an output's session starts and its time 0, so that sessions
#: started together all begin on time.
LEAD_S = 0.05
clock = time.perf_counter


@dataclass(frozen=True)
class Endpoint:
    """Where requests go and what they ask for: ``url`` is ``{base_url}/audio/speech``;
    ``timeout`` (s) bounds every wait: connecting, the response's start and each piece."""

    url: str
    model: str
    voice: str = ""
    response_format: str = "pcm"
    sample_rate: int = 24_000
    timeout: float = 30.0
    api_key: str | None = field(default=None, repr=False)

    def body(self, text: str) -> dict[str, str]:
        body = {"model": self.model, "input": text, "response_format": self.response_format}
        if self.voice:
            body["voice"] = self.voice
        return body

    def headers(self) -> dict[str, str]:
        headers = {"Accept": f"audio/{self.response_format}"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers


@dataclass
class Record:
    """One request as the client lived it (seconds since its output's time 0)."""

    output: int
    seq: int
    dispatch_s: float
    text: str
    due_s: float = NAN
    released_s: float = NAN
    sent_s: float = NAN
    first_byte_s: float = NAN
    first_audible_s: float = NAN
    last_byte_s: float = NAN
    ended_s: float = NAN  # success or failure: when the client was done with it
    chunk_s: list[float] = field(default_factory=list)
    chunk_n: list[int] = field(default_factory=list)
    pieces: list[np.ndarray] = field(default_factory=list, repr=False)
    sample_rate: int = 0
    status: int | None = None
    error: str = ""

    @property
    def ok(self) -> bool:
        return not self.error and not math.isnan(self.last_byte_s)

    @property
    def n_samples(self) -> int:
        return int(sum(self.chunk_n))

    def audio(self) -> np.ndarray:
        return np.concatenate(self.pieces).astype(np.int16) if self.pieces else np.zeros(0, np.int16)

    def fail(self, message: str) -> None:
        if not self.error:
            self.error = message
        if math.isnan(self.ended_s):
            self.ended_s = self.now()
        self.last_byte_s = NAN

    t0: float = field(default=NAN, repr=False)

    def now(self) -> float:
        return clock() - self.t0


async def sleep_until(deadline: float) -> None:
    """Return at ``deadline`` (on :data:`clock`): sleep on the loop's timer until
    :data:`SPIN_S` before it, then yield to the loop (other sessions run) until it passes."""
    while (left := deadline - clock()) > 0:
        await asyncio.sleep(left - SPIN_S if left > SPIN_S else 0)


@contextlib.contextmanager
def frozen_heap() -> Iterator[None]:
    """Keep the garbage collector's full passes short during a run: every object alive at
    the start (pandas, numpy, the plan) is moved out of its generations (:func:`gc.freeze`),
    so that a full collection scans only what the run made (a 50 ms pause before)."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


class Failure(Exception):
    """A request that did not deliver its audio (the message is recorded)."""


async def send(client: httpx.AsyncClient, endpoint: Endpoint, rec: Record, *, keep_pieces: bool = False) -> None:
    """Send one request and read its audio piece by piece, recording every time on ``rec``;
    its first audible piece is found at the end, or with ``keep_pieces`` later by the
    caller (:func:`find_first_audible`)."""
    received = 0
    rec.sent_s = rec.now()
    try:
        async with client.stream("POST", endpoint.url, json=endpoint.body(rec.text),
                                 headers=endpoint.headers()) as resp:
            rec.status = resp.status_code
            if resp.status_code != 200:
                detail = (await resp.aread())[:300].decode("utf-8", "replace").strip()
                raise Failure(f"HTTP {resp.status_code} {resp.reason_phrase}" + (f": {detail}" if detail else ""))
            rate = resp.headers.get("x-sample-rate")
            decoder = decoder_for(endpoint.response_format, int(rate) if rate else endpoint.sample_rate)
            async for piece in resp.aiter_raw():
                t = rec.now()
                if received == 0:
                    rec.first_byte_s = t
                received += len(piece)
                samples = decoder.feed(piece)
                if len(samples):
                    rec.chunk_s.append(t)
                    rec.chunk_n.append(int(len(samples)))
                    rec.pieces.append(samples)
            tail = decoder.finish()  # a format decoded whole (flac) gives its samples at the end
            if len(tail):
                rec.chunk_s.append(rec.now())
                rec.chunk_n.append(int(len(tail)))
                rec.pieces.append(tail)
            rec.sample_rate = int(decoder.rate or endpoint.sample_rate)
        rec.last_byte_s = rec.ended_s = rec.now()
    except Failure as e:
        rec.fail(str(e))
    except httpx.ConnectError as e:
        rec.fail(f"connection failed ({e or type(e).__name__})")
    except httpx.TimeoutException:
        where = "no response" if rec.status is None else f"no data after {received} bytes"
        rec.fail(f"{where} within {endpoint.timeout:g} s (stalled)")
    except (httpx.HTTPError, BackendError) as e:
        rec.fail(f"stream broken after {received} bytes ({type(e).__name__}: {e})")
    except asyncio.CancelledError:
        rec.fail("interrupted")
        raise
    if not keep_pieces:
        find_first_audible(rec)


def find_first_audible(rec: Record) -> None:
    """Set ``first_audible_s`` from the received pieces (a scan of the whole response: done
    after the run where the audio is kept, so that it takes no time from the loop)."""
    if rec.ok and rec.pieces:
        k = first_audible_part(rec.pieces, rec.sample_rate)
        rec.first_audible_s = rec.chunk_s[k] if k >= 0 else NAN


async def session(client: httpx.AsyncClient, endpoint: Endpoint, records: Sequence[Record]) -> None:
    """One output: release each request at its dispatch time (or at once when the previous
    request ended later) and send it; records are filled in place."""
    t0 = clock() + LEAD_S
    previous_end = 0.0
    for rec in records:
        rec.t0 = t0
        rec.due_s = max(rec.dispatch_s, previous_end)
        await sleep_until(t0 + rec.dispatch_s)
        rec.released_s = rec.now()
        await send(client, endpoint, rec, keep_pieces=True)
        previous_end = rec.ended_s


class LoopRecords(list):
    """A closed-loop output's records, made as its policy sends them (``loop``: the policy
    on the wall clock, :class:`~simulplay.grouping.wallclock.WallClockLoop`; ``output``: the
    output's number)."""

    def __init__(self, loop, output: int):
        super().__init__()
        self.loop, self.output = loop, output


async def wait_until_or(deadline: float, event: asyncio.Event) -> None:
    """Return at ``deadline`` (on :data:`clock`, as :func:`sleep_until`) or as soon as
    ``event`` is set, whichever comes first."""
    while not event.is_set() and (left := deadline - clock()) > 0:
        if left > SPIN_S:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), left - SPIN_S)
        else:
            await asyncio.sleep(0)


async def loop_session(client: httpx.AsyncClient, endpoint: Endpoint, records: LoopRecords) -> None:
    """One closed-loop output: its policy runs on the wall clock (docs/live.md, "Policies
    live"). The decider wakes at the policy's next instant (an arrival, the end of a part, a
    wake-up) or when a request's last byte arrives, hands the policy every instant up to
    the clock's reading, and queues what it sent, each request labelled with the instant it
    was decided at; the sender sends the queued requests one at a time and reports each
    one's readiness (its last byte, or its failure: no audio) with the audio received."""
    from simulplay.core.timebase import scalar_ns
    from simulplay.grouping.engine import Served

    loop, t0 = records.loop, clock() + LEAD_S
    kick, queue = asyncio.Event(), asyncio.Queue()

    async def sender() -> None:
        previous_end = 0.0
        while (rec := await queue.get()) is not None:
            rec.due_s = max(rec.dispatch_s, previous_end)
            rec.released_s = rec.now()
            await send(client, endpoint, rec, keep_pieces=True)
            previous_end = rec.ended_s
            loop.ready(rec.seq, scalar_ns(rec.sent_s), scalar_ns(rec.ended_s),
                       Served(0.0, n_samples=rec.n_samples, sample_rate=rec.sample_rate or endpoint.sample_rate))
            kick.set()

    async def guarded() -> None:
        try:
            await sender()
        finally:
            kick.set()

    task = asyncio.create_task(guarded())
    try:
        while not loop.done:
            if task.done():  # the sender ended early: its error, or nothing more will be ready
                task.result()
                break
            nxt = loop.next_instant()
            await (kick.wait() if nxt is None else wait_until_or(t0 + nxt / 1e9, kick))
            kick.clear()
            for req in loop.advance(scalar_ns(clock() - t0)):
                rec = Record(records.output, req.seq, req.dispatch_s, req.text, t0=t0)
                records.append(rec)
                queue.put_nowait(rec)
    finally:
        queue.put_nowait(None)
        await task


async def warm_up(client: httpx.AsyncClient, endpoint: Endpoint) -> None:
    """One untimed request before any output starts, as synthesis warms a backend up: the
    client's and the server's first-request costs stay out of every clock. Its failure is
    not recorded (every timed request records its own)."""
    rec = Record(-1, -1, 0.0, WARM_UP_TEXT, t0=clock())
    await send(client, endpoint, rec)


WARM_UP_TEXT = "Warm up."


def http_client(endpoint: Endpoint, connections: int, ssl_context=None) -> httpx.AsyncClient:
    """An asyncio HTTP client as every live command sends through: ``endpoint.timeout`` (s)
    on every wait, up to ``connections`` connections kept open, no proxy from the
    environment; ``ssl_context`` (one shared by many clients: building one takes ~40 ms)."""
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    return httpx.AsyncClient(timeout=httpx.Timeout(endpoint.timeout), limits=limits, trust_env=False,
                             verify=ssl_context if ssl_context is not None else True)


@contextlib.asynccontextmanager
async def http_clients(endpoint: Endpoint, n: int, connections: int = 1):
    """``n`` clients of ``connections`` connections each, one per output (or load client).
    One pool for all would cost every request a scan of every pooled connection (httpcore
    checks each idle one for expiry, quadratic in their number: ~2 ms a request with 27,
    most of the client's lateness before); small pools keep that constant."""
    ssl_context = httpx.create_ssl_context()
    async with contextlib.AsyncExitStack() as stack:
        yield [await stack.enter_async_context(http_client(endpoint, connections, ssl_context)) for _ in range(n)]


async def run_sessions(endpoint: Endpoint, outputs: Sequence[Sequence[Record]], concurrent: int | None = None) -> None:
    """Run every output's session, all at once or ``concurrent`` at a time (each output's
    time 0 is when its session starts), each on its own httpx client (one connection, kept
    open). The warm-up request goes through the first output's client."""
    n = len(outputs) if concurrent is None else max(1, min(concurrent, len(outputs)))
    gate = asyncio.Semaphore(n)

    with frozen_heap():
        async with http_clients(endpoint, len(outputs)) as clients:
            if clients:
                await warm_up(clients[0], endpoint)

            async def one(client: httpx.AsyncClient, records: Sequence[Record]) -> None:
                async with gate:
                    if isinstance(records, LoopRecords):
                        await loop_session(client, endpoint, records)
                    else:
                        await session(client, endpoint, records)

            try:
                await asyncio.gather(*(one(c, r) for c, r in zip(clients, outputs)))
            finally:  # the audio is all kept: its first audible pieces are found after the run
                for rec in (r for records in outputs for r in records):
                    find_first_audible(rec)
