"""simulplay's own clients of every format `simulplay serve` serves (127.0.0.1 only): the
``http`` backend and the live/load client (simulplay.live.client.send) decode each format to
the backend's samples (exactly for the lossless ones), and time their first audible audio on
the decoded samples."""

import asyncio
import threading

import numpy as np
import pytest

from simulplay.backends import parse_backend
from simulplay.backends.audio_formats import FORMATS
from simulplay.live.client import Endpoint, Record, clock, http_client, send
from simulplay.workflows.server import make_server
from tests.support.fakes import FakeBackend, FakeSettings

TEXT = "Hello there. And now the second sentence."
MP3_DELAY = 576 + 529  # LAME's delay and the decoder's


@pytest.fixture(scope="module")
def server():
    srv = make_server(FakeBackend(FakeSettings()), "127.0.0.1", 0)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def backend_samples() -> np.ndarray:
    return np.concatenate(list(FakeBackend(FakeSettings()).stream(TEXT))).astype(float)


def matches(fmt: str, audio: np.ndarray) -> bool:
    """Exactly the backend's samples (pcm, wav, flac), or within 20 dB SNR (mp3 after its
    delay, opus aligned)."""
    ref = backend_samples()
    if fmt in ("pcm", "wav", "flac"):
        return np.array_equal(audio, ref)
    delay = MP3_DELAY if fmt == "mp3" else 0
    part = audio[delay:delay + len(ref)].astype(float)
    return len(part) == len(ref) and 10 * np.log10(np.sum(ref ** 2) / np.sum((ref - part) ** 2)) > 20


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_http_backend_decodes_every_served_format(server, fmt):
    client = parse_backend(f"http:base_url={server.url},model={server.model},response_format={fmt}").create()
    audio = np.concatenate(list(client.stream(TEXT)))
    assert client.sample_rate == 16_000 and matches(fmt, audio)


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_live_client_decodes_every_served_format_and_times_first_audible_audio(server, fmt):
    endpoint = Endpoint(url=f"{server.url}/audio/speech", model=server.model, response_format=fmt)
    rec = Record(0, 0, 0.0, TEXT)

    async def one() -> None:
        async with http_client(endpoint, 1) as client:
            rec.t0 = clock()
            await send(client, endpoint, rec)

    asyncio.run(one())
    assert rec.ok and rec.sample_rate == 16_000 and matches(fmt, rec.audio())
    assert rec.n_samples == len(rec.audio()) and len(rec.chunk_s) == len(rec.pieces) >= 1
    # the fake's audio is loud from its first sample: the first audible piece is the first
    # piece that holds any sample (mp3's first ones are the encoder's near-silent delay)
    assert rec.first_byte_s <= rec.first_audible_s <= rec.last_byte_s
    if fmt != "mp3":
        assert rec.first_audible_s == rec.chunk_s[0]
