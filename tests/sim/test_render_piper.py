"""Real Piper outputs: `simulplay render` against `simulplay replay --parts` (request and chunk
release), sample for sample. The expected files are laid out here from the replay's per-part
playback times (seconds from its Parquet table, taken to whole nanoseconds) and the store's
samples (cut at the chunk table's n_samples), with exact fractions; nothing from
simulplay.sim.listener_audio is used."""

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
import soundfile as sf

from simulplay.core.timebase import to_ns
from simulplay.store.store import AudioStore
from tests.support.factories import stream

KEYS = ["talk_id", "system", "condition", "backend", "realization"]
pytestmark = pytest.mark.slow  # real synthesis and four subprocesses


@pytest.fixture(scope="module")
def synthesized(piper_runs):
    streams = [stream([0.0, 0.4, 0.5, 3.0], ["Hello there, my friend.", "How are you?", "…", "Fine. Thanks a lot!"],
                      talk_id="t1", system="A", source_s=4.0),
               stream([0.3, 1.0], ["Good morning.", "One, two, three. Four."], talk_id="t1", system="F",
                      source_s=4.0)]
    return piper_runs.run("render_piper", streams)


def nearest(ns: int, rate: int) -> int:
    return int(Fraction(int(ns), 10**9) * rate + Fraction(1, 2))


@pytest.mark.parametrize("release", ["request", "chunk"])
def test_piper_outputs_render_sample_exact_against_replay(cli, synthesized, tmp_path, release):
    root = synthesized
    cli("replay", root.manifest, "--release", release, "--out", tmp_path / "s.parquet",
        "--parts", tmp_path / "parts.parquet", check=True)
    cli("render", root.manifest, "--store", root.store, "--release", release, "--out", tmp_path / "out",
        "--quiet", check=True)
    man = pd.read_parquet(root.manifest)
    chunks = pd.read_parquet(root.manifest.with_name(root.manifest.stem + ".chunks.parquet"))  # <stem>.chunks
    parts = pd.read_parquet(tmp_path / "parts.parquet")
    summary = pd.read_parquet(tmp_path / "s.parquet")
    table = pd.read_csv(tmp_path / "out" / "render.csv", dtype={"realization": str})
    store = AudioStore(root.store)
    assert len(table) == len(summary) == 4
    touching = 0
    for row in table.to_dict("records"):
        key = {k: row[k] for k in KEYS}
        mine = parts[(parts[KEYS].astype(str) == pd.Series(key).astype(str)).all(axis=1)].sort_values(
            ["seq"] + (["chunk"] if release == "chunk" else []))
        played = mine[mine["play_s"].notna()]
        got, rate = sf.read(tmp_path / "out" / row["file"], dtype="int16")
        want = np.zeros(nearest(to_ns(float(played["end_s"].iloc[-1])), rate), np.int16)
        end = 0
        for r in played.to_dict("records"):
            req = man[(man[KEYS].astype(str) == pd.Series(key).astype(str)).all(axis=1) & (man["seq"] == r["seq"])]
            samples = store.load_audio(req["audio_key"].iloc[0])[0]
            if release == "chunk":
                ch = chunks[(chunks[KEYS].astype(str) == pd.Series(key).astype(str)).all(axis=1)
                            & (chunks["seq"] == r["seq"])].sort_values("chunk")
                stop = np.cumsum(ch["n_samples"].to_numpy())
                k = int(np.flatnonzero(ch["chunk"].to_numpy() == r["chunk"])[0])
                samples = samples[stop[k] - ch["n_samples"].iloc[k]:stop[k]]
            start = nearest(to_ns(r["play_s"]), rate)
            touching += start == end
            assert start >= end  # never over the previous part
            want[start:start + len(samples)] = samples
            end = start + len(samples)
        assert end == len(want)
        assert np.array_equal(got, want), row["file"]  # silence, and every part from its playback start
        s = summary[(summary[KEYS].astype(str) == pd.Series(key).astype(str)).all(axis=1)].iloc[0]
        assert abs(row["idle_s"] - s["idle_s"]) <= 1 / rate and abs(row["end_s"] - s["end_s"]) <= 1 / rate
        assert row["sample_rate"] == 22050 and row["n_samples"] == len(got)
    assert touching > 0  # some parts wait for the previous one and follow it without a gap
