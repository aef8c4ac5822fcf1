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
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import httpx
import numpy as np

from simulplay.analysis.player import first_audible_part
from simulplay.backends.base import BackendError
from simulplay.backends.served import PcmDecoder

NAN = math.nan
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


class Failure(Exception):
    """A request that did not deliver its audio (the message is recorded)."""


async def send(client: httpx.AsyncClient, endpoint: Endpoint, rec: Record) -> None:
    """Send one request and read its audio piece by piece, recording every time on ``rec``."""
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
            decoder = PcmDecoder(int(rate) if rate else endpoint.sample_rate,
                                 wav=endpoint.response_format == "wav")
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
            decoder.finish()
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
        wait = t0 + rec.dispatch_s - clock()
        if wait > 0:
            await asyncio.sleep(wait)
        rec.released_s = rec.now()
        await send(client, endpoint, rec)
        previous_end = rec.ended_s


async def warm_up(client: httpx.AsyncClient, endpoint: Endpoint) -> None:
    """One untimed request before any output starts, as synthesis warms a backend up: the
    client's and the server's first-request costs stay out of every clock. Its failure is
    not recorded (every timed request records its own)."""
    rec = Record(-1, -1, 0.0, WARM_UP_TEXT, t0=clock())
    await send(client, endpoint, rec)


WARM_UP_TEXT = "Warm up."


def http_client(endpoint: Endpoint, connections: int) -> httpx.AsyncClient:
    """The one asyncio HTTP client every live command sends through: ``endpoint.timeout``
    (s) on every wait, up to ``connections`` connections kept open, no proxy from the
    environment."""
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    return httpx.AsyncClient(timeout=httpx.Timeout(endpoint.timeout), limits=limits, trust_env=False)


async def run_sessions(endpoint: Endpoint, outputs: Sequence[Sequence[Record]], concurrent: int | None = None) -> None:
    """Run every output's session, all at once or ``concurrent`` at a time (each output's
    time 0 is when its session starts), on one httpx client."""
    n = len(outputs) if concurrent is None else max(1, min(concurrent, len(outputs)))
    gate = asyncio.Semaphore(n)
    timeout = httpx.Timeout(endpoint.timeout)
    limits = httpx.Limits(max_connections=n, max_keepalive_connections=n)

    async with httpx.AsyncClient(timeout=timeout, limits=limits, trust_env=False) as client:
        await warm_up(client, endpoint)

        async def one(records: Sequence[Record]) -> None:
            async with gate:
                await session(client, endpoint, records)

        await asyncio.gather(*(one(r) for r in outputs))
