"""Real recognition (the bundled tiny.en Whisper on Piper audio, English): error rates,
edit identities, the window split at a forced capacity, a dropped request, failed
windows failing closed, word timing, and the commands."""

import json

import numpy as np
import pandas as pd
import pytest

from simulplay.analysis import Bootstrap
from simulplay.analysis.content import edit_counts, score_content, tokens
from simulplay.analysis.wordtiming import word_timing
from simulplay.backends import parse_backend
from simulplay.core.errors import IncompleteError
from simulplay.core.tables import write_table
from simulplay.grouping import parse_rule
from simulplay.manifest import read_manifest
from simulplay.recognizers import parse_recognizer
from simulplay.recognizers.base import SAMPLE_RATE, to_16k
from simulplay.recognizers.whisper import decoder_capacity
from simulplay.recognizers.windows import WindowRule, transcribe_waveform
from simulplay.sim import replay
from simulplay.store.store import AudioStore
from simulplay.synthesis.run import synthesize_to_manifest
from simulplay.traces import read_traces, streams_from_frame
from simulplay.workflows.transcripts import transcribe_manifest
from tests.support.factories import ASR_TALKS as TALKS

RULES = ["immediate", "timer:w=3"]

# every test shares a Piper synthesis and Whisper transcripts (about 2 min on 2 cores)
pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def run(tmp_path_factory):
    """One Piper synthesis shared by every test here: 2 talks × 2 conditions."""
    root = tmp_path_factory.mktemp("asr")
    trace = root / "trace.jsonl"
    trace.write_text("\n".join(json.dumps(t) for t in TALKS) + "\n")
    store = AudioStore(root / "store")
    synthesize_to_manifest(streams_from_frame(read_traces([trace])), [parse_rule(r) for r in RULES],
                           parse_backend("piper:intra_op_threads=1"), store, root / "m.parquet")
    manifest, meta = read_manifest(root / "m.parquet")
    return {"root": root, "trace": trace, "store": store, "manifest": manifest, "meta": meta}


@pytest.fixture(scope="session")
def whisper():
    rec = parse_recognizer("whisper").create()
    rec.load()
    return rec


@pytest.fixture(scope="session")
def transcripts(run, whisper):
    return transcribe_manifest(run["manifest"], run["store"], whisper, language="en", rule=WindowRule(15.0),
                               upstream=run["meta"]["signature"])


def compact(run, talk="t1", condition="immediate"):
    m = run["manifest"]
    reqs = m[(m["talk_id"] == talk) & (m["condition"] == condition)]
    audio = np.concatenate([run["store"].load_audio(k)[0] for k in reqs["audio_key"] if k])
    return to_16k(audio, int(reqs["sample_rate"].iloc[0]))


def test_sentences_are_recognized_with_a_low_error_rate(transcripts):
    t = transcripts.table
    assert len(t) == 4 and t["complete"].all() and (t["n_windows"] == 1).all()
    assert "mountains in the north" in t.loc[(t["talk_id"] == "t1") & (t["condition"] == "immediate"),
                                             "recognized"].iloc[0].lower()
    res = score_content(t, transcripts.signatures)
    per = res.per_output.set_index("normalization")
    # Piper's noise cannot be seeded, so the audio (and a word or two) varies between runs
    assert (per.loc["normalized", "error_rate_pct"] < 25).all() and per.loc["normalized", "error_rate_pct"].mean() < 12
    assert (per.loc["punct", "error_rate_pct"] < 35).all(), per
    sig = transcripts.signatures[0]
    assert sig["recognizer"].startswith("faster-whisper@1.2") and "tiny.en" in sig["recognizer"]
    assert sig["language"] == "en" and sig["window"] == "15s,halves,quarters"
    assert transcripts.meta["identity"]["model_sha256"] and transcripts.meta["identity"]["beam_size"] == 5


def test_edit_counts_add_up_and_the_rate_is_s_plus_d_plus_i_over_n(transcripts):
    assert len(transcripts.table) > 0
    for r in transcripts.table.to_dict("records"):
        for norm in ("punct", "normalized"):
            ref, hyp = tokens(r["intended"], norm), tokens(r["recognized"], norm)
            c = edit_counts(ref, hyp)
            s, d, i, h, n = (c["substitutions"], c["deletion_mismatches"], c["insertions"], c["hits"],
                             c["intended_words"])
            assert n == len(ref) == h + s + d and c["recognized_words"] == len(hyp) == h + s + i
            assert c["error_rate_pct"] == pytest.approx(100 * (s + d + i) / n)


