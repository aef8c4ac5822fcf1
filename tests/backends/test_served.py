"""Served TTS: the http client against `simulplay serve` (real Piper) on loopback,
and against a misbehaving loopback server: timeouts, 5xx, cut-off streams → recorded failures."""

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
import soundfile as sf

from simulplay.backends import parse_backend
from simulplay.backends.audio_formats import PcmDecoder, wav_header
from simulplay.backends.base import BackendError
from simulplay.backends.piper import default_voice
from simulplay.core.errors import InputError
from simulplay.core.provenance import file_sha256
from simulplay.grouping import parse_rule
from simulplay.manifest import read_chunks, read_manifest
from simulplay.store.store import AudioStore
from simulplay.synthesis.request import synthesize_request
from simulplay.synthesis.run import synthesize_to_manifest
from simulplay.workflows.server import make_server
from tests.support.checks import wait_until
from tests.support.factories import stream
from tests.support.fakes import FakeBackend, FakeSettings

KEY = "sk-test-4f1b2c9d"  # the server's and the client's API key (environment only)
MODEL = "piper:en_US-joe-medium"


@pytest.fixture(scope="module")
def served():
    env = {**os.environ, "SERVE_KEY": KEY}
    proc = subprocess.Popen([sys.executable, "-m", "simulplay", "serve", "--backend", "piper:intra_op_threads=1",
                             "--port", "0", "--api-key-env", "SERVE_KEY", "--voice-alias", "alloy=en_US-joe-medium"],
                            stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    line = proc.stdout.readline()
    assert line.startswith("serving model 'piper:en_US-joe-medium'"), proc.stderr.read() if proc.poll() else line
    yield line.split(" at ")[1].strip()
    proc.terminate()
    _, err = proc.communicate(timeout=30)
    assert KEY not in err  # the request log never shows the key


@pytest.mark.slow
def test_the_documented_openai_sdk_example_works_as_written(served, tmp_path, monkeypatch):
    """docs/serve.md's example, run as written against `simulplay serve --voice-alias
    alloy=en_US-joe-medium` (only the URL and the key's variable come from the fixture)."""
    from openai import OpenAI

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SERVE_KEY", KEY)
    client = OpenAI(base_url=served, api_key=os.environ["SERVE_KEY"])
    with client.audio.speech.with_streaming_response.create(
        model="piper:en_US-joe-medium", voice="alloy", input="Hello from simulplay.",
    ) as response:
        response.stream_to_file("speech.mp3")
    assert response.headers["x-voice"] == "en_US-joe-medium"
    audio, rate = sf.read(tmp_path / "speech.mp3", dtype="int16")
    assert rate == 22_050 and 0.5 < len(audio) / rate < 5 and np.abs(audio).max() > 3000


@pytest.fixture
def key_env(monkeypatch):
    monkeypatch.setenv("CLIENT_KEY", KEY)


def spec(url, **extra):
    items = {"base_url": url, "model": MODEL, "api_key_env": "CLIENT_KEY", **extra}
    return "http:" + ",".join(f"{k}={v}" for k, v in items.items())


@pytest.mark.slow


def test_client_records_every_received_piece_against_served_piper(tmp_path, served, key_env):
    s = [stream([0.0, 1.5], ["Hello there. This is a second sentence,", "and here it ends."], source_s=3.0)]
    store = AudioStore(tmp_path / "store")
    out = tmp_path / "m.parquet"
    synthesize_to_manifest(s, [parse_rule("immediate"), parse_rule("timer:w=2")], parse_backend(spec(served)),
                           store, out)
    m, meta = read_manifest(out)
    assert (m["error"] == "").all() and set(m["backend"]) == {"http:" + MODEL}
    assert (m["sample_rate"] == 22_050).all() and (m["audio_s"] == m["n_samples"] / 22_050).all()
    chunks = read_chunks(out)
    first = chunks[(chunks["condition"] == "immediate") & (chunks["seq"] == 0)]
    row = m[(m["condition"] == "immediate") & (m["seq"] == 0)].iloc[0]
    # every received piece is a chunk (how many depends on how the pieces arrived; that they are
    # yielded on arrival is test_pieces_are_streamed_as_they_exist_and_yielded_on_arrival's)
    assert len(first) >= 1 and first["n_samples"].sum() == row["n_samples"]
    offsets = first["ready_offset_s"].to_numpy()
    assert (offsets > 0).all() and (np.diff(offsets) >= 0).all() and offsets[-1] <= row["service_s"]
    ident = meta["identity"]
    assert ident["served"]["voice_sha256"] == file_sha256(default_voice()) and ident["device"].startswith("remote:cpu")
    stored = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    assert KEY.encode() not in stored


def test_wav_responses_give_the_same_kind_of_audio(served, key_env):
    backend = parse_backend(spec(served, response_format="wav")).create()
    audio, service, chunks = synthesize_request(backend, "A short sentence.")
    assert backend.sample_rate == 22_050 and len(audio) == sum(n for _, n in chunks) > 0
    assert backend.last_attempts == 1


def test_wrong_api_key_is_refused_and_not_retried(served, monkeypatch):
    monkeypatch.setenv("CLIENT_KEY", "sk-not-the-key-77")
    backend = parse_backend(spec(served, retries=2, retry_wait=0)).create()
    with pytest.raises(BackendError, match="HTTP 401.*API key") as err:
        synthesize_request(backend, "Hello.")
    assert backend.last_attempts == 1 and "sk-not-the-key-77" not in str(err.value)


def test_unknown_model_is_a_400_naming_the_served_model(served, key_env):
    backend = parse_backend(spec(served, model="tts-1")).create()
    with pytest.raises(BackendError, match="HTTP 400.*serves model 'piper:en_US-joe-medium', not 'tts-1'"):
        synthesize_request(backend, "Hello.")


def test_missing_key_variable_is_a_one_line_input_error(monkeypatch):
    monkeypatch.delenv("CLIENT_KEY", raising=False)
    backend = parse_backend(spec("http://127.0.0.1:9/v1")).create()
    with pytest.raises(InputError, match="environment variable CLIENT_KEY is not set"):
        backend.load()


def test_credentials_in_the_url_are_refused():
    with pytest.raises(InputError, match="must not hold credentials"):
        parse_backend("http:base_url=http://user:pw@127.0.0.1:8000/v1,model=m")


# ---- a misbehaving server on loopback ----------------------------------------------

PCM = (np.arange(2000, dtype="<i2") * 7).tobytes()  # 2,000 samples


class Faulty(BaseHTTPRequestHandler):
    """Behaviour chosen by the first path component: /flaky, /down, /hang, /cut, /stall, /short."""

    protocol_version = "HTTP/1.1"
    calls: dict[str, int] = {}
    # /hang and /stall hold their response until the module ends (or 60 s, if a client that
    # should have given up after its 2-s timeout is still waiting: then the test fails)
    release = threading.Event()

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.send_error(404)

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        mode = self.path.split("/")[1]
        n = Faulty.calls[mode] = Faulty.calls.get(mode, 0) + 1
        # flaky-request: the first POST of the request's text fails (the warm-up and the clock
        # check's probe say other words)
        first_hello = mode == "flaky-request" and b"Hello." in body and not Faulty.calls.get("hello")
        if first_hello:
            Faulty.calls["hello"] = 1
        if mode == "down" or (mode == "flaky" and n == 1) or first_hello:
            return self._reply(503 if mode == "down" else 500, b'{"error": {"message": "overloaded"}}')
        if mode == "hang":
            Faulty.release.wait(60)
        if mode in ("cut", "stall"):
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.write(f"{len(PCM):X}\r\n".encode() + PCM + b"\r\n")
            self.wfile.flush()
            if mode == "stall":
                Faulty.release.wait(60)
            self.close_connection = True
            return
        if mode == "short":  # announces more than it sends
            self.send_response(200)
            self.send_header("Content-Length", str(2 * len(PCM)))
            self.end_headers()
            self.wfile.write(PCM)
            self.close_connection = True
            return
        self._reply(200, PCM)

    def _reply(self, status, body):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def faulty():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Faulty)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    Faulty.release.set()
    server.shutdown()
    server.server_close()


