"""Real Piper outputs: `simulplay latency` against SimulEval's own scorers, and
`simulplay export-simuleval` scored by the real `simuleval --score-only`.

SimulEval is driven as in a live evaluation (tests/support/simuleval_drive.py): each audible part's
stored samples arrive at its readiness, computed here from the manifest in Python integers.
"""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import soundfile as sf

from simulplay.analysis.latency_table import LATENCY_COLUMNS, latency_table
from simulplay.core.tables import read_table
from simulplay.manifest import read_chunks, read_manifest
from simulplay.store.store import AudioStore
from tests.support.factories import stream
from tests.support.simuleval_drive import ns, serial_ready, simuleval_instance, simuleval_scores

SIMULEVAL = str(Path(sys.executable).with_name("simuleval"))


@pytest.fixture(scope="module")
def synthesized(piper_runs):
    streams = [stream([0.0, 1.5, 1.6, 4.0], ["Hello there, my friend.", "How are you?", "…", "Fine. Thanks a lot!"],
                      talk_id="t1", system="A", source_s=5.0),
               stream([0.5, 2.0], ["Good morning.", "One, two, three. Four."], talk_id="t1", system="F",
                      source_s=5.0),
               stream([0.2, 0.9], ["Short one.", "And another sentence, rather longer."], talk_id="t2",
                      system="A", source_s=3.0),
               stream([1.0], ["Only this. And that."], talk_id="t2", system="F", source_s=3.0)]
    return piper_runs.run("latency_piper", streams)


def simuleval_expected(man, chunks, store, out_dir, release):
    """SimulEval's scores of each output (plain: dispatch delays; _ca: ready delays), and
    the instances themselves (for their wavs), keyed by (talk, system, condition)."""
    expected, instances = {}, {}
    keys = ["talk_id", "system", "condition"]
    for key, g in man.groupby(keys, sort=False):
        g = g.sort_values("seq")
        dispatch = [ns(x) for x in g["dispatch_s"]]
        starts, ready = serial_ready(dispatch, [ns(x) for x in g["service_s"]])
        zero_starts, _ = serial_ready(dispatch, [0] * len(g))
        audio = [store.load_audio(k)[0] for k in g["audio_key"]]
        if release == "request":
            contents, plain, aware = audio, zero_starts, ready
        else:
            contents, plain, aware = [], [], []
            for seq, start, zero_start, samples in zip(g["seq"], starts, zero_starts, audio):
                c = chunks[(chunks[keys] == pd.Series(dict(zip(keys, key)))).all(axis=1) & (chunks["seq"] == seq)]
                cuts = np.cumsum(c.sort_values("chunk")["n_samples"].to_numpy())
                for offset, piece in zip(c.sort_values("chunk")["ready_offset_s"], np.split(samples, cuts[:-1])):
                    contents.append(piece)
                    plain.append(zero_start)
                    aware.append(start + ns(offset))
        row = {}
        source_ns = ns(g["source_s"].iloc[0])
        floats = [list(c / 32768.0) for c in contents]  # SimulEval writes these back as the same int16
        for suffix, times in (("", plain), ("_ca", aware)):
            folder = out_dir / f"{'_'.join(key)}{suffix}".replace(":", "-").replace("=", "-")
            folder.mkdir(parents=True)
            ins = simuleval_instance(folder, times, floats, 22_050, source_ns)
            row |= {f"{c}{suffix}": v for c, v in simuleval_scores(ins).items()}
            instances[key + (suffix,)] = ins
        expected[key] = row
    return expected, instances


@pytest.mark.parametrize("release", ["request", "chunk"])
@pytest.mark.slow
def test_latency_of_piper_outputs_equals_simuleval(synthesized, tmp_path, release):
    man, _ = read_manifest(synthesized.manifest)
    chunks = read_chunks(synthesized.manifest)
    store = AudioStore.open(synthesized.store, create=False)
    table = latency_table(man, release=release, chunks=chunks if release == "chunk" else None).table
    want, _ = simuleval_expected(man, chunks, store, tmp_path, release)
    assert len(table) == 8
    for row in table.to_dict("records"):
        got = {c: row[c] for c in LATENCY_COLUMNS}
        assert got == want[(row["talk_id"], row["system"], row["condition"])]
    if release == "chunk":  # Piper yields one chunk per sentence: chunk release has more parts
        assert (table["num_chunks"] > latency_table(man).table["num_chunks"]).any()


@pytest.mark.slow


def test_latency_cli_columns_and_signature(cli, synthesized, tmp_path):
    out = tmp_path / "lat.csv"
    proc = cli("latency", synthesized.manifest, "--out", out, check=True)
    assert "8 output(s)" in proc.stdout
    t = pd.read_csv(out)
    assert list(t.columns) == ["talk_id", "system", "condition", "backend", "realization", *LATENCY_COLUMNS,
                               "signature"]
    for part in ("table:latency", "service:zero,_ca=measured", "latency:simuleval-1.1.4/speech-output",
                 "atd_token:300ms", "release:request", "backend:piper:en_US-joe-medium"):
        assert part in t["signature"][0], part
    _, meta = read_table(_parquet(cli, synthesized, tmp_path))
    assert meta["table"] == "latency" and len(meta["row_signature"]) == 8
    bad = cli("latency", synthesized.manifest, "--out", tmp_path / "x.csv", "--release", "sentence")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "expected request or chunk" in bad.stderr
    assert not (tmp_path / "x.csv").exists()