def test_words_carry_compact_times_inside_their_piece(transcripts):
    r = transcripts.table.iloc[0]
    assert len(r["word"]) == len(r["word_start_s"]) == len(r["word_end_s"]) > 10
    assert np.all(np.diff(r["word_end_s"]) >= 0) and r["word_end_s"][-1] <= r["piece_end_s"][-1] + 1e-9
    assert r["audio_s"] == pytest.approx(r["request_n_samples"].sum() / r["sample_rate"])


def test_capacity_rule_matches_ctranslate2(whisper):
    """decoder_capacity against what the library generates with end-of-text suppressed."""
    from faster_whisper.audio import pad_or_trim

    m = whisper._model
    enc = m.encode(pad_or_trim(m.feature_extractor(np.zeros(SAMPLE_RATE, np.float32))))
    sot, no_ts = m.hf_tokenizer.token_to_id("<|startoftranscript|>"), m.hf_tokenizer.token_to_id("<|notimestamps|>")
    eot = m.hf_tokenizer.token_to_id("<|endoftext|>")
    for prompt in ([sot], [sot, no_ts]):
        for max_length in (9, 20, 33):
            got = m.model.generate(enc, [prompt], beam_size=1, max_length=max_length, suppress_tokens=[-1, eot])[0]
            assert len(got.sequences_ids[0]) == decoder_capacity(prompt, max_length, sot, no_ts), (prompt, max_length)


def test_a_window_over_the_forced_capacity_is_split_into_halves(run):
    """Greedy decoding, so that a lower limit cuts the same token sequence and nothing else."""
    audio = compact(run)
    n, mid = len(audio), len(audio) // 2
    greedy = parse_recognizer("whisper:beam_size=1").create()
    whole, first, second = (greedy.decode(x, "en") for x in (audio, audio[:mid], audio[mid:]))
    assert whole.tokens > max(first.tokens, second.tokens) and not whole.exceeded
    capacity = max(first.tokens, second.tokens) + 1  # the whole window exceeds it, its halves do not
    capped = parse_recognizer(f"whisper:beam_size=1,max_new_tokens={2 * capacity - 1}").create()
    capped.load()
    assert capped.capacity([50257]) == capacity  # tiny.en's prompt is <|startoftranscript|> alone
    pieces = transcribe_waveform(capped, audio, "en", WindowRule(window_s=30.0))
    assert [(p.window, p.level, p.start, p.end, p.error) for p in pieces] == [(0, 1, 0, mid, ""), (0, 1, mid, n, "")]
    assert all(0 < p.tokens < capacity for p in pieces)
    assert pieces[1].words[0].start_s >= mid / SAMPLE_RATE  # the half's offset is added


@pytest.fixture(scope="module")
def failed(run):
    """Every decode hits a capacity of one token: quarters fail, every output is incomplete."""
    rec = parse_recognizer("whisper:max_new_tokens=2").create()
    m = run["manifest"]
    one = m[(m["talk_id"] == "t2") & (m["condition"] == "immediate")]
    return transcribe_manifest(one, run["store"], rec, language="en", rule=WindowRule(15.0),
                               upstream=run["meta"]["signature"])


def test_failed_windows_are_recorded_and_fail_closed(failed, transcripts, run, cli):
    row = failed.table.iloc[0]
    assert not row["complete"] and row["n_failed_windows"] == 1 and row["recognized"] == ""
    assert list(row["piece_level"]) == [2, 2, 2, 2] and all("decoding capacity" in e for e in row["piece_error"])
    assert failed.failed_outputs and "talk_id=t2" in failed.failed_outputs[0]
    good = transcripts.table
    mixed = pd.concat([good[~((good["talk_id"] == "t2") & (good["condition"] == "immediate"))], failed.table],
                      ignore_index=True)
    sigs = [transcripts.signatures[0]] * len(mixed)
    with pytest.raises(IncompleteError, match="talk_id=t2.*condition=immediate.*decoding capacity"):
        score_content(mixed, sigs)
    res = score_content(mixed, sigs, pairs=[("immediate", "timer:w=3")], allow_incomplete=True)
    assert res.table_signatures[0]["excluded"] == 1 and set(res.pairs["n_talks"]) == {1}
    path = run["root"] / "mixed.parquet"
    write_table(mixed, path, sigs, kind="transcripts")
    proc = cli("content", path, "--out", run["root"] / "c.csv")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "incomplete transcript" in proc.stderr and not (run["root"] / "c.csv").exists()
    ok = cli("content", path, "--out", run["root"] / "c.csv", "--allow-incomplete", check=True)
    assert "excluded 1 incomplete output" in ok.stdout
    assert "excluded:1" in pd.read_csv(run["root"] / "c.csv")["signature"][0]


