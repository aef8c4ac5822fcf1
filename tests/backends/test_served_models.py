"""The http client finds the model itself (``GET {base_url}/models``) when the server lists
exactly one, so ``http:base_url=…`` alone works against `simulplay serve`."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pandas as pd
import pytest

from simulplay.backends import parse_backend
from simulplay.backends.base import identity_key
from simulplay.core.errors import InputError
from simulplay.synthesis.request import synthesize_request
from simulplay.workflows.server import make_server
from tests.support.fakes import FakeBackend, FakeSettings


@pytest.fixture
def serve():
    """`simulplay serve`'s server over the fake backend, on loopback, in a thread."""
    server = make_server(FakeBackend(FakeSettings()), "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def test_the_one_served_model_is_found_and_used(serve):
    found = parse_backend(f"http:base_url={serve.url}").create()
    named = parse_backend(f"http:base_url={serve.url},model={serve.model}").create()
    audio, _, _ = synthesize_request(found, "One two.")
    assert len(audio) == 800 * 6  # the fake: 800 samples per letter; the server accepted the model
    assert found.label() == named.label() == f"http:{serve.model}"
    assert found.identity()["settings"]["model"] == serve.model
    # naming the model or letting the client find it gives the same request keys
    assert identity_key(found.identity()) == identity_key(named.identity())


def test_synth_with_base_url_alone(serve, cli, tmp_path):
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps({"talk_id": "t", "system": "A", "source_s": 5.0,
                                 "updates": [{"time_s": 0.0, "text": "Hello there."}]}) + "\n")
    cli("synth", trace, "--rule", "immediate", "--backend", f"http:base_url={serve.url}", "--store",
        tmp_path / "store", "--out", tmp_path / "m.parquet", "--quiet", check=True)
    m = pd.read_parquet(tmp_path / "m.parquet")
    assert m["backend"].tolist() == [f"http:{serve.model}"] and (m["error"] == "").all()


class Models(BaseHTTPRequestHandler):
    """A server whose GET /v1/models lists ``listed`` (None: answers 404)."""

    listed: list[str] | None = None

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.listed is None:
            self.send_response(404)
            body = b'{"error": {"message": "no such endpoint"}}'
        else:
            self.send_response(200)
            body = json.dumps({"object": "list", "data": [{"id": m, "object": "model"} for m in self.listed]}).encode()
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.mark.parametrize("listed,message", [
    (["tts-1", "tts-1-hd"], "no model given and the server lists 2 models (tts-1, tts-1-hd)"),
    ([], "no model given and the server lists 0 models"),
    (None, "no model given and GET /v1/models answered HTTP 404"),
])
def test_no_model_without_exactly_one_listed_is_a_one_line_error(listed, message):
    handler = type("Listing", (Models,), {"listed": listed})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        backend = parse_backend(f"http:base_url=http://127.0.0.1:{server.server_address[1]}/v1").create()
        with pytest.raises(InputError) as err:
            backend.label()
    finally:
        server.shutdown()
        server.server_close()
    text = str(err.value)
    assert "\n" not in text and message in text and "field 'model'" in text and "model=ID" in text
