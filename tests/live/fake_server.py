"""A scripted OpenAI-style speech server on 127.0.0.1 for live-run tests.

Each request's input text selects a script: a list of steps run in order, each
``("sleep", seconds)``, ``("audio", n_samples)`` (one HTTP chunk of a loud 440 Hz tone),
``("status", code)`` (answer with that status and a JSON error instead of audio),
``("stall", None)`` (block until the server is closed) or ``("cut", None)`` (drop the
connection without the final chunk). Texts without a script get :attr:`default`.
The sleeps are the server's scripted timing, not synchronization.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

RATE = 24_000
MODEL = "fake-tts"


def tone(n: int, start: int = 0) -> bytes:
    t = (np.arange(n) + start) / RATE
    return (np.sin(2 * np.pi * 440 * t) * 16_000).astype("<i2").tobytes()


class ScriptedServer(ThreadingHTTPServer):
    daemon_threads = True
    # a burst of c connections at once (a load level, a panel's outputs) beyond the listen
    # backlog (socketserver's 5) loses SYNs, which the client's kernel resends after 1 s
    request_queue_size = 256

    handler: type | None = None  # the request handler (default: Handler)

    def __init__(self, scripts: dict[str, list], default: list | None = None):
        super().__init__(("127.0.0.1", 0), self.handler or Handler)
        self.scripts = scripts
        self.default = default or [("audio", 2400)]
        self.closing = threading.Event()
        self.received: list[tuple[str, float]] = []  # (text, monotonic arrival)
        #: seconds by which the server itself wrote a chunk later than its script says (the
        #: sleeps since the request arrived), at most over every request: its own lateness
        self.lag = 0.0
        self.arrived = threading.Condition()
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def wait_for(self, text: str, timeout: float = 30.0) -> bool:
        """Block until a request with ``text`` has arrived (or ``timeout`` s pass)."""
        with self.arrived:
            return self.arrived.wait_for(lambda: any(t == text for t, _ in self.received), timeout)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.closing.set()
        self.shutdown()
        self.server_close()
        self.thread.join(10)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # each chunk leaves at once (no wait for the client's delayed ACK)
    server: ScriptedServer

    def log_message(self, format, *args):  # noqa: A002
        pass

    def do_GET(self):  # noqa: N802
        body = json.dumps({"object": "list", "data": [{"id": MODEL}]} if self.path == "/v1/models" else {}).encode()
        self.send_response(200 if self.path == "/v1/models" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):  # noqa: N802
        text = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["input"]
        arrival = time.perf_counter()
        with self.server.arrived:
            self.server.received.append((text, arrival))
            self.server.arrived.notify_all()
        started, done, scripted = False, 0, 0.0
        for kind, value in self.server.scripts.get(text, self.server.default):
            if kind == "sleep":
                time.sleep(value)
                scripted += value
            elif kind == "status":
                body = json.dumps({"error": {"message": "scripted failure"}}).encode()
                self.send_response(value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            elif kind == "stall":
                self.server.closing.wait(60)
                self.close_connection = True
                return
            elif kind == "cut":
                self.close_connection = True
                return
            else:
                if not started:
                    self._start()
                    started = True
                data = tone(value, done)
                done += value
                self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()
                self.server.lag = max(self.server.lag, time.perf_counter() - arrival - scripted)
        if not started:
            self._start()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _start(self):
        self.send_response(200)
        self.send_header("Content-Type", "audio/pcm")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("X-Sample-Rate", str(RATE))
        self.end_headers()


class SerialServer(ScriptedServer):
    """One worker, first come first served: each request waits for those that arrived before
    it, then takes ``base_s × slowdown(n)`` seconds, ``n`` the requests in flight at the
    server when its service starts (arrived and not yet answered, itself included), and
    answers ``samples`` of audio in one chunk. ``served``: (text, n) in the order served."""

    def __init__(self, base_s: float, slowdown, samples: int = 2400):
        self.handler = SerialHandler
        super().__init__({}, [("audio", samples)])
        self.base_s, self.slowdown, self.samples = base_s, slowdown, samples
        self.turn = threading.Condition()
        self.tickets = self.serving = self.in_flight = 0
        self.served: list[tuple[str, int]] = []


class SerialHandler(Handler):
    server: SerialServer

    def do_POST(self):  # noqa: N802
        srv = self.server
        text = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["input"]
        with srv.turn:
            ticket, srv.tickets, srv.in_flight = srv.tickets, srv.tickets + 1, srv.in_flight + 1
            srv.turn.wait_for(lambda: srv.serving == ticket)
            n = srv.in_flight
        try:
            started, scripted = time.perf_counter(), srv.base_s * srv.slowdown(n)
            time.sleep(scripted)
            self._start()
            data = tone(srv.samples)
            self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n0\r\n\r\n")
            self.wfile.flush()
            srv.lag = max(srv.lag, time.perf_counter() - started - scripted)
        finally:
            with srv.turn:
                srv.in_flight, srv.serving = srv.in_flight - 1, srv.serving + 1
                srv.served.append((text, n))
                srv.turn.notify_all()