def test_a_deliberately_dropped_request_raises_the_deletion_count(run, whisper, transcripts):
    m = run["manifest"]
    out = m[(m["talk_id"] == "t1") & (m["condition"] == "immediate")].copy()
    dropped = out["text"] == "and mountains in the north."
    assert dropped.sum() == 1
    out.loc[dropped, ["audio_key", "n_samples", "audio_s"]] = ["", 0, 0.0]  # its audio never reaches the listener
    out["condition"] = "dropped"
    res = transcribe_manifest(out, run["store"], whisper, language="en", rule=WindowRule(15.0))
    row = res.table.iloc[0]
    full = transcripts.table[(transcripts.table["talk_id"] == "t1")
                             & (transcripts.table["condition"] == "immediate")].iloc[0]
    assert row["intended"] == full["intended"] and "mountains" not in row["recognized"].lower()
    before = edit_counts(tokens(full["intended"], "normalized"), tokens(full["recognized"], "normalized"))
    after = edit_counts(tokens(row["intended"], "normalized"), tokens(row["recognized"], "normalized"))
    assert after["deletion_mismatches"] >= before["deletion_mismatches"] + 4  # 5 words were dropped


def test_word_timing_on_real_recognition(run, transcripts):
    parts = replay(run["manifest"]).parts
    streams = streams_from_frame(read_traces([run["trace"]]))
    res = word_timing(transcripts.table, transcripts.signatures, parts, streams, reference="immediate",
                      boot=Bootstrap(draws=200, seed=0, method="linear"))
    acc = res.words[res.words["status"] == "accepted"]
    assert len(acc) >= 0.8 * len(res.words)
    assert (acc["added_delay_s"] > 0).all()  # a word plays after its text became available
    row = res.table.iloc[0]
    assert row["condition"] == "timer:w=3" and row["n_talks"] == 2 and row["n_common_words"] >= 30
    assert row["delta_median_s"] > 0 and row["n_lower_median"] == 0  # waiting for the timer delays words
    assert res.table_signatures[0]["draws"] == 200 and res.table_signatures[0]["release"] == "request"


@pytest.mark.slow
def test_commands_asr_content_wordtiming(run, cli):
    root = run["root"]
    proc = cli("asr", root / "m.parquet", "--store", root / "store", "--language", "en", "--out",
               root / "t.parquet", "--quiet", check=True)
    assert "transcribed 4 output(s), 4 window(s)" in proc.stdout
    cli("content", root / "t.parquet", "--out", root / "content.csv", "--pairs", "immediate,timer:w=3",
        "--per-talk", root / "content_per.csv", check=True)
    table = pd.read_csv(root / "content.csv")
    assert set(table["normalization"]) == {"punct", "normalized"} and "deletion_mismatches" in table
    assert table["signature"].str.contains("recognizer:faster-whisper@").all()
    pairs = pd.read_csv(root / "content.pairs.csv")
    assert len(pairs) == 2 and set(pairs["from_condition"]) == {"immediate"}
    cli("wordtiming", root / "t.parquet", "--manifest", root / "m.parquet", "--trace", run["trace"],
        "--reference", "immediate", "--out", root / "wt.csv", "--words", root / "words.parquet",
        "--draws", "100", check=True)
    wt = pd.read_csv(root / "wt.csv")
    # word timing's own defaults (the paper's Table 17): seed 20261005, NumPy's linear quantiles
    assert wt["condition"].tolist() == ["timer:w=3"] and "boot_seed:20261005|quantile:linear" in wt["signature"][0]
    assert len(pd.read_parquet(root / "words.parquet")) == 2 * (22 + 19)


def test_asr_refuses_a_language_the_model_cannot_transcribe(run, cli):
    out = run["root"] / "de.parquet"
    proc = cli("asr", run["root"] / "m.parquet", "--store", run["root"] / "store", "--language", "de",
               "--out", out)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "English-only" in proc.stderr and "'de'" in proc.stderr and not out.exists()


@pytest.mark.parametrize("args,fragment", [
    (["--recognizer", "qwen3-asr:model=/no/such/qwen"], "qwen3-asr model folder /no/such/qwen does not exist"),
    (["--recognizer", "qwen3-asr"], "qwen3-asr needs model=PATH"),
    (["--recognizer", "whisper:model=/no/such/ct2"], "model folder /no/such/ct2 does not exist"),
    (["--aligner", "/no/such/aligner"], "Qwen3-ForcedAligner model folder /no/such/aligner does not exist"),
    (["--recognizer", "vosk"], "unknown recognizer 'vosk'"),
    (["--window-s", "0"], "window_s must be > 0"),
])
def test_bad_recognizer_settings_are_one_line_errors(run, cli, args, fragment):
    out = run["root"] / "bad.parquet"
    proc = cli("asr", run["root"] / "m.parquet", "--store", run["root"] / "store", "--language", "en",
               "--out", out, *args)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert fragment in proc.stderr and "Traceback" not in proc.stderr and not out.exists()
