"""The served audio formats: what the encoder writes, read back by soundfile and the standard
library, and the clients' decoders fed the bytes in small pieces as they arrive."""

import io
import wave

import numpy as np
import pytest
import soundfile as sf
import soxr

from simulplay.backends.audio_formats import (
    FORMATS,
    CodedDecoder,
    Encoder,
    PcmDecoder,
    decoder_for,
    mp3_frame_length,
    ogg_pages_end,
    wav_header,
)
from simulplay.backends.base import BackendError

RATE = 22_050  # Piper's
T = np.arange(int(RATE * 1.5)) / RATE
CHIRP = (6000 * np.sin(2 * np.pi * (200 + 300 * T) * T)).astype(np.int16)
CHUNKS = (CHIRP[:10_000], CHIRP[10_000:20_000], CHIRP[20_000:])  # a backend's three sentences


def encoded(fmt: str, **kw) -> tuple[Encoder, list[bytes]]:
    enc = Encoder(fmt, RATE, **kw)
    return enc, [enc.start(), *(enc.feed(c) for c in CHUNKS), enc.finish()]


def fed(fmt: str, data: bytes, step: int = 333) -> tuple[list[np.ndarray], np.ndarray, int | None]:
    """The decoder's pieces for ``data`` fed ``step`` bytes at a time, its final samples, its rate."""
    dec = decoder_for(fmt, RATE)
    pieces = [dec.feed(data[i:i + step]) for i in range(0, len(data), step)]
    return pieces, dec.finish(), dec.rate


def snr_db(ref: np.ndarray, got: np.ndarray) -> float:
    ref, got = ref.astype(float), got.astype(float)
    return float(10 * np.log10(np.sum(ref ** 2) / np.sum((ref - got) ** 2)))


@pytest.mark.parametrize("fmt", ["pcm", "wav", "flac"])
def test_lossless_formats_give_back_the_samples_exactly(fmt):
    _, parts = encoded(fmt)
    pieces, tail, rate = fed(fmt, b"".join(parts))
    assert rate == RATE and np.array_equal(np.concatenate([*pieces, tail]), CHIRP)


def test_whole_wav_has_its_true_sizes_for_wave_and_soundfile_and_streamed_wav_comes_first():
    enc, parts = encoded("wav")
    assert not enc.streamed and parts[1:4] == [b"", b"", b""]  # nothing before the end
    with wave.open(io.BytesIO(parts[-1])) as w:
        assert (w.getnframes(), w.getframerate(), w.getsampwidth(), w.getnchannels()) == (len(CHIRP), RATE, 2, 1)
    assert sf.info(io.BytesIO(parts[-1])).frames == len(CHIRP)
    enc, parts = encoded("wav", wav_mode="stream")
    assert enc.streamed and parts[0] == wav_header(RATE) and parts[1] == CHUNKS[0].astype("<i2").tobytes()


def test_a_whole_wav_cut_short_is_an_error_not_shorter_audio():
    _, parts = encoded("wav")
    dec = PcmDecoder(RATE, wav=True)
    dec.feed(parts[-1][:-100])
    with pytest.raises(BackendError, match="100 bytes before the size its header gives"):
        dec.finish()


def test_flac_arrives_whole_and_is_decoded_at_the_end():
    enc, parts = encoded("flac")
    assert not enc.streamed and parts[:4] == [b"", b"", b"", b""]
    pieces, tail, _ = fed("flac", parts[-1])
    assert all(len(p) == 0 for p in pieces) and np.array_equal(tail, CHIRP)


def test_mp3_streams_each_sentence_and_decodes_as_it_arrives():
    enc, parts = encoded("mp3")
    assert enc.streamed and all(parts[1:4])  # bytes after each sentence, not only at the end
    data = b"".join(parts)
    assert mp3_frame_length(data[:4]) == 72 * 80_000 // RATE  # MPEG-2 layer III, 80 kbit/s: 261 bytes
    whole, rate = sf.read(io.BytesIO(data), dtype="int16")
    pieces, tail, got_rate = fed("mp3", data)
    got = np.concatenate([*pieces, tail])
    assert got_rate == rate == RATE and np.array_equal(got, whole)  # piecewise decoding = decoding the whole
    assert sum(len(p) for p in pieces[:len(pieces) // 2]) > 0  # samples came before the end
    assert snr_db(CHIRP, got[576 + 529:576 + 529 + len(CHIRP)]) > 20  # after the encoder's and decoder's delay


def test_opus_is_resampled_to_24_khz_streams_in_pages_and_decodes_as_they_complete():
    enc, parts = encoded("opus")
    assert enc.out_rate == 24_000 and enc.streamed and all(parts[1:4])
    data = b"".join(parts)
    assert ogg_pages_end(data) == len(data) and ogg_pages_end(data[:-1]) < len(data)
    pieces, tail, rate = fed("opus", data)
    got = np.concatenate([*pieces, tail])
    whole, _ = sf.read(io.BytesIO(data), dtype="int16")
    assert rate == 24_000 and np.array_equal(got, whole)
    assert sum(len(p) for p in pieces[:len(pieces) // 2]) > 0
    reference = soxr.resample(CHIRP.astype(np.float32), RATE, 24_000)
    assert len(got) == len(reference) and snr_db(reference, got) > 12


def test_decoders_refuse_what_is_not_their_format():
    with pytest.raises(ValueError, match="aac"):
        decoder_for("aac", RATE)
    dec = CodedDecoder("mp3")
    dec.feed(b"not audio at all" * 10)
    with pytest.raises(BackendError, match="mp3 response cannot be decoded"):
        dec.finish()
    assert set(FORMATS) == {"mp3", "opus", "flac", "wav", "pcm"}
