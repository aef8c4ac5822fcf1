"""`simulplay serve`'s own server over a fast tone backend, in a child process, for the client benches.

``--server serve`` in bench_live_lateness.py and bench_load_lateness.py: instead of the tests'
scripted server, the child runs :func:`simulplay.workflows.server.make_server` (the server
`simulplay serve` runs) over :class:`ToneBackend`, which answers every request at once with
0.1 s of 24 kHz audio in one chunk (the scripted server's default answer), so the figures
measure the HTTP server and the client, not a synthesizer.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simulplay.backends.base import Backend, BackendConfig  # noqa: E402

RATE = 24_000
TONE = (np.sin(2 * np.pi * 440 * np.arange(2400) / RATE) * 16_000).astype(np.int16)


@dataclass(frozen=True)
class ToneSettings(BackendConfig):
    def create(self) -> ToneBackend:
        return ToneBackend(self)


class ToneBackend(Backend):
    sample_rate = RATE

    def load(self) -> None:
        self.loaded = True

    def warmup(self) -> None:
        pass

    def stream(self, text: str):
        yield TONE

    def identity(self) -> dict[str, Any]:
        return {"package": "bench-tone@0", "voice": "tone", "settings": {}, "seed": 0, "device": "cpu"}


def serve_simulplay(port_queue, workers: int, model: str) -> None:
    """Run `simulplay serve`'s server on a free loopback port until the process is terminated."""
    from simulplay.workflows.server import make_server, serve_until_interrupted

    server = make_server([ToneSettings().create() for _ in range(workers)], "127.0.0.1", 0, model=model)
    port_queue.put(int(server.url.split(":")[2].split("/")[0]))
    serve_until_interrupted(server)
