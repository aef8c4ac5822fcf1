"""Realizations that are independent, in one process: two runs of the Python API with real
Piper draw their own synthesis noise (each voice load seeds onnxruntime from the OS and
records the seed in the manifest file), so their samples differ, as do the realizations of one run; under the
``deterministic`` preset the samples are the same by design and no seed is drawn.

Before the seed was drawn per load, onnxruntime seeded every session of a process from one
process-wide value, so the second run here repeated the first one's samples exactly.
"""

from pathlib import Path

import numpy as np
import pytest

import simulplay
from simulplay.core.tables import read_table
from simulplay.store.store import AudioStore
from simulplay.traces.model import frame_from_streams
from tests.support.factories import stream

# real syntheses take seconds: slow (make test-fast leaves them out)
pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:service times were measured on a busy CPU")]

TEXTS = ["Good morning, everyone.", "The bridge was built in two years.", "How are you today?"]
TRACE = frame_from_streams([stream([0.0, 1.0, 2.0], TEXTS, talk_id="t1", system="A", source_s=4.0)])


def run(folder: Path, backend: str) -> tuple[list[np.ndarray], list[int | None], list[int]]:
    """One API run of the three texts in two realizations, into its own store: each
    request's samples (realization 0's texts, then realization 1's), the seed each
    record in its store names, and the seeds the manifest's signature lists."""
    folder.mkdir()
    out = folder / "m.parquet"
    man = simulplay.synthesize(TRACE, "immediate", store=folder / "store", backend=backend, realizations=2,
                               reuse="same-realization", out=out)
    assert "noise_seeds" not in man.signature  # provenance of the file, not of every number made from it
    man = man.to_frame().sort_values(["realization", "seq"])
    assert len(man) == 6 and (man["error"] == "").all()
    store = AudioStore.open(folder / "store", create=False)
    audio = [store.load_audio(k)[0] for k in man["audio_key"]]
    seeds = [store.get_record(k).get("noise_seed") for k in sorted(store.completed_keys())]  # this run's store
    _, meta = read_table(out)
    return audio, seeds, meta.get("noise_seeds", [])


def same(a: list[np.ndarray], b: list[np.ndarray]) -> list[bool]:
    return [len(x) == len(y) and np.array_equal(x, y) for x, y in zip(a, b, strict=True)]


def test_two_api_runs_in_one_process_differ_and_record_their_seeds(tmp_path):
    spec = "piper:intra_op_threads=1"
    (a, seeds_a, sig_a), (b, seeds_b, sig_b) = run(tmp_path / "a", spec), run(tmp_path / "b", spec)
    assert not any(same(a, b)), same(a, b)  # no request of run b repeats run a's samples
    assert not any(same(a[:3], a[3:]))  # realization 1 is not realization 0 again
    # one serial worker, one load per run: one seed for all of a run's requests, another for the next run
    assert len(set(seeds_a)) == 1 and len(set(seeds_b)) == 1 and isinstance(seeds_a[0], int)
    assert seeds_a[0] != seeds_b[0]
    assert sig_a == [seeds_a[0]] and sig_b == [seeds_b[0]]


def test_the_deterministic_preset_repeats_its_samples_and_draws_no_seed(tmp_path):
    spec = "piper:intra_op_threads=1,deterministic"
    (a, seeds_a, sig_a), (b, seeds_b, sig_b) = run(tmp_path / "a", spec), run(tmp_path / "b", spec)
    assert all(same(a, b))
    assert seeds_a == seeds_b == [None] * 6 and sig_a == sig_b == []
