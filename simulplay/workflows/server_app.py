"""The ASGI application of ``simulplay serve`` (Starlette, run by uvicorn): its endpoints,
the bounded reading of request bodies, and the synthesis of one request into an encoded
response (simulplay.backends.audio_formats) on its worker's thread.

HTTP itself (keep-alive, pipelining, chunked transfer encoding, the framing of bodies) is
uvicorn's: an answer given before the body was read (a 401, a 404) leaves the body to the
parser, which skips it, so the next request on the connection is read where it starts. The
application bounds what uvicorn does not: a body over ``max_body`` bytes (by its
Content-Length, or as it arrives when chunked) gets 413, and a body not complete within
``body_timeout`` seconds gets 408; both close the connection.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import threading
from typing import TYPE_CHECKING, Any

from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response

from simulplay.backends.audio_formats import CONTENT_TYPES, DEFAULT_FORMAT, FORMATS, WAV_MODES, Encoder

if TYPE_CHECKING:
    from simulplay.backends.base import Backend

SpeechServer = Any  # simulplay.workflows.server.SpeechServer (which imports this module)

FIELDS = ("model", "input", "voice", "response_format", "speed", "stream_format")
REFUSED_FORMATS = {"aac": "no encoder of it is installed (libsndfile writes mp3, opus and flac)"}


def error(status: int, message: str, kind: str = "invalid_request_error", *, close: bool = False) -> JSONResponse:
    """An OpenAI-style JSON error; ``close``: the connection closes after it (a body left unread)."""
    return JSONResponse({"error": {"message": message, "type": kind, "param": None, "code": None}}, status,
                        headers={"Connection": "close"} if close else None)


def build_app(server: SpeechServer):
    """The ASGI application: a plain dispatch on method and path to Starlette requests and
    responses (Starlette's router and middleware stack cost as much CPU per request as the
    rest of the server, which a loopback client shares)."""

    async def models(request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": server.model, "object": "model",
                                                         "owned_by": "simulplay"}]})

    async def identity(request: Request) -> Response:
        return JSONResponse(server.identity)

    async def speech(request: Request) -> Response:
        body = await read_body(request, server.max_body, server.body_timeout)
        if isinstance(body, Response):
            return body
        try:
            data = json.loads(body)
        except ValueError:
            return error(400, "the body is not JSON")
        wav_mode = request.query_params.get("wav", "whole")
        problem = check_request(data, server.model, server.voices) or (
            None if wav_mode in WAV_MODES else f"wav must be {' or '.join(WAV_MODES)}, not '{wav_mode}'")
        if problem:
            return error(400, problem)
        return await synthesize(server, data["input"], data.get("response_format") or DEFAULT_FORMAT, wav_mode)

    routes = {("POST", "/v1/audio/speech"): speech, ("GET", "/v1/models"): models,
              ("GET", "/v1/simulplay/identity"): identity}
    paths = {path for _, path in routes}

    async def app(scope, receive, send) -> None:
        if scope["type"] != "http":
            return
        request = Request(scope, receive)
        endpoint = routes.get((scope["method"], scope["path"]))
        response = _denied(server, request)
        if response is None and endpoint is None:
            status = 405 if scope["path"] in paths else 404
            response = error(status, f"no such endpoint {scope['method']} {scope['path']} "
                             "(POST /v1/audio/speech, GET /v1/models)")
        if response is None:
            response = await endpoint(request)
        await response(scope, receive, send)

    return app


def _denied(server: SpeechServer, request: Request) -> Response | None:
    if not server.api_key:
        return None
    given = request.headers.get("authorization", "")
    if hmac.compare_digest(given.encode(), f"Bearer {server.api_key}".encode()):
        return None
    return error(401, "missing or wrong API key (Authorization: Bearer …)", "authentication_error")


async def read_body(request: Request, max_body: int, timeout: float) -> bytes | Response:
    """The request's body, or the error to answer: 413 over ``max_body`` bytes, 408 when it
    is not complete within ``timeout`` seconds, 400 without a body."""
    length = request.headers.get("content-length")
    if length is not None and (not length.isdigit() or int(length) > max_body):
        return error(413 if length.isdigit() else 400, f"a body of at most {max_body} bytes is accepted",
                     close=True)
    body = bytearray()
    try:
        async with asyncio.timeout(timeout):
            async for piece in request.stream():
                body += piece
                if len(body) > max_body:
                    return error(413, f"a body of at most {max_body} bytes is accepted", close=True)
    except TimeoutError:
        return error(408, f"the body did not arrive within {timeout:g} s", close=True)
    except ClientDisconnect:
        return error(400, "the client went away before its body was complete", close=True)
    if not body:
        return error(400, f"a JSON body of 1 to {max_body} bytes is required")
    return bytes(body)


def check_request(body: Any, model: str, voices: Any) -> str | None:
    """The problem with a speech request body, or None (``voices``: the server's VoiceMap)."""
    if not isinstance(body, dict):
        return "the body must be a JSON object"
    unknown = sorted(set(body) - set(FIELDS))
    if unknown:
        return f"unknown field(s) {', '.join(unknown)} (accepted: {', '.join(FIELDS)})"
    if not isinstance(body.get("input"), str) or not body["input"].strip():
        return "'input' must be a non-empty string"
    if body.get("model") != model:
        return f"this server serves model '{model}', not '{body.get('model')}'"
    problem = voices.problem(body.get("voice"))
    if problem:
        return problem
    fmt = body.get("response_format") or DEFAULT_FORMAT
    if fmt not in FORMATS:
        why = f" ({REFUSED_FORMATS[fmt]})" if fmt in REFUSED_FORMATS else ""
        return f"response_format '{fmt}' is not served{why}; served: {', '.join(FORMATS)}"
    if body.get("speed", 1) != 1:
        return "speed is fixed at 1 (the backend's settings are chosen when the server starts)"
    if body.get("stream_format", "audio") != "audio":
        return "only stream_format 'audio' is served"
    return None


class Handover:
    """Items from a worker's thread to a queue on the event loop: what the thread puts while
    the loop has not yet taken the last batch goes with it, so a fast synthesis wakes the
    loop once or twice per request, not once per item. ("done", None), the thread's last
    item, calls ``done`` (the worker is free) instead of entering the queue."""

    def __init__(self, loop: asyncio.AbstractEventLoop, items: asyncio.Queue, done):
        self.loop, self.items, self.done = loop, items, done
        self.pending: list = []
        self.lock = threading.Lock()

    def __call__(self, item) -> None:
        with self.lock:
            self.pending.append(item)
            if len(self.pending) > 1:  # a wake-up is already on its way
                return
        self.loop.call_soon_threadsafe(self._drain)

    def _drain(self) -> None:
        with self.lock:
            batch, self.pending = self.pending, []
        for item in batch:
            if item[0] == "done":
                self.done()
            else:
                self.items.put_nowait(item)


def produce(backend: Backend, text: str, fmt: str, wav_mode: str, put, cancel: threading.Event) -> None:
    """On the worker's thread: synthesize, encode, and ``put`` ("start", Encoder), ("data",
    bytes)…, then ("end", bytes) or ("error", message), and last ("done", None). Stops early
    when ``cancel`` is set."""
    try:
        _produce(backend, text, fmt, wav_mode, put, cancel)
    finally:
        put(("done", None))


def _produce(backend: Backend, text: str, fmt: str, wav_mode: str, put, cancel: threading.Event) -> None:
    encoder = None
    try:
        stream = backend.stream(text)
        try:
            for samples in stream:
                if encoder is None:
                    encoder = Encoder(fmt, backend.sample_rate, wav_mode=wav_mode)
                    put(("start", encoder))
                put(("data", encoder.feed(samples)))
                if cancel.is_set():
                    return
        finally:
            stream.close()
        if encoder is None:
            encoder = Encoder(fmt, backend.sample_rate, wav_mode=wav_mode)
            put(("start", encoder))
        put(("end", encoder.finish()))
    except Exception as e:  # noqa: BLE001 - reported to the client, never swallowed
        put(("error", f"{type(e).__name__}: {e}".replace("\n", " ")[:500]))


async def synthesize(server: SpeechServer, text: str, fmt: str, wav_mode: str) -> Response:
    """Take a worker (first in, first out), synthesize on its thread, and answer: a failure
    before the first audio (or, for a format sent whole, before the end) is a 500; after
    streamed audio began it cuts the stream (no final chunk), so the client sees a failure."""
    backend = await server.pool.acquire()
    items: asyncio.Queue = asyncio.Queue()
    cancel = threading.Event()
    put = Handover(asyncio.get_running_loop(), items, lambda: server.pool.release(backend))
    server.workers[id(backend)].submit(produce, backend, text, fmt, wav_mode, put, cancel)
    kind, value = await items.get()
    if kind == "error":
        return server.failed(value)
    encoder: Encoder = value
    headers = {"X-Sample-Rate": str(encoder.out_rate), "X-Voice": server.voice}
    if not encoder.streamed:
        parts = []
        while kind != "end":
            kind, value = await items.get()
            if kind == "error":
                return server.failed(value)
            parts.append(value)
        return Response(b"".join(parts), media_type=CONTENT_TYPES[fmt], headers=headers)
    return AudioStream(items, encoder, cancel, server, media_type=CONTENT_TYPES[fmt], headers=headers)


class AudioStream(Response):
    """A streamed answer: each encoded piece is sent the moment it exists (chunked)."""

    def __init__(self, items: asyncio.Queue, encoder: Encoder, cancel: threading.Event, server: SpeechServer,
                 **kw):
        super().__init__(None, **kw)
        self.raw_headers = [(k, v) for k, v in self.raw_headers if k != b"content-length"]  # chunked
        self.items, self.encoder, self.cancel, self.server = items, encoder, cancel, server

    async def __call__(self, scope, receive, send) -> None:
        try:
            await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
            first = self.encoder.start()
            if first:
                await send({"type": "http.response.body", "body": first, "more_body": True})
            while True:
                kind, value = await self.items.get()
                data = b""
                while kind == "data":  # the pieces already there go in one write
                    data += value
                    if self.items.empty():
                        break
                    kind, value = self.items.get_nowait()
                if kind == "error":
                    self.server.failed(value)
                    raise RuntimeError(f"synthesis failed after the stream began: {value}")
                if kind == "end":  # the last piece and the end of the stream in one write
                    await send({"type": "http.response.body", "body": data + value, "more_body": False})
                    return
                if data:
                    await send({"type": "http.response.body", "body": data, "more_body": True})
        finally:
            self.cancel.set()
