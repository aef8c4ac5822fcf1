"""`simulplay render`: listener audio on the source clock, sample-exact against the replay.

Expected files are built here from the replay's own per-part playback times (`replay`'s part
table, the defining clock) with Python's exact fractions and the documented placement rule
(a part that starts as the previous one ends follows it; any other part starts at the sample
nearest its playback start, a tie going up), never from simulplay.sim.listener_audio. The hand-worked
cases say so where they are.
"""

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
import soundfile as sf
import soxr

from simulplay.core.paths import safe_component, safe_names
from simulplay.core.tables import read_table
from simulplay.core.timebase import to_ns
from simulplay.manifest import validate_manifest
from simulplay.sim import replay
from simulplay.sim.listener_audio import sample_index
from simulplay.workflows.render import render_outputs
from tests.support.checks import assert_one_line_error

KEYS = ["talk_id", "system", "condition"]


def nearest(ns: int, rate: int) -> int:
    """The sample nearest to ``ns`` nanoseconds at ``rate`` Hz, a tie going up (fractions)."""
    x = Fraction(int(ns), 10**9) * rate
    return int(x + Fraction(1, 2)) if x >= 0 else None  # int() floors a non-negative fraction


def expected_file(played: pd.DataFrame, pieces: list[np.ndarray], rate: int) -> tuple[np.ndarray, list[int]]:
    """One output's file from its played parts (play_s/end_s of the replay), by the rule."""
    starts, end_sample, end_ns = [], 0, 0
    for p, e, piece in zip(to_ns(played["play_s"].to_numpy(float)), to_ns(played["end_s"].to_numpy(float)), pieces):
        start = end_sample if int(p) == end_ns else max(nearest(p, rate), end_sample)
        starts.append(start)
        end_sample, end_ns = start + len(piece), int(e)
    out = np.zeros(end_sample, np.int16)
    for s, piece in zip(starts, pieces):
        out[s:s + len(piece)] = piece
    return out, starts


@pytest.fixture
def main(monkeypatch, capsys):
    """`simulplay ARGS…` run in this process (the CLI entry point, as the console script runs
    it): returns a CompletedProcess-like result with the exit code, stdout and stderr."""
    from types import SimpleNamespace

    from simulplay.cli import main as entry

    def run(*args, check=False):
        monkeypatch.setattr("sys.argv", ["simulplay", *map(str, args)])
        with pytest.raises(SystemExit) as e:
            entry()
        out = capsys.readouterr()
        proc = SimpleNamespace(returncode=e.value.code, stdout=out.out, stderr=out.err)
        assert not check or proc.returncode == 0, proc.stderr
        return proc

    return run


class DictStore:
    """An in-memory audio store: key → (samples, rate), as AudioStore.load_audio."""

    def __init__(self):
        self.audio = {}

    def put(self, samples: np.ndarray, rate: int) -> str:
        key = f"k{len(self.audio)}"
        self.audio[key] = (np.asarray(samples, np.int16), rate)
        return key

    def load(self, key: str):
        return self.audio[key]