def plain(url, mode, **extra):
    """A client of the faulty server. Its timeout is generous (the server answers at once or
    never): only /hang and /stall, which never answer, reach it."""
    items = {"base_url": f"{url}/{mode}/v1", "model": "m", "timeout": 60, "retry_wait": 0, **extra}
    return "http:" + ",".join(f"{k}={v}" for k, v in items.items())


def test_a_500_then_success_is_retried_and_the_attempts_are_exposed(faulty):
    backend = parse_backend(plain(faulty, "flaky", retries=1)).create()
    audio, _, _ = synthesize_request(backend, "x")
    assert np.array_equal(audio, np.frombuffer(PCM, "<i2")) and backend.sample_rate == 24_000
    assert backend.last_attempts == 2 and backend.last_errors == ["HTTP 500 Internal Server Error: overloaded"]
    assert backend.identity()["served"] == "not reported (not a simulplay server)"


def test_retries_inside_the_backend_are_recorded_in_the_manifest(tmp_path, faulty):
    """HTTP retries go to request_attempts; attempts (worker deaths + 1) stays 1."""
    rows = {}
    for mode, retries in (("flaky-request", 1), ("down", 2)):
        out = tmp_path / f"{mode}.parquet"
        synthesize_to_manifest([stream([0.0], ["Hello."], source_s=2.0)], [parse_rule("immediate")],
                               parse_backend(plain(faulty, mode, retries=retries)), AudioStore(tmp_path / mode),
                               out)
        rows[mode] = read_manifest(out)[0].iloc[0]
    ok, failed = rows["flaky-request"], rows["down"]
    assert (ok["error"], ok["request_attempts"], ok["attempts"]) == ("", 2, 1)
    assert failed["error"] != "" and failed["request_attempts"] == 3


