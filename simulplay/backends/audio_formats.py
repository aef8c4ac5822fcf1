"""The audio formats of the OpenAI speech API, encoded (``simulplay serve``) and decoded (the
``http`` backend, the ``live`` and ``load`` clients), all 16-bit mono.

* ``pcm``: raw little-endian samples, streamed.
* ``wav``: by default whole, with correct sizes (the ``wave`` module and soundfile read the
  true length); streamed (:data:`WAV_MODES`), a header with unknown sizes (0xFFFFFFFF) and
  then the samples as they come.
* ``mp3``: streamed; constant-bitrate MPEG layer III from libsndfile (LAME). The placeholder
  frame libsndfile writes first (filled in with a LAME tag when the file closes, which a
  stream cannot go back to) is left out, so decoders see plain frames: the audio starts after
  the encoder's delay (1,105 samples of near-silence) and ends with up to one frame of
  padding.
* ``opus``: streamed; Ogg/Opus from libsndfile (libopus), a page every 20 ms of audio. Opus
  takes 8, 12, 16, 24 or 48 kHz: other rates are resampled (soxr) to the next one above
  (22,050 Hz → 24 kHz), and the decoded audio has that rate.
* ``flac``: whole (its header holds the length, known only at the end).

``aac`` is not served: neither libsndfile nor the standard library encodes it.
"""

from __future__ import annotations

import io
import struct
import wave

import numpy as np
import soundfile as sf

from simulplay.backends.base import BackendError

FORMATS = ("mp3", "opus", "flac", "wav", "pcm")
DEFAULT_FORMAT = "mp3"  # what the OpenAI API answers a request without response_format
WAV_MODES = ("whole", "stream")
CONTENT_TYPES = {"mp3": "audio/mpeg", "opus": "audio/ogg", "flac": "audio/flac", "wav": "audio/wav",
                 "pcm": "audio/pcm"}
OPUS_RATES = (8000, 12000, 16000, 24000, 48000)
OGG_PAGE_LATENCY_MS = 20.0
SFC_SET_OGG_PAGE_LATENCY_MS = 0x1302  # libsndfile ≥ 1.2 (sndfile.h)
MP3_BITRATES = {3: (0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320),  # MPEG-1
                2: (0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160)}  # MPEG-2 and 2.5
MP3_RATES = {3: (44100, 48000, 32000), 2: (22050, 24000, 16000), 0: (11025, 12000, 8000)}


def streamed(fmt: str, wav_mode: str = "whole") -> bool:
    """Whether ``fmt`` is sent as it is encoded (else whole, once the synthesis has ended)."""
    return fmt in ("pcm", "mp3", "opus") or (fmt == "wav" and wav_mode == "stream")


def encoded_rate(fmt: str, rate: int) -> int:
    """The sample rate of the encoded audio: the backend's, or for opus the next rate it takes."""
    if fmt != "opus" or rate in OPUS_RATES:
        return rate
    return next((r for r in OPUS_RATES if r >= rate), OPUS_RATES[-1])


def wav_header(rate: int, n_bytes: int | None = None) -> bytes:
    """A 16-bit mono PCM WAV header; ``n_bytes`` None: sizes unknown (0xFFFFFFFF), as streaming servers send."""
    riff, data = (0xFFFFFFFF, 0xFFFFFFFF) if n_bytes is None else (36 + n_bytes, n_bytes)
    return (b"RIFF" + struct.pack("<I", riff) + b"WAVE" + b"fmt " + struct.pack("<IHHIIHH", 16, 1, 1, rate, rate * 2,
            2, 16) + b"data" + struct.pack("<I", data))


class _Sink:
    """A file for libsndfile that hands out what was written since the last :meth:`take`;
    writes before that point (a header filled in at close) are dropped."""

    def __init__(self):
        self.pending = bytearray()
        self.sent = 0
        self.pos = 0

    def write(self, data) -> int:
        data = bytes(data)
        start = self.pos - self.sent
        if start >= 0:
            self.pending[start:start + len(data)] = data
        self.pos += len(data)
        return len(data)

    def seek(self, offset: int, whence: int = 0) -> int:
        self.pos = {0: offset, 1: self.pos + offset, 2: self.sent + len(self.pending) + offset}[whence]
        return self.pos

    def tell(self) -> int:
        return self.pos

    def read(self, n: int = -1) -> bytes:
        return b""

    def take(self) -> bytes:
        data = bytes(self.pending)
        self.sent += len(data)
        self.pending = bytearray()
        return data