def random_manifest(rng, store: DictStore, n_outputs: int) -> pd.DataFrame:
    """Outputs with ready times (some at exact half samples, some tied to the previous
    part's end by being ready early), silent parts, and nonzero samples."""
    rows = []
    for o in range(n_outputs):
        rate = int(rng.choice([8000, 16000, 22050, 24000, 44100]))
        t = 0.0
        for seq in range(int(rng.integers(1, 30))):
            n = 0 if rng.random() < 0.1 else int(rng.integers(1, rate // 2))
            kind = rng.random()
            if kind < 0.3:  # exactly half a sample past a sample (a tie at 8 kHz: 62,500 ns)
                t = (int(t * rate) + int(rng.integers(0, 3 * rate)) + 0.5) / rate
            elif kind < 0.8:
                t += float(rng.exponential(0.3))
            samples = rng.integers(1, 30000, n) * rng.choice([-1, 1], n)
            rows.append({"talk_id": f"t{o % 4}", "system": f"S{o % 3}", "condition": f"c{o}", "seq": seq,
                         "dispatch_s": t, "service_s": np.nan, "ready_s": t, "audio_s": n / rate,
                         "source_s": 30.0, "audio_key": store.put(samples, rate) if n else "",
                         "n_samples": n, "sample_rate": rate, "error": ""})
    return pd.DataFrame(rows)


def stored_pieces(man: pd.DataFrame, played: pd.DataFrame, store: DictStore) -> list[np.ndarray]:
    req = man.set_index(KEYS + ["seq"])
    return [store.load(req.loc[tuple(r[k] for k in KEYS) + (r["seq"],), "audio_key"])[0]
            for r in played.to_dict("records")]


def test_sample_index_rounds_to_the_nearest_sample_ties_up():
    # by hand, at 4 Hz (a sample every 250 ms): 125 ms is exactly half a sample → 1;
    # 124.999999 ms → 0; 375 ms (1.5 samples) → 2; 10 s + 1 ns → 40
    got = sample_index(np.array([0, 124_999_999, 125_000_000, 375_000_000, 10_000_000_001]), 4)
    assert got.tolist() == [0, 0, 1, 2, 40]
    # 2^62 ns (146 years) at 48 kHz does not overflow: floor(2^62 · 48000 / 10^9 + 1/2)
    assert int(sample_index(2**62, 48_000)) == int(Fraction(2**62 * 48_000, 10**9) + Fraction(1, 2))


def test_render_of_a_hand_worked_output(cli, tmp_path):
    """10 Hz, worked by hand: requests (dispatch, service) (0, .26), (.1, .2), (1, 1.04) with 3, 4
    and 2 samples. Ready .26, .46, 2.04; part 1 plays .26–.56 (sample 2.6 → 3), part 2 waits for it
    and plays .56–.96 right after it (samples 6–9), part 3 plays at 2.04 (sample 20.4 → 20) to
    2.24: 22 samples, 9 of sound, 13 of silence before the end."""
    from simulplay.store.store import AudioStore

    store = AudioStore(tmp_path / "store")
    pieces = [np.array([1, 2, 3]), np.array([4, 5, 6, 7]), np.array([8, 9])]
    m = pd.DataFrame({"talk_id": "t1", "system": "A", "condition": "immediate", "seq": [0, 1, 2],
                      "dispatch_s": [0.0, 0.1, 1.0], "service_s": [0.26, 0.2, 1.04], "audio_s": [0.3, 0.4, 0.2],
                      "source_s": 2.0, "audio_key": [store.put_audio(p.astype(np.int16), 10) for p in pieces],
                      "n_samples": [3, 4, 2], "sample_rate": 10, "error": ""})
    m.to_csv(tmp_path / "m.csv", index=False)
    proc = cli("render", tmp_path / "m.csv", "--store", tmp_path / "store", "--out", tmp_path / "out",
               "--format", "wav", "--quiet", check=True)
    samples, rate = sf.read(tmp_path / "out" / "t1__A__immediate.wav", dtype="int16")
    assert rate == 10
    assert samples.tolist() == [0, 0, 0, 1, 2, 3, 4, 5, 6, 7] + [0] * 10 + [8, 9]
    row = pd.read_csv(tmp_path / "out" / "render.csv").iloc[0]
    assert (row["n_samples"], row["n_parts"], row["channels"]) == (22, 3, 1)
    assert row[["duration_s", "first_play_s", "audio_s", "idle_s", "end_s"]].tolist() == [2.2, 0.3, 0.9, 1.3, 2.2]
    assert "table:render" in row["signature"] and "render:nearest-sample" in row["signature"]
    assert "t1__A__immediate.wav" in proc.stdout and "signature: table:render" in proc.stdout
    _, meta = read_table(tmp_path / "out" / "render.parquet")
    assert meta["table"] == "render" and meta["signatures"][0]["format"] == "wav-pcm16"


def near_half(ns: int, rate: int, tol: Fraction) -> bool:
    """Whether ``ns`` lies within ``tol`` samples of a half-sample boundary (or on it)."""
    return abs(Fraction(int(ns), 10**9) * rate % 1 - Fraction(1, 2)) < tol


def test_rendered_files_equal_the_replay_to_the_sample(tmp_path):
    rng = np.random.default_rng(20261201)
    store = DictStore()
    man = validate_manifest(random_manifest(rng, store, 40), "m")
    res = render_outputs(man, store.load, tmp_path / "out", fmt="wav")
    rep = replay(man)
    strict = 0
    for row, key in zip(res.table.to_dict("records"), rep.summary[KEYS].to_dict("records")):
        parts = rep.parts[(rep.parts[KEYS] == pd.Series(key)).all(axis=1)]
        played = parts[parts["play_s"].notna()]
        rate = int(man.loc[(man[KEYS] == pd.Series(key)).all(axis=1), "sample_rate"].iloc[0])
        pieces = stored_pieces(man, played, store)
        if not pieces:
            assert row["file"] == "" and row["n_parts"] == 0
            continue
        got, got_rate = sf.read(tmp_path / "out" / row["file"], dtype="int16")
        want, starts = expected_file(played, pieces, rate)
        assert got_rate == rate and np.array_equal(got, want), row["file"]
        # to the sample: each part's sound starts at the sample nearest its playback start and ends at
        # the sample nearest its playback end; only a time within the durations' nanosecond drift of a
        # half-sample boundary may land on the other neighbour
        tol = Fraction(rate * (len(pieces) + 1), 10**9)
        for p, e, s, piece in zip(to_ns(played["play_s"].to_numpy(float)), to_ns(played["end_s"].to_numpy(float)),
                                  starts, pieces):
            assert abs(s - Fraction(int(p), 10**9) * rate) <= Fraction(1, 2) + tol
            assert nearest(p, rate) == s or near_half(p, rate, tol)
            assert nearest(e, rate) == s + len(piece) or near_half(e, rate, tol)
            strict += not (near_half(p, rate, tol) or near_half(e, rate, tol))
        end = to_ns(float(played["end_s"].iloc[-1]))
        assert len(got) == nearest(end, rate) or near_half(end, rate, tol)
        summary = rep.summary[(rep.summary[KEYS] == pd.Series(key)).all(axis=1)].iloc[0]
        assert round(row["audio_s"] * rate) == sum(map(len, pieces)) and row["n_samples"] == len(got)
        assert abs(row["idle_s"] - summary["idle_s"]) <= 1 / rate  # the replay's idle, to the sample
        assert abs(row["end_s"] - summary["end_s"]) <= 1 / rate
    assert strict > 200  # parts whose boundaries are nowhere near a half sample: exactly the nearest


def test_chunk_release_cuts_requests_at_the_chunk_tables_sample_counts(tmp_path):
    """Hand-worked at 10 Hz: request 0 (6 samples, done at 1.0 s) has chunks of 2 and 4 samples
    ready 0.2 s and 0.9 s after its start at 0; request 1 (3 samples, dispatched 0.5, start 1.0,
    done 2.0) one chunk ready 0.45 s after its start. Chunk release: [1,2] at 0.2 (sample 2),
    [3,4,5,6] at 0.9 (sample 9, playing until 1.3), [7,8,9] at 1.45 (sample 14.5, a tie: 15)."""
    store = DictStore()
    m = pd.DataFrame({"talk_id": "t1", "system": "A", "condition": "immediate", "seq": [0, 1],
                      "dispatch_s": [0.0, 0.5], "service_s": [1.0, 1.0], "audio_s": [0.6, 0.3], "source_s": 3.0,
                      "audio_key": [store.put(np.arange(1, 7), 10), store.put(np.arange(7, 10), 10)],
                      "n_samples": [6, 3], "sample_rate": 10, "error": ""})
    chunks = pd.DataFrame({"talk_id": "t1", "system": "A", "condition": "immediate", "seq": [0, 0, 1],
                           "chunk": [0, 1, 0], "ready_offset_s": [0.2, 0.9, 0.45], "audio_s": [0.2, 0.4, 0.3],
                           "n_samples": [2, 4, 3]})
    res = render_outputs(validate_manifest(m, "m"), store.load, tmp_path / "out", release="chunk", chunks=chunks,
                         fmt="wav")
    got, _ = sf.read(tmp_path / "out" / res.table["file"].iloc[0], dtype="int16")
    assert got.tolist() == [0, 0, 1, 2, 0, 0, 0, 0, 0, 3, 4, 5, 6, 0, 0, 7, 8, 9]
    assert res.signatures[0]["release"] == "chunk"
    with pytest.raises(Exception, match="n_samples"):
        render_outputs(validate_manifest(m, "m"), store.load, tmp_path / "out2", release="chunk",
                       chunks=chunks.drop(columns="n_samples"), fmt="wav")
    assert not (tmp_path / "out2").exists()


def test_stereo_puts_the_source_left_resampled_with_soxr(cli, tmp_path):
    from simulplay.store.store import AudioStore

    rng = np.random.default_rng(5)
    store = AudioStore(tmp_path / "store")
    speech = rng.integers(-9000, 9000, 4000).astype(np.int16)  # 0.5 s at 8 kHz
    m = pd.DataFrame({"talk_id": ["t1", "t2"], "system": "A", "condition": "immediate", "seq": 0,
                      "dispatch_s": [0.25, 2.5], "service_s": 0.0, "audio_s": 0.5, "source_s": [2.0, 2.0],
                      "audio_key": store.put_audio(speech, 8000), "n_samples": 4000, "sample_rate": 8000,
                      "error": ""})
    m.to_csv(tmp_path / "m.csv", index=False)
    (tmp_path / "src").mkdir()
    at16 = rng.integers(-20000, 20000, 32000).astype(np.int16)  # 2 s at 16 kHz: resampled
    at8 = rng.integers(-20000, 20000, 16000).astype(np.int16)  # 2 s at 8 kHz: taken as it is
    sf.write(tmp_path / "src" / "t1.wav", at16, 16000, subtype="PCM_16")
    sf.write(tmp_path / "src" / "t2.flac", at8, 8000, subtype="PCM_16")
    cli("render", tmp_path / "m.csv", "--store", tmp_path / "store", "--out", tmp_path / "out",
        "--source-audio", tmp_path / "src", "--quiet", check=True)
    table = pd.read_csv(tmp_path / "out" / "render.csv").set_index("talk_id")
    one, rate = sf.read(tmp_path / "out" / table.loc["t1", "file"], dtype="int16")
    left = np.clip(np.rint(soxr.resample(at16 / 32768.0, 16000, 8000, quality="HQ") * 32768), -32768, 32767)
    assert rate == 8000 and one.shape == (16000, 2)  # the source (2 s) outlasts the translation (0.75 s)
    assert np.array_equal(one[:, 0], left.astype(np.int16))
    assert np.array_equal(one[:, 1], np.r_[np.zeros(2000), speech, np.zeros(10000)].astype(np.int16))
    two, _ = sf.read(tmp_path / "out" / table.loc["t2", "file"], dtype="int16")
    assert two.shape == (24000, 2)  # the translation ends at 3.0 s
    assert np.array_equal(two[:16000, 0], at8) and not two[16000:, 0].any()
    assert np.array_equal(two[:, 1], np.r_[np.zeros(20000), speech].astype(np.int16))
    assert table.loc["t1", "source_audio"] == "t1.wav" and table.loc["t2", "source_audio_s"] == 2.0
    assert "channels:source-left,translation-right" in table.loc["t1", "signature"]


def test_incomplete_outputs_are_refused_unless_allowed(main, tmp_path):
    from simulplay.store.store import AudioStore

    store = AudioStore(tmp_path / "store")
    key = store.put_audio(np.ones(100, np.int16), 1000)
    m = pd.DataFrame({"talk_id": "t1", "system": ["A", "F"], "condition": "immediate", "seq": 0,
                      "dispatch_s": 0.0, "service_s": 0.1, "audio_s": [0.1, np.nan], "source_s": 1.0,
                      "audio_key": [key, ""], "n_samples": [100, 0], "sample_rate": 1000,
                      "error": ["", "backend crashed"]})
    m.to_csv(tmp_path / "m.csv", index=False)
    args = ("render", tmp_path / "m.csv", "--store", tmp_path / "store", "--quiet")
    proc = main(*args, "--out", tmp_path / "out")
    assert_one_line_error(proc, "1 incomplete output(s)", "system=F", "--allow-incomplete")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.csv", "store"]  # nothing written, nothing left
    proc = main(*args, "--out", tmp_path / "out", "--allow-incomplete", check=True)
    table = pd.read_csv(tmp_path / "out" / "render.csv")
    assert table["system"].tolist() == ["A"] and "excluded:1" in table["signature"][0]
    assert "1 incomplete output(s) left out" in proc.stdout


def test_bad_inputs_are_one_line_errors_before_anything_is_written(main, tmp_path):
    from simulplay.store.store import AudioStore

    store = AudioStore(tmp_path / "store")
    m = pd.DataFrame({"talk_id": ["t1"], "system": "A", "condition": "timer:w=4", "seq": 0, "dispatch_s": 0.0,
                      "service_s": 0.1, "audio_s": 1.0, "source_s": 5.0,
                      "audio_key": store.put_audio(np.ones(100, np.int16), 100), "n_samples": 100,
                      "sample_rate": 100, "error": ""})
    m.to_csv(tmp_path / "m.csv", index=False)
    m.assign(audio_key="0" * 64).to_csv(tmp_path / "lost.csv", index=False)
    m.drop(columns=["audio_key"]).to_csv(tmp_path / "plain.csv", index=False)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("mine")
    (tmp_path / "src").mkdir()
    sf.write(tmp_path / "src" / "t1.wav", np.zeros(800, np.int16), 100)  # 8 s, source_s is 5 s
    base = ("render", tmp_path / "m.csv", "--store", tmp_path / "store", "--quiet")
    for args, fragments in [
        ((*base, "--out", tmp_path / "full"), ["full", "is not an empty folder"]),
        ((*base, "--out", tmp_path / "o", "--talk", "t9"), ["--talk 't9'", "is not a talk", "t1"]),
        ((*base, "--out", tmp_path / "o", "--condition", "punct"), ["is not a condition", "timer:w=4"]),
        ((*base, "--out", tmp_path / "o", "--format", "mp3"), ["--format 'mp3'", "flac or wav"]),
        ((*base, "--out", tmp_path / "o", "--source-audio", tmp_path / "src"), ["t1.wav", "lasts 8.000 s",
                                                                                 "source_s 5"]),
        (("render", tmp_path / "lost.csv", "--store", tmp_path / "store", "--out", tmp_path / "o", "--quiet"),
         ["audio 000000", "is missing", "store verify"]),
        (("render", tmp_path / "plain.csv", "--store", tmp_path / "store", "--out", tmp_path / "o"),
         ["missing column audio_key"]),
    ]:
        assert_one_line_error(main(*args), *fragments)
        assert not (tmp_path / "o").exists()
    assert [p.name for p in (tmp_path / "full").iterdir()] == ["x"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".o.")]  # no temporary folder left
    # --condition takes a RULE string in any spelling: timer:w=4.0 is timer:w=4
    main(*base, "--out", tmp_path / "o", "--condition", "timer:w=4.0", check=True)


def test_talk_ids_never_become_paths(main, tmp_path):
    """A talk id like ../../etc/t1 or /abs names a file inside --out and is looked up inside
    --source-audio: a decoy where the raw id would point is never read."""
    from simulplay.store.store import AudioStore

    root = tmp_path / "a" / "b"
    root.mkdir(parents=True)
    store = AudioStore(root / "store")
    key = store.put_audio(np.ones(50, np.int16), 100)
    talks = ["../../etc/t1", "/abs"]
    m = pd.DataFrame({"talk_id": talks, "system": "A", "condition": "immediate", "seq": 0, "dispatch_s": 0.0,
                      "service_s": 0.0, "audio_s": 0.5, "source_s": 1.0, "audio_key": key, "n_samples": 50,
                      "sample_rate": 100, "error": ""})
    m.to_parquet(root / "m.parquet")
    (root / "src").mkdir()
    (tmp_path / "a" / "etc").mkdir()
    sf.write(tmp_path / "a" / "etc" / "t1.wav", np.zeros(100, np.int16), 100)  # where src/../../etc/t1.wav points
    before = sorted(p for p in tmp_path.rglob("*"))
    proc = main("render", root / "m.parquet", "--store", root / "store", "--out", root / "out", "--quiet",
               "--source-audio", root / "src")
    assert_one_line_error(proc, f"has no {safe_component(talks[0])}.wav")
    main("render", root / "m.parquet", "--store", root / "store", "--out", root / "out", "--quiet", check=True)
    files = sorted(p.relative_to(root / "out").as_posix() for p in (root / "out").rglob("*"))
    assert files == sorted([f"{safe_component(t)}__A__immediate.flac" for t in talks] + ["render.csv",
                                                                                         "render.parquet"])
    assert sorted(p for p in tmp_path.rglob("*") if not p.is_relative_to(root / "out")) == before


def test_safe_names_give_every_row_its_own_stem():
    # safe_component's encoding is tested by hand in tests/test_paths.py
    assert safe_names([["a__b", "c"], ["a", "b__c"], ["a__b__c"]]) == ["a__b__c", "a__b__c-2", "a__b__c-3"]