@pytest.mark.parametrize(("mode", "retries", "message"), [
    ("down", 2, "HTTP 503 Service Unavailable: overloaded (after 3 attempts"),
    ("hang", 0, "no response within 2 s (after 1 attempt"),
    ("cut", 2, f"stream cut off after {len(PCM)} bytes"),
    ("stall", 0, f"no data for 2 s after {len(PCM)} bytes"),
    ("short", 0, f"stream cut off after {len(PCM)} bytes ({len(PCM)} announced bytes missing)"),
])
@pytest.mark.slow
def test_server_failures_become_recorded_request_failures(tmp_path, faulty, mode, retries, message):
    out = tmp_path / "m.parquet"
    timeout = 2 if mode in ("hang", "stall") else 60  # a server that never answers: wait 2 s, not 60
    synthesize_to_manifest([stream([0.0], ["Hello."], source_s=2.0)], [parse_rule("immediate")],
                           parse_backend(plain(faulty, mode, retries=retries, timeout=timeout)),
                           AudioStore(tmp_path / "s"), out)
    m, _ = read_manifest(out)
    assert len(m) == 1 and message in m["error"].iloc[0] and m["error"].iloc[0].startswith("BackendError: ")


def test_pcm_decoder_carries_partial_samples_and_parses_streaming_wav_headers():
    data = wav_header(16_000) + PCM
    decoder = PcmDecoder(24_000, wav=True)
    pieces = [decoder.feed(data[i:i + 7]) for i in range(0, len(data), 7)]  # odd sizes split samples
    decoder.finish()
    assert decoder.rate == 16_000 and np.array_equal(np.concatenate(pieces), np.frombuffer(PCM, "<i2"))
    odd = PcmDecoder(24_000, wav=False)
    odd.feed(b"\x01\x00\x02")
    with pytest.raises(BackendError, match="inside a sample"):
        odd.finish()


class GatedFake(FakeBackend):
    """Yields one sentence's samples, then waits for ``gate`` before yielding the next."""

    gate = threading.Event()
    waited_out: list[bool] = []

    def stream(self, text):
        pieces = super().stream(text)
        yield next(pieces)
        GatedFake.waited_out.append(not GatedFake.gate.wait(120))
        yield from pieces


