"""`simulplay serve`'s HTTP under raw sockets (127.0.0.1 only): a pipelined request after an
early answer (401, 400, 404) is read where it starts and answered; bodies over the limit get
413, bodies that stop coming get 408, both closing the connection; 64 connections at once are
answered without a thread (or a file descriptor) left per connection."""

import json
import os
import socket
import threading

import numpy as np
import pytest

from simulplay.workflows.server import MAX_BODY, make_server
from tests.support.checks import wait_until
from tests.support.fakes import FakeBackend, FakeSettings

KEY = "sk-raw-7c1e"
BODY_TIMEOUT = 0.5


@pytest.fixture(scope="module")
def server(monkeypatch_module):
    monkeypatch_module.setenv("RAW_KEY", KEY)
    srv = make_server(FakeBackend(FakeSettings()), "127.0.0.1", 0, api_key_env="RAW_KEY", body_timeout=BODY_TIMEOUT)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join(30)


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def connect(srv) -> socket.socket:
    return socket.create_connection(srv.server_address, timeout=10)


def request(method: str, path: str, body: bytes = b"", *, key: str = KEY, extra: str = "") -> bytes:
    head = f"{method} {path} HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {key}\r\n{extra}"
    if body or method == "POST":
        head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    return head.encode() + b"\r\n" + body


def speech(model: str, text: str, fmt: str = "pcm", **fields) -> bytes:
    return json.dumps({"model": model, "input": text, "response_format": fmt, **fields}).encode()


def read_response(f) -> tuple[int, dict[str, str], bytes]:
    """One HTTP/1.1 response from the socket's file: status, headers (lower-case), body
    (by Content-Length, or chunked)."""
    status_line = f.readline()
    assert status_line.startswith(b"HTTP/1.1 "), status_line
    headers = {}
    while (line := f.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode().partition(":")
        headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding") == "chunked":
        body = b""
        while (size := int(f.readline().strip(), 16)) > 0:
            body += f.read(size)
            assert f.read(2) == b"\r\n"
        assert f.read(2) == b"\r\n"
    else:
        body = f.read(int(headers.get("content-length", 0)))
    return int(status_line.split()[1]), headers, body


def samples_of(text: str) -> np.ndarray:
    """The backend's own samples for ``text``."""
    return np.concatenate(list(FakeBackend(FakeSettings()).stream(text)))


@pytest.mark.parametrize(("first", "status"), [
    (lambda m: request("POST", "/v1/audio/speech", speech(m, "Hi."), key="wrong"), 401),
    (lambda m: request("POST", "/v1/audio/speech", b'{"model": "x", "input": '), 400),  # not JSON
    (lambda m: request("POST", "/v1/audio/speech", speech(m, "Hi.", voice="alloy")), 400),
    (lambda m: request("POST", "/v1/no/such/endpoint", speech(m, "Hi.")), 404),
])
def test_a_pipelined_request_after_an_early_answer_gets_its_own_answer(server, first, status):
    """The first request's body is never read by the application; the second request, sent
    on the same connection before any answer, is parsed where it starts."""
    with connect(server) as s, s.makefile("rb") as f:
        s.sendall(first(server.model) + request("POST", "/v1/audio/speech", speech(server.model, "Abc. De."))
                  + request("GET", "/v1/models"))
        code, _, body = read_response(f)
        assert code == status and "error" in json.loads(body)
        code, headers, audio = read_response(f)
        assert code == 200 and headers["x-sample-rate"] == "16000"
        assert np.array_equal(np.frombuffer(audio, "<i2"), samples_of("Abc. De."))
        code, _, body = read_response(f)
        assert code == 200 and json.loads(body)["data"][0]["id"] == server.model


def test_a_body_over_the_limit_gets_413_and_the_connection_closes(server):
    with connect(server) as s, s.makefile("rb") as f:
        s.sendall(request("POST", "/v1/audio/speech", b"")[:-2].replace(b"Content-Length: 0",
                  f"Content-Length: {MAX_BODY + 1}".encode()) + b"\r\n" + b"{" * 1000)
        code, headers, body = read_response(f)
        assert code == 413 and headers["connection"] == "close"
        assert str(MAX_BODY) in json.loads(body)["error"]["message"]
        assert f.read() == b""  # closed: the rest of the body is never parsed as a request


def test_a_chunked_body_over_the_limit_gets_413_as_it_arrives(server):
    piece = b"x" * 65536
    with connect(server) as s, s.makefile("rb") as f:
        s.sendall(b"POST /v1/audio/speech HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " + KEY.encode()
                  + b"\r\nTransfer-Encoding: chunked\r\n\r\n")
        try:
            for _ in range(MAX_BODY // len(piece) + 2):
                s.sendall(f"{len(piece):X}\r\n".encode() + piece + b"\r\n")
        except OSError:  # the server closed while the client still sent: the answer is already there
            pass
        code, headers, _ = read_response(f)
        assert code == 413 and headers["connection"] == "close"


def test_a_client_that_stops_mid_body_gets_408_and_the_worker_stays_free(server):
    body = speech(server.model, "Hello.")
    with connect(server) as s, s.makefile("rb") as f:
        s.sendall(request("POST", "/v1/audio/speech", body)[:-len(body) // 2])  # half the body, then nothing
        code, headers, _ = read_response(f)
        assert code == 408 and headers["connection"] == "close"
        assert f.read() == b""
    assert server.pool.waiting == 0
    with connect(server) as s, s.makefile("rb") as f:
        s.sendall(request("POST", "/v1/audio/speech", body))
        code, _, audio = read_response(f)
        assert code == 200 and np.array_equal(np.frombuffer(audio, "<i2"), samples_of("Hello."))


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_64_connections_at_once_are_answered_in_order_with_no_thread_per_connection(server):
    texts = [("a" * (1 + i % 5) + ".", "b" * (1 + i % 3) + ".") for i in range(64)]
    threads, fds = threading.active_count(), open_fds()
    socks = [connect(server) for _ in range(64)]
    try:
        for s, (one, two) in zip(socks, texts):  # two kept-alive requests each, pipelined
            s.sendall(request("POST", "/v1/audio/speech", speech(server.model, one))
                      + request("POST", "/v1/audio/speech", speech(server.model, two)))
        files = [s.makefile("rb") for s in socks]
        for k, (f, (one, two)) in enumerate(zip(files, texts)):
            for text in (one, two):
                code, _, audio = read_response(f)
                assert code == 200 and np.array_equal(np.frombuffer(audio, "<i2"), samples_of(text))
            if k == 31:  # half answered, 32 connections still open with requests in them
                assert threading.active_count() == threads  # the server's loop and its one worker, as before
        for f in files:
            f.close()
    finally:
        for s in socks:
            s.close()
    wait_until(lambda: open_fds() <= fds, "the server closed the 64 connections' sockets", timeout=15)
    assert threading.active_count() == threads
