"""Served TTS: an OpenAI-compatible speech client (``POST {base_url}/audio/speech``).

``--backend http:base_url=http://gpu-box:8000/v1,model=piper:en_US-joe-medium,response_format=pcm``
sends each request as ``{"model", "input", "voice", "response_format"}`` and reads the
streamed response (chunked or not) piece by piece: every received piece that completes
at least one sample is yielded at once, so the synthesis clock records its arrival time
as a chunk. ``response_format`` is any format ``simulplay serve`` serves
(simulplay.backends.audio_formats): ``pcm`` (the default here) is 16-bit little-endian mono
at the rate in the ``X-Sample-Rate`` response header (``simulplay serve`` sends it) or
``sample_rate`` (OpenAI's pcm: 24,000 Hz); ``wav`` takes the rate from the WAV header (whole,
or streamed with unknown sizes); ``mp3`` and ``opus`` are decoded again as pieces arrive, so
each piece's new samples are timed at its arrival; ``flac`` is decoded when it has all arrived.

Without ``model`` the client asks the server (``GET {base_url}/models``, OpenAI's list of
models) once, before the first request, and uses the one model it lists; a server that
lists none or several, or does not answer, is a one-line error asking for ``model=ID``.
``simulplay serve`` lists exactly one, so ``http:base_url=…`` alone works against it. The
identity and the request keys hold the model id either way, so naming it or letting the
client find it gives the same requests.

Retries: a connection failure, a timeout before the response starts, or HTTP 429/5xx is
retried up to ``retries`` times, ``retry_wait`` seconds apart, inside the request's clock
(a retry costs real time). A stream cut off or stalled after audio arrived is a failure,
never retried: its pieces were already timed. After each ``stream()`` the backend exposes
``last_attempts`` (HTTP attempts made) and ``last_errors`` (why earlier attempts failed);
a final failure's message says how many attempts were made. The API key is read from the
environment variable named by ``api_key_env`` when the backend loads; it is sent only in
the ``Authorization`` header and never stored, printed or put into an identity.
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from simulplay.backends.audio_formats import FORMATS, PcmDecoder, decoder_for
from simulplay.backends.base import Backend, BackendConfig, BackendError, register_backend
from simulplay.core.errors import InputError
from simulplay.core.provenance import package_version

__all__ = ["FORMATS", "HttpBackend", "HttpSettings", "PcmDecoder"]
RETRY_STATUS = (429, 500, 502, 503, 504)
IDENTITY_PATH = "/simulplay/identity"  # below base_url; served by `simulplay serve`
MODELS_PATH = "/models"  # below base_url: OpenAI's list of models


@register_backend("http")
@dataclass(frozen=True)
class HttpSettings(BackendConfig):
    """An OpenAI-compatible speech server. ``base_url`` ends before ``/audio/speech`` (e.g.
    ``http://host:8000/v1``); ``timeout``: seconds to wait for the connection and for each
    piece; ``retries``: extra attempts; ``retry_wait``: seconds between attempts;
    ``api_key_env``: the name of an environment variable holding the API key; ``model``:
    the server's model id (empty: the one model the server lists at ``GET /models``)."""

    base_url: str = ""
    model: str = ""
    voice: str = ""
    response_format: str = "pcm"
    sample_rate: int = 24_000
    timeout: float = 60.0
    retries: int = 0
    retry_wait: float = 1.0
    api_key_env: str = ""
    reuse: str = ""
    language: str = field(default="", metadata={"omit_default": True})  # declared: what the voice speaks

    def __post_init__(self):
        url = urlsplit(self.base_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"base_url must be an http:// or https:// URL such as http://127.0.0.1:8000/v1, "
                             f"got '{self.base_url}'")
        if url.username or url.password:
            raise ValueError("base_url must not hold credentials (give the API key through api_key_env)")
        if self.response_format not in FORMATS:
            raise ValueError(f"response_format must be one of {', '.join(FORMATS)}, got '{self.response_format}'")
        if self.timeout <= 0 or self.retries < 0 or self.retry_wait < 0 or self.sample_rate <= 0:
            raise ValueError("timeout > 0, retries ≥ 0, retry_wait ≥ 0 and sample_rate > 0 are required")
        self.reuse_policy()

    def voice_language(self) -> tuple[str, str] | None:
        """The declared ``language`` (e.g. ``de``) and the server's voice; None when not declared."""
        from simulplay.traces.language import base_code

        return (base_code(self.language), f"{self.voice or 'the server voice'} at {self.base_url}") \
            if self.language else None

    def create(self) -> HttpBackend:
        return HttpBackend(self)


class RetryableError(Exception):
    """A failure before any audio arrived that a retry may cure."""


class HttpBackend(Backend):
    config: HttpSettings

    def __init__(self, config: HttpSettings):
        super().__init__(config)
        self.sample_rate = config.sample_rate
        self.last_attempts = 0
        self.last_errors: list[str] = []
        self._key: str | None = None
        self._identity: dict[str, Any] | None = None
        self._model = config.model or None  # found with GET /models when not given
        self._rate_seen = False
        url = urlsplit(config.base_url)
        self._scheme, self._host, self._port = url.scheme, url.hostname, url.port
        self._prefix = url.path.rstrip("/")

    def load(self) -> None:
        env = self.config.api_key_env
        if env:
            key = os.environ.get(env, "")
            if not key:
                raise InputError.at("backend http", f"the environment variable {env} is not set or empty",
                                    field="api_key_env", accepted="the name of a variable holding the API key")
            self._key = key
        self.loaded = True

    def warmup(self) -> None:
        """One untimed request, so that a server's first-request costs stay out of the clock.
        A failure here is only logged: every timed request records its own failure."""
        try:
            for _ in self.stream("Warm up."):
                pass
        except BackendError as e:
            logging.getLogger(__name__).warning("warm-up request to %s failed: %s", self.config.base_url, e)

    # ---- HTTP ------------------------------------------------------------------

    def _connection(self) -> http.client.HTTPConnection:
        cls = http.client.HTTPSConnection if self._scheme == "https" else http.client.HTTPConnection
        return cls(self._host, self._port, timeout=self.config.timeout)

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": f"audio/{self.config.response_format}"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        return headers

    @property
    def model(self) -> str:
        """The model id sent with every request: the configured one, or the one model the
        server lists (asked once)."""
        if self._model is None:
            self._model = self._listed_model()
        return self._model

    def _get_json(self, path: str) -> tuple[int, Any]:
        """``GET {base_url}{path}``: the status and the decoded JSON body (None if not JSON)."""
        conn = self._connection()
        try:
            conn.request("GET", self._prefix + path, headers=self._headers() if self._key else {})
            resp = conn.getresponse()
            body = resp.read()
        except OSError as e:
            raise InputError.at(self.config.base_url, f"cannot be reached ({type(e).__name__}: {e})",
                                field="base_url", accepted="a running OpenAI-compatible speech server") from e
        finally:
            conn.close()
        try:
            return resp.status, json.loads(body)
        except ValueError:
            return resp.status, None

    def _listed_model(self) -> str:
        if self.config.api_key_env and not self.loaded:
            self.load()
        status, body = self._get_json(MODELS_PATH)
        data = body.get("data") if isinstance(body, dict) else None
        ids = [str(m["id"]) for m in data if isinstance(m, dict) and m.get("id")] if isinstance(data, list) else None
        if status != 200 or ids is None:
            found = f"GET {self._prefix}{MODELS_PATH} answered HTTP {status}" + ("" if ids is not None else
                                                                                 " without a list of models")
        elif len(ids) != 1:
            found = f"the server lists {len(ids)} models" + (f" ({', '.join(ids[:10])})" if ids else "")
        else:
            return ids[0]
        raise InputError.at("backend http", f"no model given and {found}", field="model",
                            accepted="model=ID naming the server's model (found automatically only when the "
                            "server lists exactly one)")

    def _open(self, text: str) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        c = self.config
        body = {"model": self.model, "input": text, "response_format": c.response_format}
        if c.voice:
            body["voice"] = c.voice
        conn = self._connection()
        try:
            conn.request("POST", f"{self._prefix}/audio/speech", json.dumps(body).encode(), self._headers())
            resp = conn.getresponse()
        except TimeoutError as e:
            conn.close()
            raise RetryableError(f"no response within {c.timeout:g} s") from e
        except OSError as e:  # refused, reset, unreachable
            conn.close()
            raise RetryableError(f"connection failed ({type(e).__name__}: {e})") from e
        if resp.status != 200:
            detail = _error_detail(resp)
            conn.close()
            message = f"HTTP {resp.status} {resp.reason}{': ' + detail if detail else ''}"
            if resp.status in RETRY_STATUS:
                raise RetryableError(message)
            raise BackendError(message)
        return conn, resp

    def stream(self, text: str) -> Iterator[np.ndarray]:
        """Each received piece's complete samples, yielded on arrival (int16 mono)."""
        if not self.loaded:
            self.load()
        self.last_attempts, self.last_errors = 0, []
        attempts = 1 + self.config.retries
        for attempt in range(1, attempts + 1):
            self.last_attempts = attempt
            try:
                conn, resp = self._open(text)
            except RetryableError as e:
                self.last_errors.append(str(e))
                if attempt == attempts:
                    raise BackendError(f"{e} (after {attempt} attempt{'s' if attempt > 1 else ''}: "
                                       f"{'; '.join(self.last_errors)})") from e
                time.sleep(self.config.retry_wait)
                continue
            try:
                yield from self._pieces(resp)
            finally:
                conn.close()
            return

    def _pieces(self, resp: http.client.HTTPResponse) -> Iterator[np.ndarray]:
        header_rate = resp.getheader("X-Sample-Rate")
        decoder = decoder_for(self.config.response_format, int(header_rate) if header_rate else self.config.sample_rate)
        received = 0
        while True:
            try:
                piece = resp.read1(1 << 16)
            except http.client.IncompleteRead as e:
                raise BackendError(f"stream cut off after {received + len(e.partial)} bytes") from e
            except TimeoutError as e:
                raise BackendError(f"no data for {self.config.timeout:g} s after {received} bytes") from e
            except (OSError, http.client.HTTPException) as e:
                raise BackendError(f"stream broken after {received} bytes ({type(e).__name__}: {e})") from e
            if not piece:
                break
            received += len(piece)
            samples = decoder.feed(piece)
            if decoder.rate is not None:
                self._set_rate(decoder.rate)
            if len(samples):
                yield samples
        if resp.length:  # Content-Length announced more bytes than arrived before the server closed
            raise BackendError(f"stream cut off after {received} bytes ({resp.length} announced bytes missing)")
        tail = decoder.finish()
        if decoder.rate is not None:
            self._set_rate(decoder.rate)
        if len(tail):
            yield tail

    def _set_rate(self, rate: int) -> None:
        if self._rate_seen and rate != self.sample_rate:
            raise BackendError(f"the server changed its sample rate from {self.sample_rate} to {rate} Hz")
        self.sample_rate, self._rate_seen = rate, True

    # ---- identity --------------------------------------------------------------

    def served_identity(self) -> dict[str, Any] | None:
        """``simulplay serve``'s backend identity (None from a server that does not report one)."""
        status, body = self._get_json(IDENTITY_PATH)
        return body if status == 200 and isinstance(body, dict) else None

    def label(self) -> str:
        return f"http:{self.model}" + (f"/{self.config.voice}" if self.config.voice else "")

    def identity(self) -> dict[str, Any]:
        if self._identity is None:
            if self.config.api_key_env and not self.loaded:
                self.load()
            c = self.config
            served = self.served_identity()
            ident = {
                "package": f"simulplay-http-client@{package_version('simulplay')}",
                "voice": c.voice or "(server default)",
                "server": c.base_url,
                "settings": {**{k: v for k, v in c.settings().items()
                                if k not in ("api_key_env", "reuse", "language")},
                             "model": self.model},
                "served": served or "not reported (not a simulplay server)",
                "seed": (served or {}).get("seed"),
                "device": f"remote:{(served or {}).get('device', 'unknown')}",
                "threads": f"remote:{(served or {}).get('threads', 'unknown')}",
            }
            self._identity = ident
        return self._identity


def _error_detail(resp: http.client.HTTPResponse) -> str:
    """The server's error message (OpenAI style ``{"error": {"message": …}}``), shortened."""
    try:
        body = resp.read(4096)
    except (OSError, http.client.HTTPException):
        return ""
    try:
        data = json.loads(body)
        message = data.get("error", {}).get("message") if isinstance(data.get("error"), dict) else data.get("error")
        return str(message or data)[:300]
    except (ValueError, AttributeError):
        return body.decode("utf-8", "replace").strip()[:300]