def test_pieces_are_streamed_as_they_exist_and_yielded_on_arrival():
    """`simulplay serve`'s handler sends each backend piece the moment it exists and the client
    yields it on arrival: the client holds the first piece while the server's backend still
    waits (an event the test sets only then) to make the second."""
    server = make_server(GatedFake(FakeSettings()), "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        client = parse_backend(f"http:base_url={server.url},model={server.model}").create()
        pieces = client.stream("One two. Three.")
        first = next(pieces)
        GatedFake.gate.set()
        rest = np.concatenate(list(pieces))
    finally:
        GatedFake.gate.set()
        server.shutdown()
        server.server_close()
    assert GatedFake.waited_out == [False]  # the second piece was made after the first arrived
    # the fake makes 800 samples per letter: "One two" 4,800, "Three" 4,000; the first piece
    # arrives before the second exists, all of it or its first bytes
    assert 0 < len(first) <= 800 * 6 and len(first) + len(rest) == 800 * 11
    assert client.sample_rate == 16_000


def test_serve_refuses_a_missing_key_variable(cli):
    proc = cli("serve", "--backend", "piper:intra_op_threads=1", "--api-key-env", "NO_SUCH_VARIABLE_SET",
               env={"NO_SUCH_VARIABLE_SET": ""})
    assert proc.returncode == 2 and "NO_SUCH_VARIABLE_SET is not set or empty" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(("alias", "message"), [("alloy", "--voice-alias alloy: is not NAME=VOICE"),
                                                ("alloy=nobody", "naming the served voice 'en_US-joe-medium'")])
def test_serve_refuses_a_voice_alias_that_is_not_the_served_voice(cli, alias, message):
    proc = cli("serve", "--backend", "piper:intra_op_threads=1", "--port", "0", "--voice-alias", alias)
    assert proc.returncode == 2 and message in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_client_speaks_the_openai_request_format(faulty, monkeypatch):
    seen = {}

    class Spy(Faulty):
        def do_POST(self):
            seen["body"] = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen["auth"] = self.headers.get("Authorization")
            self._reply(200, PCM)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Spy)
    threading.Thread(target=server.handle_request, daemon=True).start()
    monkeypatch.setenv("CLIENT_KEY", KEY)
    backend = parse_backend(spec(f"http://127.0.0.1:{server.server_address[1]}/v1", voice="alloy")).create()
    synthesize_request(backend, "Guten Tag.")
    server.server_close()
    assert seen == {"body": {"model": MODEL, "input": "Guten Tag.", "response_format": "pcm", "voice": "alloy"},
                    "auth": f"Bearer {KEY}"}


# ---- a third-party OpenAI-compatible server: local-tts-studio (PyPI), offline on loopback ---------


@pytest.fixture(scope="module")
def third_party(tmp_path_factory):
    import socket
    import urllib.request

    data = tmp_path_factory.mktemp("local-tts")
    voices = data / "voices"
    voices.mkdir()
    voice = default_voice()
    (voices / voice.name).symlink_to(voice)
    (voices / (voice.name + ".json")).symlink_to(str(voice) + ".json")
    (data / "settings.json").write_text(json.dumps({"voices_dir": str(voices),
                                                    "api_default_voice": voice.stem}))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-c", "from local_tts.cli import main; main()", "--host", "127.0.0.1",
                             "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={**os.environ, "LOCAL_TTS_DATA_DIR": str(data)})
    url = f"http://127.0.0.1:{port}/v1"

    def answers():
        assert proc.poll() is None, f"local-tts-studio ended: {proc.stderr.read().decode()}"
        try:
            return urllib.request.urlopen(url + "/models", timeout=10).read() is not None
        except OSError:
            return False  # not listening yet

    wait_until(answers, "local-tts-studio to answer GET /v1/models", poll=0.1)
    yield url
    proc.terminate()
    proc.communicate(timeout=30)


@pytest.mark.parametrize("fmt", ["wav", "pcm"])
def test_client_against_a_third_party_openai_compatible_server(third_party, fmt):
    backend = parse_backend(f"http:base_url={third_party},model=tts-1,voice=alloy,response_format={fmt}").create()
    audio, service, chunks = synthesize_request(backend, "Hello there. A second sentence follows.")
    assert backend.sample_rate == 22_050  # from the WAV header, or from X-Sample-Rate for pcm
    assert len(audio) == sum(n for _, n in chunks) > 22_050 and 0 < chunks[0][0] <= service
    assert np.abs(audio.astype(np.int32)).max() > 1000  # speech, not silence or a misread header
    assert backend.identity()["served"] == "not reported (not a simulplay server)"
