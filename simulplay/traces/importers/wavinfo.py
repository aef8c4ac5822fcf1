"""The duration of a WAV file from its RIFF header (any sample format), in samples."""

from __future__ import annotations

import struct
from pathlib import Path

from simulplay.core.errors import InputError

ACCEPTED = "a RIFF/WAVE file with 'fmt ' and 'data' chunks"


def wav_frames(path: str | Path) -> tuple[int, int]:
    """``(frames, sample_rate)`` of a WAV file; duration in seconds is ``frames / sample_rate``.

    Reads only the header chunks. A ``data`` size larger than the file (a stream that was
    never finalized) is clamped to the bytes present.
    """
    p = Path(path)
    with open(p, "rb") as fh:
        head = fh.read(12)
        if len(head) < 12 or head[:4] not in (b"RIFF", b"RF64") or head[8:12] != b"WAVE":
            raise InputError.at(p, "is not a WAV file", accepted=ACCEPTED)
        rate = block = None
        while True:
            chunk = fh.read(8)
            if len(chunk) < 8:
                break
            cid, size = chunk[:4], struct.unpack("<I", chunk[4:])[0]
            if cid == b"fmt ":
                fmt = fh.read(size + (size & 1))
                if len(fmt) < 16:
                    break
                _, _, rate, _, block = struct.unpack("<HHIIH", fmt[:14])
            elif cid == b"data":
                if not rate or not block:
                    break
                here = fh.tell()
                available = fh.seek(0, 2) - here
                return min(size, available) // block, rate
            else:
                fh.seek(size + (size & 1), 1)
    raise InputError.at(p, "has no readable 'fmt ' and 'data' chunks", accepted=ACCEPTED)
