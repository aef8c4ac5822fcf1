"""`simulplay serve` driven by the official OpenAI SDK, the way its users call it (127.0.0.1
only): ``create`` with the SDK's defaults, every format, ``with_streaming_response``, the
errors it maps; the decoded audio against the backend's own samples (exact for pcm, wav and
flac; within the codec's tolerance for mp3 and opus)."""

import io
import re
import threading
import wave

import numpy as np
import openai
import pytest
import soundfile as sf

from simulplay.backends.audio_formats import decoder_for
from simulplay.workflows.server import make_server
from tests.support.fakes import FakeBackend, FakeSettings

KEY = "sk-sdk-0a9f"
TEXT = "Hello there. This is the second sentence."
ALIAS = "alloy"  # the voice every OpenAI example sends


class GatedFake(FakeBackend):
    """Yields its first sentence, then waits for ``gate`` before the rest (when ``hold`` is set)."""

    hold = threading.Event()
    gate = threading.Event()

    def stream(self, text):
        pieces = super().stream(text)
        yield next(pieces)
        if GatedFake.hold.is_set() and not GatedFake.gate.wait(60):
            raise RuntimeError("the test never opened the gate")
        yield from pieces


@pytest.fixture(scope="module")
def server():
    mp = pytest.MonkeyPatch()
    mp.setenv("SDK_KEY", KEY)
    srv = make_server(GatedFake(FakeSettings()), "127.0.0.1", 0, api_key_env="SDK_KEY",
                      voice_aliases=[f"{ALIAS}=sine"])
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    GatedFake.gate.set()
    srv.shutdown()
    srv.server_close()
    mp.undo()


@pytest.fixture
def client(server):
    with openai.OpenAI(base_url=server.url, api_key=KEY, max_retries=0, timeout=30) as c:
        yield c


def backend_samples(text: str = TEXT) -> np.ndarray:
    return np.concatenate(list(FakeBackend(FakeSettings()).stream(text)))


def snr_db(reference: np.ndarray, decoded: np.ndarray, delay: int) -> float:
    """The decoded audio's signal-to-noise ratio against ``reference`` over the reference's
    length, ``delay`` samples in (the codec's: LAME's 576 + the decoder's 529 for mp3; none
    for opus, whose decoder drops its pre-skip)."""
    ref, dec = reference.astype(float), decoded.astype(float)
    part = dec[delay:delay + len(ref)]
    part = np.pad(part, (0, len(ref) - len(part)))
    return float(10 * np.log10(np.sum(ref ** 2) / np.sum((ref - part) ** 2)))


MP3_DELAY = 576 + 529


def test_create_with_the_sdk_defaults_answers_mp3(client, server):
    """No response_format: the SDK sends none, and the OpenAI API answers mp3."""
    resp = client.audio.speech.create(model=server.model, voice=ALIAS, input=TEXT)
    assert resp.response.headers["content-type"] == "audio/mpeg"
    assert resp.response.headers["x-voice"] == "sine"  # the voice that spoke
    audio, rate = sf.read(io.BytesIO(resp.content), dtype="int16")
    assert rate == 16_000 and snr_db(backend_samples(), audio, MP3_DELAY) > 20


@pytest.mark.parametrize("fmt", ["pcm", "wav", "flac"])
def test_lossless_formats_decode_to_the_backends_samples_exactly(client, server, fmt):
    resp = client.audio.speech.create(model=server.model, voice=ALIAS, input=TEXT, response_format=fmt)
    if fmt == "pcm":
        audio = np.frombuffer(resp.content, "<i2")
        assert resp.response.headers["x-sample-rate"] == "16000"
    else:
        audio, rate = sf.read(io.BytesIO(resp.content), dtype="int16")
        assert rate == 16_000
        assert resp.response.headers["content-length"] == str(len(resp.content))  # whole, with its length
    assert np.array_equal(audio, backend_samples())


def test_wav_is_whole_with_true_sizes_and_streams_with_unknown_ones_on_request(client, server):
    whole = client.audio.speech.create(model=server.model, voice=ALIAS, input=TEXT, response_format="wav")
    n = len(backend_samples())
    with wave.open(io.BytesIO(whole.content)) as w:
        assert (w.getnframes(), w.getframerate()) == (n, 16_000)
    assert sf.info(io.BytesIO(whole.content)).frames == n
    streamed = client.audio.speech.create(model=server.model, voice=ALIAS, input=TEXT, response_format="wav",
                                          extra_query={"wav": "stream"})
    assert "content-length" not in streamed.response.headers  # chunked, as produced
    assert streamed.content[4:8] == b"\xff\xff\xff\xff" and streamed.content[40:44] == b"\xff\xff\xff\xff"
    assert streamed.content[44:] == whole.content[44:]


