"""``simulplay serve``: an OpenAI-compatible speech server over any registered request backend.

An ASGI application (Starlette, simulplay.workflows.server_app) run by uvicorn on one event
loop (uvloop and the httptools parser when installed, as the dependencies ask): HTTP/1.1
with keep-alive, pipelining and chunked transfer encoding. ``workers`` (K,
default 1) backend instances serve the requests, each on its own thread: each request, once
read and checked, takes a free instance for the whole of its synthesis; a request that finds
all K busy waits in a queue without limit and gets the next instance freed, strictly in the
order the requests were read (first in, first out), so K = 1 is the serial synthesizer
(docs/concepts.md#the-service-clock) and K > 1 lets a CPU machine show how service grows with
load (docs/many-listeners.md). Each instance loads and warms up its own model (K times the
memory and threads). Connections cost no thread: the threads are the K workers' and the loop's.

Endpoints (below ``/v1``):

* ``POST /v1/audio/speech`` with JSON ``{"model", "input", "voice"?, "response_format"?}``
  (``mp3`` default, as the OpenAI API; ``opus``, ``flac``, ``wav``, ``pcm``: see
  simulplay.backends.audio_formats; ``speed`` only 1; ``stream_format`` only ``audio``;
  ``?wav=stream`` streams wav with unknown sizes instead of sending it whole). pcm, mp3, opus
  (and streamed wav) send each chunk the backend yields, encoded, as one HTTP chunk the moment
  it exists; flac and wav arrive whole with their Content-Length. ``X-Sample-Rate`` gives the
  rate of the encoded audio and ``X-Voice`` the voice that spoke. A failure before the first
  audio answers 500 with an OpenAI-style JSON error; a failure after it cuts the stream (no
  final chunk), so the client records a failure. Bodies: at most ``max_body`` bytes (413),
  complete within ``body_timeout`` seconds (408).
* ``GET /v1/models``: the one served model; ``GET /v1/simulplay/identity``: the backend's
  identity (package versions, model hashes, settings, seed, device) and, with K > 1,
  ``workers`` (K), which the ``http`` client puts into its own identity (a one-worker
  server's identity is the backend's alone, as before ``--workers`` existed, so stores made
  against it are reused).

Voices: the server speaks one voice. A request naming no voice or that voice is served; with
``voice_aliases`` (``NAME=VOICE``, or ``*`` for any name) other names speak it too; any other
name is a 400 naming the served voice.

With ``api_key_env`` set, requests need ``Authorization: Bearer <the variable's value>``;
the key is kept in memory only and never logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import socket
import sys
import threading
from collections import deque
from collections.abc import Callable, Sequence

from simulplay.backends.base import Backend
from simulplay.core.errors import InputError
from simulplay.workflows.server_app import build_app, check_request, error

__all__ = ["MAX_BODY", "BODY_TIMEOUT_S", "SpeechServer", "VoiceMap", "WorkerPool", "check_request", "make_server",
           "serve_until_interrupted"]

MAX_BODY = 1 << 20  # bytes: a longer request body gets 413
BODY_TIMEOUT_S = 30.0  # a request body not complete after this long gets 408
KEEP_ALIVE_S = 120.0  # an idle kept-alive connection is closed after this long (it holds no thread)


class WorkerPool:
    """K backend instances handed out first in, first out, on the server's event loop:
    :meth:`acquire` returns a free instance or waits behind every earlier waiter;
    :meth:`release` gives the instance to the longest-waiting request, or back to the free ones."""

    def __init__(self, backends: Sequence[Backend]):
        self.backends = list(backends)
        self._free = deque(self.backends)
        self._waiting: deque[asyncio.Future] = deque()

    @property
    def waiting(self) -> int:
        """Requests waiting for an instance now."""
        return sum(1 for f in list(self._waiting) if not f.done())

    async def acquire(self) -> Backend:
        if self._free and not self.waiting:
            return self._free.popleft()
        slot = asyncio.get_running_loop().create_future()
        self._waiting.append(slot)
        try:
            return await slot
        except asyncio.CancelledError:
            if slot.done() and not slot.cancelled():  # given to a request that is gone: pass it on
                self.release(slot.result())
            raise

    def release(self, backend: Backend) -> None:
        while self._waiting:
            slot = self._waiting.popleft()
            if not slot.done():
                slot.set_result(backend)
                return
        self._free.append(backend)


class Worker:
    """One backend instance's thread (a daemon: a hung synthesis never keeps the process
    alive), running the jobs it is given one after another."""

    def __init__(self, name: str):
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=self._run, name=name, daemon=True).start()

    def _run(self) -> None:
        while True:
            fn, args = self._jobs.get()
            fn(*args)  # simulplay.workflows.server_app.produce: reports every failure itself

    def submit(self, fn: Callable, *args) -> None:
        self._jobs.put((fn, args))


class VoiceMap:
    """The served voice and the other names that speak it (``*``: any name)."""

    def __init__(self, voice: str, aliases: Sequence[str] = ()):
        self.voice = voice
        self.any = "*" in aliases
        self.names: set[str] = set()
        for alias in aliases:
            if alias == "*":
                continue
            name, sep, target = alias.partition("=")
            if not sep or not name.strip() or target.strip() != voice:
                raise InputError.at(f"--voice-alias {alias}", "is not NAME=VOICE naming the served voice "
                                    f"'{voice}'", accepted=f"NAME={voice} (repeatable), or '*' for any name")
            self.names.add(name.strip())

    def problem(self, requested) -> str | None:
        if requested in (None, "", self.voice) or self.any or requested in self.names:
            return None
        also = f" (or {', '.join(sorted(self.names))})" if self.names else ""
        return (f"this server serves voice '{self.voice}'{also}, not '{requested}' (start it with "
                f"--voice-alias {requested}={self.voice}, or --voice-alias '*', to accept that name)")


class SpeechServer:
    """The bound socket, the workers and the application; :meth:`serve_forever` runs uvicorn
    on the calling thread until :meth:`shutdown` (or SIGINT/SIGTERM on the main thread)."""

    def __init__(self, backend: Backend | Sequence[Backend], sock: socket.socket, *, model: str | None = None,
                 api_key: str | None = None, log: Callable[[str], None] | None = None,
                 voice_aliases: Sequence[str] = (), max_body: int = MAX_BODY, body_timeout: float = BODY_TIMEOUT_S):
        import uvicorn

        self.pool = WorkerPool([backend] if isinstance(backend, Backend) else backend)
        self.backend = self.pool.backends[0]
        self.model = model or self.backend.label()
        k = len(self.pool.backends)  # one worker: the identity of a plain server, so stores made before reuse
        self.identity = {**self.backend.identity(), **({"workers": k} if k > 1 else {})}
        self.voice = str(self.identity.get("voice", ""))
        self.voices = VoiceMap(self.voice, voice_aliases)
        self.api_key, self.log = api_key, log
        self.max_body, self.body_timeout = max_body, body_timeout
        self.workers = {id(b): Worker(f"simulplay-serve-worker-{i}") for i, b in enumerate(self.pool.backends)}
        self.socket = sock
        app = build_app(self)
        config = uvicorn.Config(_logged(app, log) if log else app, http="auto", loop="auto", lifespan="off",
                                interface="asgi3", log_config=None, access_log=False, server_header=False,
                                timeout_keep_alive=KEEP_ALIVE_S, timeout_graceful_shutdown=3)
        self._uvicorn = uvicorn.Server(config)
        self._stopped = threading.Event()

    @property
    def server_address(self) -> tuple[str, int]:
        return self.socket.getsockname()[:2]

    @property
    def url(self) -> str:
        host, port = self.server_address
        return f"http://{f'[{host}]' if ':' in host else host}:{port}/v1"

    def failed(self, message: str):
        """Log a synthesis failure; the 500 answer to give before any audio was sent."""
        if self.log:
            self.log(f"synthesis failed: {message}")
        return error(500, message, "server_error")

    def serve_forever(self) -> None:
        try:
            self._uvicorn.run(sockets=[self.socket])
        finally:
            self._stopped.set()

    def shutdown(self) -> None:
        """Stop a :meth:`serve_forever` running on another thread, and wait for it."""
        self._uvicorn.should_exit = True
        self._stopped.wait(30)

    def server_close(self) -> None:
        with contextlib.suppress(OSError):
            self.socket.close()


def _logged(app, log: Callable[[str], None]):
    """The application, logging one line per answered request (client, method, path, status)."""

    async def logged(scope, receive, send):
        async def sending(message):
            if message["type"] == "http.response.start":
                client = scope.get("client") or ("-", 0)
                log(f"{client[0]} \"{scope.get('method')} {scope.get('path')}\" {message['status']}")
            await send(message)

        await app(scope, receive, sending)

    return logged


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host``:``port`` (0: any free port)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        # a burst of c connections at once (a load level, a panel's outputs) must not overflow the backlog
        sock.listen(1024)
    except OSError:
        sock.close()
        raise
    return sock


def make_server(backend: Backend | Sequence[Backend], host: str, port: int, *, model: str | None = None,
                api_key_env: str | None = None, log: Callable[[str], None] | None = None,
                voice_aliases: Sequence[str] = (), max_body: int = MAX_BODY,
                body_timeout: float = BODY_TIMEOUT_S) -> SpeechServer:
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
    for alias in voice_aliases:  # the form fails before any model loads; the voice it names, once loaded
        if alias != "*" and "=" not in alias:
            raise InputError.at(f"--voice-alias {alias}", "is not NAME=VOICE",
                                accepted="NAME=VOICE naming the served voice (repeatable), or '*' for any name")
    for b in backends:
        b.load()
        b.warmup()
    try:
        sock = bind(host, port)
    except OSError as e:
        raise InputError.at(f"--host {host} --port {port}", f"cannot listen ({e.strerror or e})",
                            accepted="a free port on a local address") from e
    return SpeechServer(backends, sock, model=model, api_key=api_key, log=log, voice_aliases=voice_aliases,
                        max_body=max_body, body_timeout=body_timeout)


def log_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def serve_until_interrupted(server: SpeechServer) -> None:
    """Serve until Ctrl-C (or SIGTERM); then close the socket and the backend."""
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        for backend in server.pool.backends:
            backend.close()
