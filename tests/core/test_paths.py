"""Talk ids never become paths: the safe file name of a name from data,
and the commands that write files for talks (report, blocks; render uses ``safe_component``)
creating nothing outside their output and store folders for ids like ``../../etc/t1``."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulplay.core.paths import MAX_COMPONENT, child_path, original_name, safe_component
from tests.support.report_runs import make_run

HOSTILE = ["../../etc/t1", "/abs", "..", ".", ".hidden", "a/b", "a\\b", "nul\x00byte", "%41", "A", "a",
           "ünïcode", "space and tab\t", "x" * 1000, "~tilde", "\ud800"]


def test_hand_worked_encodings():
    # by hand: '.' at the start, '/', '%', '\\', ' ' and 'ü' (UTF-8 C3 BC) become %XX
    assert safe_component("../../etc/t1") == "%2E.%2F..%2Fetc%2Ft1"
    assert safe_component("/abs") == "%2Fabs"
    assert safe_component("..") == "%2E."
    assert safe_component("ted_1096_0") == "ted_1096_0"
    assert safe_component("%41") == "%2541"
    assert safe_component("a\\b c") == "a%5Cb%20c"
    assert safe_component("ü") == "%C3%BC"
    assert child_path("/out", "/abs", ".wav") == Path("/out/%2Fabs.wav")


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_name_is_one_harmless_component(name):
    c = safe_component(name)
    assert "/" not in c and "\x00" not in c and "\\" not in c and not c.startswith(".")
    assert c not in (".", "..") and len(c) <= MAX_COMPONENT and c.isascii()
    assert (Path("/out") / c).parent == Path("/out")
    if len(c) < MAX_COMPONENT:
        assert original_name(c) == name


def test_distinct_names_give_distinct_components():
    names = HOSTILE + ["x" * 999, "x" * 1001, "y" * 1000]
    assert len({safe_component(n) for n in names}) == len(set(names))


def test_an_empty_name_is_refused():
    with pytest.raises(ValueError):
        safe_component("")


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=1, max_size=200))
def test_any_name_round_trips_or_is_hashed(name):
    c = safe_component(name)
    assert (Path("/out") / c).parent == Path("/out") and not c.startswith(".") and len(c) <= MAX_COMPONENT
    if "~" in c:  # cut: the id's hash follows the marker
        assert c[-17] == "~" and int(c[-16:], 16) >= 0
    else:
        assert original_name(c) == name


def snapshot(root: Path) -> set[Path]:
    return {p for p in root.rglob("*")}


@pytest.mark.slow


def test_report_with_hostile_talk_ids_writes_only_into_its_folder(cli, tmp_path):
    names = ["../../etc/t1", "/abs", "..", "a/../../b"]
    run = make_run(tmp_path / "deep" / "run", len(names), names=names, draws=50)
    work = tmp_path / "deep" / "work"
    work.mkdir()
    before, abs_before = snapshot(tmp_path), Path("/abs").exists()
    out = work / "report"
    proc = cli("report", run, "--out", out, "--talk", "../../etc/t1", cwd=work)
    assert proc.returncode == 0, proc.stderr
    created = snapshot(tmp_path) - before
    assert created and all(out in p.parents or p == out for p in created), sorted(created - snapshot(out))
    assert Path("/abs").exists() == abs_before
    md = (out / "report.md").read_text()
    assert "../../etc/t1" in md  # the id is shown as it is, only never used as a path


@pytest.mark.slow


def test_blocks_with_hostile_talk_ids_writes_only_its_outputs(cli, tmp_path):
    from tests.support.fake_cosyvoice import make_checkout, make_model_and_prompt

    checkout = make_checkout(tmp_path / "CosyVoice")
    model, wav = make_model_and_prompt(tmp_path)
    spec = (f"cosyvoice:checkout={checkout},model_dir={model},prompt_wav={wav},"
            "prompt_text=You are a helpful assistant.<|endofprompt|>Hallo.")
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    trace = work / "t.csv"
    rows = [{"talk_id": talk, "system": s, "seq": i, "time_s": 0.3 * i, "text": f"Wort{i} und noch{i}",
             "source_s": 3.0} for talk in ("../../etc/t1", "/abs") for s in ("A", "F") for i in range(6)]
    pd.DataFrame(rows).to_csv(trace, index=False)
    before, abs_before = snapshot(tmp_path), Path("/abs").exists()
    outs = [work / "blocks.parquet", work / "compare.csv", work / "parts.csv"]
    proc = cli("blocks", trace, "--backend", spec, "--rule", "immediate", "--rule", "timer:w=0.5", "--min-words", "6",
               "--max-words", "9",
               "--out", outs[0], "--compare", outs[1], "--parts", outs[2], "--store", work / "store", "--draws", "50",
               cwd=work)
    assert proc.returncode == 0, proc.stderr
    created = snapshot(tmp_path) - before
    store = work / "store"
    # Python's own bytecode cache in the imported checkout (where bytecode may be written) is not an output
    pycache = {p for p in created if checkout in p.parents and "__pycache__" in p.relative_to(checkout).parts}
    stray = {p for p in created - pycache if p not in outs and store not in p.parents and p != store}
    assert not stray and Path("/abs").exists() == abs_before, sorted(stray)
    assert set(pd.read_parquet(outs[0])["talk_id"]) == {"../../etc/t1", "/abs"}


@pytest.mark.slow


def test_a_wav_name_climbing_out_of_wavs_is_looked_up_by_its_base_name(cli, tmp_path):
    """simulstream's wav_name '../../secret/t1.wav' with --wavs DIR reads DIR/t1.wav only."""
    import numpy as np
    import soundfile as sf

    wavs, secret = tmp_path / "w" / "wavs", tmp_path / "secret"
    wavs.mkdir(parents=True)
    secret.mkdir()
    sf.write(secret / "t1.wav", np.zeros(16000 * 9, np.int16), 16000)  # 9 s: must not be read
    log = tmp_path / "w" / "log.jsonl"
    log.write_text('{"id": 0, "metadata": {"wav_name": "../../secret/t1.wav"}}\n'
                   '{"id": 0, "total_audio_processed": 1.0, "computation_time": 0.2, '
                   '"generated_tokens": ["\\u2581hallo"], "deleted_tokens": []}\n', encoding="utf-8")
    proc = cli("import-simulstream", log, "--system", "A", "--wavs", wavs, "--out", tmp_path / "t.csv")
    assert proc.returncode == 2 and f"no wav at {wavs / 't1.wav'}" in proc.stderr, proc.stderr
    sf.write(wavs / "t1.wav", np.zeros(16000 * 2, np.int16), 16000)
    proc = cli("import-simulstream", log, "--system", "A", "--wavs", wavs, "--out", tmp_path / "t.csv")
    assert proc.returncode == 0, proc.stderr
    assert pd.read_csv(tmp_path / "t.csv")["source_s"].tolist() == [2.0]
    assert os.path.exists(secret / "t1.wav")