@pytest.mark.parametrize(("fmt", "delay"), [("mp3", MP3_DELAY), ("opus", 0)])
def test_lossy_formats_decode_to_the_backends_samples_within_the_codecs_tolerance(client, server, fmt, delay):
    resp = client.audio.speech.create(model=server.model, voice=ALIAS, input=TEXT, response_format=fmt)
    audio, rate = sf.read(io.BytesIO(resp.content), dtype="int16")
    assert rate == 16_000 and snr_db(backend_samples(), audio, delay) > 20
    if fmt == "opus":  # Ogg/Opus keeps the exact length (its last granule position)
        assert len(audio) == len(backend_samples())
    else:  # whole frames of 576 samples (MPEG-2 layer III), after the delay
        assert len(audio) % 576 == 0 and len(audio) >= len(backend_samples()) + MP3_DELAY


@pytest.mark.parametrize("fmt", ["pcm", "mp3", "opus", "wav"])
def test_streaming_formats_arrive_while_the_backend_still_synthesizes(client, server, fmt):
    """with_streaming_response: decodable audio is in the client's hands while the backend
    waits (for an event the test sets only then, or after 10 s) to make its second sentence."""
    GatedFake.gate.clear()
    GatedFake.hold.set()
    opener = threading.Timer(10, GatedFake.gate.set)
    opener.start()
    decoder = decoder_for(fmt, 16_000)
    try:
        with client.audio.speech.with_streaming_response.create(
                model=server.model, voice=ALIAS, input=TEXT, response_format=fmt,
                extra_query={"wav": "stream"} if fmt == "wav" else None) as resp:
            pieces = resp.iter_bytes()
            data = b""
            for piece in pieces:
                data += piece
                if len(decoder.feed(piece)):
                    break
            waiting = not GatedFake.gate.is_set()
            GatedFake.gate.set()
            data += b"".join(pieces)
    finally:
        opener.cancel()
        GatedFake.hold.clear()
        GatedFake.gate.set()
    assert waiting and "content-length" not in resp.headers
    if fmt == "pcm":
        assert np.array_equal(np.frombuffer(data, "<i2"), backend_samples())
    else:
        assert len(sf.read(io.BytesIO(data), dtype="int16")[0]) >= len(backend_samples())


def test_a_wrong_key_is_the_sdks_authentication_error(server):
    with openai.OpenAI(base_url=server.url, api_key="sk-wrong", max_retries=0) as c:
        with pytest.raises(openai.AuthenticationError, match="API key"):
            c.audio.speech.create(model=server.model, voice=ALIAS, input=TEXT)


@pytest.mark.parametrize(("fields", "message"), [
    ({"input": ""}, "'input' must be a non-empty string"),
    ({"model": "tts-1"}, "serves model"),
    ({"voice": "echo"}, re.escape("serves voice 'sine' (or alloy), not 'echo'")),
    ({"response_format": "aac"}, "aac' is not served"),
])
def test_bad_requests_are_the_sdks_bad_request_error_with_the_reason(client, server, fields, message):
    args = {"model": server.model, "voice": ALIAS, "input": TEXT, **fields}
    with pytest.raises(openai.BadRequestError, match=message) as err:
        client.audio.speech.create(**args)
    if fields.get("response_format") == "aac":
        assert "served: mp3, opus, flac, wav, pcm" in str(err.value)


def test_a_wildcard_alias_lets_any_voice_name_speak_the_served_voice():
    srv = make_server(FakeBackend(FakeSettings()), "127.0.0.1", 0, voice_aliases=["*"])
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        with openai.OpenAI(base_url=srv.url, api_key="unused", max_retries=0) as c:
            resp = c.audio.speech.create(model=srv.model, voice="nova", input=TEXT, response_format="pcm")
    finally:
        srv.shutdown()
        srv.server_close()
    assert resp.response.headers["x-voice"] == "sine"
    assert np.array_equal(np.frombuffer(resp.content, "<i2"), backend_samples())
