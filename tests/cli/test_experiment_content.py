"""The experiment's [content] table: validation that names the key, and a real run
writing transcripts.parquet, content.csv and word_timing.csv into the run folder."""

import json

import pandas as pd
import pytest

from simulplay.core.errors import InputError
from simulplay.workflows.experiment import load_experiment
from tests.support.factories import ASR_TALKS as TALKS
from tests.support.factories import PIPER_BACKEND, experiment_toml

EXPERIMENT = experiment_toml(name="content", backend=PIPER_BACKEND, tables={"content": {
    "recognizer": "whisper", "language": "en", "window_s": 15, "pairs": [["immediate", "timer:w=3"]], "timing": True}})


@pytest.fixture
def folder(tmp_path):
    streams = []
    for talk in TALKS:
        streams.append(talk)
        later = [{"time_s": u["time_s"] + 0.5, "text": u["text"]} for u in talk["updates"]]
        streams.append({**talk, "system": "F", "updates": later})
    (tmp_path / "trace.jsonl").write_text("\n".join(json.dumps(s) for s in streams) + "\n")
    return tmp_path


@pytest.mark.parametrize("edit,fragments", [
    (("window_s = 15", "window_s = 0"), ["content.window_s", "window_s must be > 0"]),
    (("window_s = 15", 'window_s = "long"'), ["key 'content.window_s'", "'long' is not a number"]),
    (('language = "en"\n', ""), ["key 'content.language'", "is missing"]),
    (("timing = true", "timing = 1"), ["key 'content.timing'", "1 is not bool"]),
    (("timing = true", "timing = true\nmodel = 'x'"), ["key 'content.model'", "is not a known key"]),
    (('recognizer = "whisper"', 'recognizer = "whisper:model=/no/where"'),
     ["content.recognizer", "model folder /no/where does not exist"]),
    (('"timer:w=3"]]', '"punct"]]'), ["key 'content.pairs'", "'punct:cap=2,min_words=3' is not one of the rules"]),
    (('pairs = [["immediate", "timer:w=3"]]', 'pairs = ["immediate"]'), ["content.pairs", "is not a pair"]),
    (("timing = true", 'timing = true\ntiming_quantile_method = "order:floor(na)+1"'),
     ["key 'content.timing_quantile_method'", "is an order-statistic convention", "a NumPy quantile method"]),
    (("timing = true", "timing = true\ntiming_seed = -1"), ["content.timing_seed", "must be ≥ 0"]),
])
def test_bad_content_tables_name_the_key(folder, edit, fragments):
    old, new = edit
    assert old in EXPERIMENT
    (folder / "exp.toml").write_text(EXPERIMENT.replace(old, new, 1))
    with pytest.raises(InputError) as info:
        load_experiment(folder / "exp.toml")
    message = str(info.value)
    assert "\n" not in message and message.startswith(str(folder / "exp.toml"))
    for fragment in fragments:
        assert fragment in message, message


@pytest.mark.slow


def test_a_language_the_recognizer_cannot_transcribe_stops_the_run_before_synthesis(cli, folder):
    (folder / "exp.toml").write_text(EXPERIMENT.replace('language = "en"', 'language = "de"'))
    proc = cli("run", folder / "exp.toml", "--quiet")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "key 'content.language'" in proc.stderr and "English-only" in proc.stderr
    assert not (folder / "run" / "manifest.parquet").exists()


def test_no_content_table_no_diagnostics(folder):
    (folder / "exp.toml").write_text(EXPERIMENT[:EXPERIMENT.index("[content]")])
    assert load_experiment(folder / "exp.toml").content is None


@pytest.mark.slow
def test_run_writes_transcripts_content_and_word_timing(cli, folder):
    (folder / "exp.toml").write_text(EXPERIMENT)
    proc = cli("run", folder / "exp.toml", "--quiet", check=True)
    assert "Recognized vs intended words" in proc.stdout and "Added delay" in proc.stdout
    out = folder / "run"
    transcripts = pd.read_parquet(out / "transcripts.parquet")
    assert len(transcripts) == 8 and transcripts["complete"].all()
    content = pd.read_csv(out / "content.csv")
    assert len(content) == 2 * 2 * 2 and content["signature"].str.contains("deletions:recognition mismatches").all()
    assert len(pd.read_csv(out / "content.pairs.csv")) == 2 * 2
    timing = pd.read_csv(out / "word_timing.csv")
    assert sorted(timing["system"]) == ["A", "F"] and (timing["condition"] == "timer:w=3").all()
    # word timing keeps its own bootstrap seed and method (the paper's Table 17), not [analysis]'s
    assert (timing["n_talks"] == 2).all() and "boot_seed:20261005|quantile:linear" in timing["signature"][0]
    words = pd.read_parquet(out / "word_timing.words.parquet")
    assert len(words) == 2 * 2 * (22 + 19) and words["common"].any()
