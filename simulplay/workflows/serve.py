"""``simulplay serve``: an OpenAI-compatible speech server over any registered request backend.

Built on the standard library's ``http.server`` (HTTP/1.1, chunked transfer encoding):
one endpoint and one synthesizer per process need no framework, and nothing is added to
the dependencies. ``workers`` (K, default 1) backend instances serve the requests: each
request, once read and checked, takes a free instance for the whole of its synthesis; a
request that finds all K busy waits in a queue without limit and gets the next instance
freed, strictly in the order the requests were read (first in, first out), so K = 1 is the
serial synthesizer (docs/concepts.md#the-service-clock) and K > 1 lets a CPU machine show
how service grows with load (docs/many-listeners.md). Each instance loads and warms up its
own model (K times the memory and threads).

Endpoints (below ``/v1``):

* ``POST /v1/audio/speech`` with JSON ``{"model", "input", "voice"?, "response_format"?}``
  (``pcm`` default, or ``wav``; ``speed`` only 1; ``stream_format`` only ``audio``). The
  response streams each chunk the backend yields as one HTTP chunk the moment it exists:
  ``pcm`` is 16-bit little-endian mono, ``wav`` the same after a WAV header with unknown
  sizes. ``X-Sample-Rate`` gives the rate. A failure before the first chunk answers 500
  with an OpenAI-style JSON error; a failure after it cuts the stream (no final chunk),
  so the client records a failure.
* ``GET /v1/models``: the one served model; ``GET /v1/simulplay/identity``: the backend's
  identity (package versions, model hashes, settings, seed, device) and, with K > 1,
  ``workers`` (K), which the ``http`` client puts into its own identity (a one-worker
  server's identity is the backend's alone, as before ``--workers`` existed, so stores made
  against it are reused).

With ``api_key_env`` set, requests need ``Authorization: Bearer <the variable's value>``;
the key is kept in memory only and never logged.
"""

from __future__ import annotations

import hmac
import json
import os
import struct
import sys
import threading
from collections import deque
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from simulplay.backends.base import Backend
from simulplay.core.errors import InputError

MAX_BODY = 1 << 20  # bytes
FIELDS = ("model", "input", "voice", "response_format", "speed", "stream_format")


class WorkerPool:
    """K backend instances handed out first in, first out: :meth:`acquire` returns a free
    instance or waits behind every earlier waiter; :meth:`release` gives the instance to the
    longest-waiting request, or back to the free ones."""

    def __init__(self, backends: Sequence[Backend]):
        self.backends = list(backends)
        self._free = list(reversed(self.backends))
        self._waiting: deque[list] = deque()
        self._lock = threading.Lock()

    @property
    def waiting(self) -> int:
        """Requests waiting for an instance now."""
        with self._lock:
            return len(self._waiting)

    def acquire(self) -> Backend:
        with self._lock:
            if self._free and not self._waiting:
                return self._free.pop()
            slot: list = [threading.Event(), None]
            self._waiting.append(slot)
        slot[0].wait()
        return slot[1]

    def release(self, backend: Backend) -> None:
        with self._lock:
            if self._waiting:
                slot = self._waiting.popleft()
                slot[1] = backend
                slot[0].set()
            else:
                self._free.append(backend)


class SpeechServer(ThreadingHTTPServer):
    daemon_threads = True
    # a burst of c connections at once (a load level, a panel's outputs) beyond the listen
    # backlog (socketserver's 5) loses SYNs, which the client's kernel resends after 1 s
    request_queue_size = 256

    def __init__(self, backend: Backend | Sequence[Backend], address: tuple[str, int], *, model: str | None = None,
                 api_key: str | None = None, log: Callable[[str], None] | None = None):
        super().__init__(address, SpeechHandler)
        self.pool = WorkerPool([backend] if isinstance(backend, Backend) else backend)
        self.backend = self.pool.backends[0]
        self.model = model or self.backend.label()
        k = len(self.pool.backends)  # one worker: the identity of a plain server, so stores made before reuse
        self.identity = {**self.backend.identity(), **({"workers": k} if k > 1 else {})}
        self.voice = str(self.identity.get("voice", ""))
        self.api_key = api_key
        self.log = log

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/v1"


class SpeechHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: SpeechServer

    # ---- plumbing --------------------------------------------------------------

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        if self.server.log:
            self.server.log(f"{self.address_string()} {format % args}")

    def _json(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str, kind: str = "invalid_request_error") -> None:
        self._json(status, {"error": {"message": message, "type": kind}})

    def _authorized(self) -> bool:
        key = self.server.api_key
        if not key:
            return True
        given = self.headers.get("Authorization", "")
        if hmac.compare_digest(given.encode(), f"Bearer {key}".encode()):
            return True
        self._error(401, "missing or wrong API key (Authorization: Bearer …)", "authentication_error")
        return False

    # ---- endpoints -------------------------------------------------------------

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        if not self._authorized():
            return
        if self.path == "/v1/models":
            self._json(200, {"object": "list", "data": [{"id": self.server.model, "object": "model",
                                                         "owned_by": "simulplay"}]})
        elif self.path == "/v1/simulplay/identity":
            self._json(200, self.server.identity)
        else:
            self._error(404, f"no such endpoint {self.path}")

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        if self.path != "/v1/audio/speech":
            self._error(404, f"no such endpoint {self.path} (POST /v1/audio/speech)")
            return
        if not self._authorized():
            return
        request = self._read_request()
        if request is None:
            return
        text, fmt = request
        backend = self.server.pool.acquire()
        try:
            self._synthesize(text, fmt, backend)
        finally:
            self.server.pool.release(backend)

    def _read_request(self) -> tuple[str, str] | None:
        try:
            length = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            length = -1
        if not 0 < length <= MAX_BODY:
            self._error(413 if length > MAX_BODY else 400, f"a JSON body of 1 to {MAX_BODY} bytes is required")
            return None
        try:
            body = json.loads(self.rfile.read(length))
        except ValueError:
            self._error(400, "the body is not JSON")
            return None
        problem = check_request(body, self.server.model, self.server.voice)
        if problem:
            self._error(400, problem)
            return None
        return body["input"], body.get("response_format", "pcm")

    def _synthesize(self, text: str, fmt: str, backend: Backend) -> None:
        started = False
        try:
            for samples in backend.stream(text):
                if not started:
                    self._start_audio(fmt, backend.sample_rate)
                    started = True
                self._chunk(samples.astype("<i2").tobytes())
        except Exception as e:  # noqa: BLE001 - reported to the client, never swallowed
            message = f"{type(e).__name__}: {e}".replace("\n", " ")[:500]
            if self.server.log:
                self.server.log(f"synthesis failed: {message}")
            if not started:
                self._error(500, message, "server_error")
            else:  # the client sees a stream without its final chunk
                self.close_connection = True
            return
        if not started:
            self._start_audio(fmt, backend.sample_rate)
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _start_audio(self, fmt: str, rate: int) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "audio/wav" if fmt == "wav" else "audio/pcm")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("X-Sample-Rate", str(int(rate)))
        self.end_headers()
        if fmt == "wav":
            self._chunk(streaming_wav_header(int(rate)))

    def _chunk(self, data: bytes) -> None:
        if data:
            self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()


def check_request(body: Any, model: str, voice: str) -> str | None:
    """The problem with a speech request body, or None."""
    if not isinstance(body, dict):
        return "the body must be a JSON object"
    unknown = sorted(set(body) - set(FIELDS))
    if unknown:
        return f"unknown field(s) {', '.join(unknown)} (accepted: {', '.join(FIELDS)})"
    if not isinstance(body.get("input"), str) or not body["input"].strip():
        return "'input' must be a non-empty string"
    if body.get("model") != model:
        return f"this server serves model '{model}', not '{body.get('model')}'"
    if body.get("voice") not in (None, "", voice):
        return f"this server serves voice '{voice}', not '{body.get('voice')}'"
    if body.get("response_format", "pcm") not in ("pcm", "wav"):
        return f"response_format '{body.get('response_format')}' is not served (pcm or wav)"
    if body.get("speed", 1) != 1:
        return "speed is fixed at 1 (the backend's settings are chosen when the server starts)"
    if body.get("stream_format", "audio") != "audio":
        return "only stream_format 'audio' is served"
    return None


def streaming_wav_header(rate: int) -> bytes:
    """A 16-bit mono PCM WAV header whose sizes are unknown (0xFFFFFFFF), as streaming servers send."""
    return (b"RIFF" + struct.pack("<I", 0xFFFFFFFF) + b"WAVE" + b"fmt " + struct.pack("<IHHIIHH", 16, 1, 1, rate,
            rate * 2, 2, 16) + b"data" + struct.pack("<I", 0xFFFFFFFF))


def make_server(backend: Backend | Sequence[Backend], host: str, port: int, *, model: str | None = None,
                api_key_env: str | None = None, log: Callable[[str], None] | None = None) -> SpeechServer:
    """Load and warm up ``backend`` — or each of several instances of one backend, the
    server's K workers — outside any request's clock, and bind the server."""
    backends = [backend] if isinstance(backend, Backend) else list(backend)
    backend = backends[0]
    if getattr(backend.config, "kind", "request") != "request":
        raise InputError.at("--backend", f"backend '{backend.config.name}' is a {backend.config.kind} backend",
                            accepted="a request backend (piper, xtts, …)")
    api_key = None
    if api_key_env:
        api_key = os.environ.get(api_key_env, "")
        if not api_key:
            raise InputError.at("--api-key-env", f"the environment variable {api_key_env} is not set or empty",
                                accepted="the name of a variable holding the API key clients must send")
    for b in backends:
        b.load()
        b.warmup()
    try:
        return SpeechServer(backends, (host, port), model=model, api_key=api_key, log=log)
    except OSError as e:
        raise InputError.at(f"--host {host} --port {port}", f"cannot listen ({e.strerror or e})",
                            accepted="a free port on a local address") from e


def log_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def serve_until_interrupted(server: SpeechServer) -> None:
    """Serve until Ctrl-C; then close the socket and the backend."""
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        for backend in server.pool.backends:
            backend.close()