def _parquet(cli, synthesized, tmp_path):
    out = tmp_path / "lat.parquet"
    cli("latency", synthesized.manifest, "--out", out, "--release", "chunk", check=True)
    return out


def score_only(folder, *metrics):
    """The real `simuleval --score-only` CLI: its printed means (3 decimals)."""
    proc = subprocess.run([SIMULEVAL, "--score-only", "--output", str(folder), "--latency-metrics", *metrics],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    header, row = proc.stdout.strip().splitlines()[-2:]
    return dict(zip(header.split(), map(float, row.split()[1:])))


@pytest.mark.slow


def test_export_is_scored_by_simuleval_score_only_as_our_latency_table(cli, synthesized, tmp_path):
    out = tmp_path / "export"
    cli("export-simuleval", synthesized.manifest, "--store", synthesized.store, "--out", out, check=True)
    lat = latency_table(read_manifest(synthesized.manifest)[0]).table
    exports = pd.read_csv(out / "exports.csv")
    assert len(exports) == 4 and set(exports["n_instances"]) == {2}
    assert "delays:ready" in exports["signature"][0] and "table:simuleval-export" in exports["signature"][0]
    for row in exports.head(2).to_dict("records"):  # the real CLI takes seconds per call
        ours = lat[(lat["system"] == row["system"]) & (lat["condition"] == row["condition"])]
        scores = score_only(out / row["folder"], "StartOffset", "EndOffset", "NumChunks")
        assert scores["StartOffset"] == round(ours["start_offset_ms_ca"].mean(), 3)
        assert scores["EndOffset"] == round(ours["end_offset_ms_ca"].mean(), 3)
        assert scores["NumChunks"] == round(ours["num_chunks_ca"].mean(), 3)
        assert row["end_offset_ms"] == ours["end_offset_ms_ca"].mean()


@pytest.mark.slow


def test_exported_logs_and_wavs_are_what_simuleval_writes(cli, synthesized, tmp_path):
    """Each line and wav equals the one SimulEval's own instance writes for the same parts;
    scored as score-only scores a log (LogInstance), StartOffset, EndOffset and NumChunks are
    our values exactly, per talk."""
    from simuleval.evaluator.instance import LogInstance
    from simuleval.evaluator.scorers.latency_scorer import EndOffsetScorer, NumChunksScorer, StartOffsetScorer

    out = tmp_path / "export"
    cli("export-simuleval", synthesized.manifest, "--store", synthesized.store, "--out", out,
        "--release", "chunk", "--delays", "dispatch", check=True)
    man, _ = read_manifest(synthesized.manifest)
    store = AudioStore.open(synthesized.store, create=False)
    _, instances = simuleval_expected(man, read_chunks(synthesized.manifest), store, tmp_path / "se", "chunk")
    lat = latency_table(man, release="chunk", chunks=read_chunks(synthesized.manifest)).table
    rows = pd.read_csv(out / "exports.csv").to_dict("records")
    assert len(rows) == 4  # 2 systems × 2 rules, one folder each
    for row in rows:
        lines = (out / row["folder"] / "instances.log").read_text().splitlines()
        assert len(lines) == 2  # one line per talk
        assert (out / row["folder"] / "config.yaml").read_text() == "source_type: speech\ntarget_type: speech\n"
        for line in lines:
            ours = json.loads(line)
            talk = ours["source"].removesuffix(".wav")
            ins = instances[(talk, row["system"], row["condition"], "")]
            theirs = ins.summarize()
            for k in ("delays", "durations", "prediction_offset", "elapsed", "intervals", "prediction_length",
                      "source_length"):
                assert ours[k] == theirs[k], k
            mine, _ = sf.read(ours["prediction"], dtype="int16")
            simuleval_wav, rate = sf.read(theirs["prediction"], dtype="int16")
            assert rate == 22_050 and np.array_equal(mine, simuleval_wav)
            log = {0: LogInstance(line)}
            want = lat[(lat["talk_id"] == talk) & (lat["system"] == row["system"])
                       & (lat["condition"] == row["condition"])].iloc[0]
            assert StartOffsetScorer()(log) == want["start_offset_ms"]
            assert EndOffsetScorer()(log) == want["end_offset_ms"]
            assert NumChunksScorer()(log) == want["num_chunks"]


def test_export_refuses_a_folder_in_use_and_a_manifest_without_audio(cli, synthesized, tmp_path):
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "keep.txt").write_text("x")
    proc = cli("export-simuleval", synthesized.manifest, "--store", synthesized.store, "--out",
               tmp_path / "used")
    assert proc.returncode == 2 and "not an empty folder" in proc.stderr and proc.stderr.count("\n") == 1
    hand = tmp_path / "hand.csv"
    pd.DataFrame([{"talk_id": "t", "system": "A", "condition": "c", "seq": 0, "dispatch_s": 0, "service_s": 0.1,
                   "audio_s": 0.5, "source_s": 2}]).to_csv(hand, index=False)
    proc = cli("export-simuleval", hand, "--store", synthesized.store, "--out", tmp_path / "new")
    assert proc.returncode == 2 and "missing columns audio_key, n_samples, sample_rate" in proc.stderr
    assert not (tmp_path / "new").exists() and not list(tmp_path.glob(".new.*"))