def mp3_frame_length(header: bytes) -> int:
    """The length in bytes of the MPEG layer III frame that starts with ``header`` (4 bytes)."""
    if len(header) < 4 or header[0] != 0xFF or header[1] & 0xE0 != 0xE0:
        raise ValueError("not an MPEG frame header")
    version = (header[1] >> 3) & 3
    bitrate = MP3_BITRATES[3 if version == 3 else 2][header[2] >> 4] * 1000
    rate = MP3_RATES[version][(header[2] >> 2) & 3]
    return (144 if version == 3 else 72) * bitrate // rate + ((header[2] >> 1) & 1)


class Encoder:
    """One response's audio in ``fmt``: :meth:`start` (bytes before any audio), :meth:`feed`
    (the bytes ready to send after a chunk of int16 samples), :meth:`finish` (the rest)."""

    def __init__(self, fmt: str, rate: int, *, wav_mode: str = "whole"):
        self.fmt, self.rate, self.wav_mode = fmt, int(rate), wav_mode
        self.out_rate = encoded_rate(fmt, self.rate)
        self.streamed = streamed(fmt, wav_mode)
        self._whole: list[np.ndarray] = []
        self._file: sf.SoundFile | None = None
        self._resampler = None
        self._skip = 0  # mp3: the bytes of the placeholder frame still to leave out (-1: not yet seen)
        if fmt in ("mp3", "opus"):
            self._sink = _Sink()
            kw = ({"format": "MP3", "subtype": "MPEG_LAYER_III", "bitrate_mode": "CONSTANT", "compression_level": 0.5}
                  if fmt == "mp3" else {"format": "OGG", "subtype": "OPUS"})
            self._file = sf.SoundFile(self._sink, "w", samplerate=self.out_rate, channels=1, **kw)
            if fmt == "opus":
                latency = sf._ffi.new("double*", OGG_PAGE_LATENCY_MS)
                sf._snd.sf_command(self._file._file, SFC_SET_OGG_PAGE_LATENCY_MS, latency, sf._ffi.sizeof("double"))
                if self.out_rate != self.rate:
                    import soxr

                    self._resampler = soxr.ResampleStream(self.rate, self.out_rate, 1, dtype="int16")
            self._skip = -1 if fmt == "mp3" else 0

    def start(self) -> bytes:
        return wav_header(self.rate) if self.fmt == "wav" and self.streamed else b""

    def feed(self, samples: np.ndarray) -> bytes:
        samples = np.asarray(samples, dtype=np.int16)
        if self._file is not None:
            if self._resampler is not None:
                samples = self._resampler.resample_chunk(samples)
            self._file.write(samples)
            return self._taken()
        if self.streamed:
            return samples.astype("<i2").tobytes()
        self._whole.append(samples)
        return b""

    def finish(self) -> bytes:
        if self._file is not None:
            if self._resampler is not None:
                self._file.write(self._resampler.resample_chunk(np.zeros(0, np.int16), last=True))
            self._file.close()
            return self._taken()
        if self.streamed:
            return b""
        audio = np.concatenate(self._whole) if self._whole else np.zeros(0, np.int16)
        buf = io.BytesIO()
        if self.fmt == "flac":
            sf.write(buf, audio, self.rate, format="FLAC", subtype="PCM_16")
        else:
            with wave.open(buf, "wb") as w:
                w.setnchannels(1)
                w.setsampwidth(2)
                w.setframerate(self.rate)
                w.writeframes(audio.astype("<i2").tobytes())
        return buf.getvalue()

    def _taken(self) -> bytes:
        data = self._sink.take()
        if self._skip == -1 and len(data) >= 4:  # the first frame is libsndfile's placeholder
            self._skip = mp3_frame_length(data[:4])
        if self._skip > 0:
            cut = min(self._skip, len(data))
            data, self._skip = data[cut:], self._skip - cut
        return data


class PcmDecoder:
    """Turns received bytes into int16 samples, carrying partial samples (and a WAV
    header) across pieces."""

    def __init__(self, rate: int, *, wav: bool):
        self.rate: int | None = None if wav else rate
        self.wav = wav
        self.buf = b""
        self.in_data = not wav
        self.left: int | None = None  # data bytes still expected (a WAV header with a known size)

    def feed(self, data: bytes) -> np.ndarray:
        self.buf += data
        if not self.in_data:
            self._parse_header()
            if not self.in_data:
                return np.zeros(0, np.int16)
        n = len(self.buf) // 2 * 2
        if self.left is not None:
            n = min(n, self.left)
            self.left -= n
        samples = np.frombuffer(self.buf[:n], dtype="<i2").astype(np.int16)
        self.buf = self.buf[n:] if self.left != 0 else b""
        return samples

    def _parse_header(self) -> None:
        b = self.buf
        if len(b) < 12:
            return
        if b[:4] != b"RIFF" or b[8:12] != b"WAVE":
            raise BackendError("the response is not a WAV stream (no RIFF/WAVE header)")
        pos = 12
        while len(b) >= pos + 8:
            cid, size = b[pos:pos + 4], struct.unpack("<I", b[pos + 4:pos + 8])[0]
            if cid == b"data":
                if self.rate is None:
                    raise BackendError("the WAV stream has no fmt chunk before its data")
                self.buf, self.in_data = b[pos + 8:], True
                self.left = None if size == 0xFFFFFFFF else size // 2 * 2
                return
            if len(b) < pos + 8 + size:
                return
            if cid == b"fmt ":
                fmt, channels, rate, _, _, bits = struct.unpack("<HHIIHH", b[pos + 8:pos + 24])
                if fmt not in (1, 0xFFFE) or channels != 1 or bits != 16:
                    raise BackendError(f"the WAV stream is not 16-bit mono PCM (format {fmt}, "
                                       f"{channels} channels, {bits} bits)")
                self.rate = rate
            pos += 8 + size + (size & 1)

    def finish(self) -> np.ndarray:
        """The samples still held (none for PCM and WAV; raises on a cut stream)."""
        if not self.in_data:
            raise BackendError("the WAV stream ended before its data chunk")
        if self.buf:
            raise BackendError(f"the stream ended inside a sample ({len(self.buf)} stray byte)")
        if self.left:
            raise BackendError(f"the WAV stream ended {self.left} bytes before the size its header gives")
        return np.zeros(0, np.int16)


class CodedDecoder:
    """Decodes a compressed response (mp3, opus, flac) with soundfile: mp3 and opus again
    after each piece, up to the last complete Ogg page for opus, and the samples not given out
    before are returned (their prefix is the same whatever follows); flac at the end."""

    def __init__(self, fmt: str):
        self.fmt = fmt
        self.rate: int | None = None
        self.buf = bytearray()
        self.given = 0

    def feed(self, data: bytes) -> np.ndarray:
        self.buf += data
        if self.fmt == "flac":
            return np.zeros(0, np.int16)
        end = len(self.buf) if self.fmt == "mp3" else ogg_pages_end(self.buf)
        return self._new(end, final=False)

    def finish(self) -> np.ndarray:
        if not self.buf:
            raise BackendError(f"the {self.fmt} response is empty")
        return self._new(len(self.buf), final=True)

    def _new(self, end: int, *, final: bool) -> np.ndarray:
        try:
            audio, rate = sf.read(io.BytesIO(bytes(self.buf[:end])), dtype="int16", always_2d=True)
        except (sf.LibsndfileError, RuntimeError) as e:
            if final:
                raise BackendError(f"the {self.fmt} response cannot be decoded ({e})") from e
            return np.zeros(0, np.int16)  # not enough yet (an Ogg stream's header pages alone)
        if audio.shape[1] != 1:
            raise BackendError(f"the {self.fmt} response is not mono ({audio.shape[1]} channels)")
        self.rate = rate
        new = audio[self.given:, 0].copy()
        self.given += len(new)
        return new


def ogg_pages_end(buf: bytes | bytearray) -> int:
    """The offset just after the last complete Ogg page at the start of ``buf``."""
    pos = 0
    while len(buf) >= pos + 27 and buf[pos:pos + 4] == b"OggS":
        n = buf[pos + 26]
        if len(buf) < pos + 27 + n:
            break
        size = 27 + n + sum(buf[pos + 27:pos + 27 + n])
        if len(buf) < pos + size:
            break
        pos += size
    return pos


def decoder_for(fmt: str, rate: int) -> PcmDecoder | CodedDecoder:
    """A decoder of a response in ``fmt``; ``rate``: the pcm rate (the X-Sample-Rate header's, or the client's)."""
    if fmt in ("pcm", "wav"):
        return PcmDecoder(rate, wav=fmt == "wav")
    if fmt in ("mp3", "opus", "flac"):
        return CodedDecoder(fmt)
    raise ValueError(f"response_format must be one of {', '.join(FORMATS)}, got '{fmt}'")
