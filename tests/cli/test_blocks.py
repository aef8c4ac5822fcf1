"""CosyVoice continuing sessions and the block protocol, on a fake CosyVoice
module with the real bistream generator interface (the real model cannot load here)."""

import sys
import time

import numpy as np
import pandas as pd
import pytest

from simulplay.analysis import Bootstrap
from simulplay.backends import parse_backend
from simulplay.blocks import block_tables, compare_blocks, feed_schedule, run_session, select_blocks
from simulplay.core.errors import IncompleteError, InputError
from simulplay.grouping import parse_rule
from tests.support.checks import wait_until
from tests.support.factories import reference_playback, stream
from tests.support.fake_cosyvoice import make_checkout, make_model_and_prompt

TIMES = [0.0, 0.3, 0.6, 0.9]
TEXTS = ["Guten Morgen", "liebe Freunde.", "Wie geht", "es euch?"]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("cosy")
    checkout = make_checkout(root / "CosyVoice")
    model, wav = make_model_and_prompt(root)
    return checkout, model, wav


def spec(setup, **extra):
    checkout, model, wav = setup
    items = {"checkout": checkout, "model_dir": model, "prompt_wav": wav,
             "prompt_text": "You are a helpful assistant.<|endofprompt|>Hallo.", **extra}
    return "cosyvoice:" + ",".join(f"{k}={v}" for k, v in items.items())


@pytest.fixture(scope="module")
def cosy(setup):
    backend = parse_backend(spec(setup)).create()
    backend.load()
    backend.warmup()
    return backend


def fake_log():
    return sys.modules["cosyvoice.cli.cosyvoice"].LOG


def one_block(times=TIMES, texts=TEXTS):
    s = stream(times, texts, talk_id="t1", system="A", source_s=2.0)
    return select_blocks([s], min_words=8, max_words=100, seed=0)[0]  # the whole stream


def spy_on_feeds(backend, monkeypatch):
    """Wrap each new session's ``feed``: before feeding piece k > 0 it waits (an event, with a
    generous deadline) until the model has received piece k − 1, then records the
    ``perf_counter()`` at which the piece entered the session. A wait that reaches its
    deadline is recorded in ``late`` and the piece is fed anyway (the feeder thread must go
    on for the session to end); the test asserts on it."""
    fed_at, late, real_open = [], [], backend.open_session

    def open_session():
        session, log_size = real_open(), len(fake_log())
        real_feed = session.feed

        def received(k):
            return len(fake_log()) > log_size and len(fake_log()[log_size]["pieces"]) >= k

        def feed(text):
            k = len(fed_at)
            if k:
                try:
                    wait_until(lambda: received(k), f"the model to receive piece {k - 1} before piece {k} is fed",
                               timeout=60)
                except AssertionError as e:
                    late.append(str(e))
            fed_at.append(time.perf_counter())
            real_feed(text)

        session.feed = feed
        return session

    monkeypatch.setattr(backend, "open_session", open_session)
    return fed_at, late


def test_feeds_enter_the_session_at_their_dispatch_times(cosy, monkeypatch):
    block = one_block()
    grouped = parse_rule("timer:w=0.5")
    assert feed_schedule(block, grouped) == [(0.5, "Guten Morgen liebe Freunde."), (0.9, " Wie geht es euch?")]
    fed_at, late = spy_on_feeds(cosy, monkeypatch)
    before = len(fake_log())
    res = run_session(cosy, block, grouped)
    session = fake_log()[before]
    assert res.error == "" and [f["dispatch_s"] for f in res.feeds] == [0.5, 0.9]
    assert all(f["fed_s"] >= f["dispatch_s"] for f in res.feeds)  # never fed before its dispatch time
    # the model pulls each piece from the session as it is fed (the generator is backed by the
    # queue): piece 0 reached it before piece 1 was fed (the spy waited for that), and no piece
    # reached it before it was fed
    assert late == []
    assert len(fed_at) == 2 and all(got >= fed for got, fed in zip(session["times"], fed_at))
    assert "".join(session["pieces"]) == block.stream.joined and session["text_frontend"] is False
    # each chunk arrives at least DELAY (0.05 s) after its feed, in order
    assert [n for _, n in res.chunks] == [240 * 23, 240 * 13]  # 10 ms (240 samples) per letter
    assert all(t - f["fed_s"] >= 0.05 for (t, _), f in zip(res.chunks, res.feeds))
    assert res.chunks[0][0] < res.chunks[1][0]
    pb = res.playback()
    assert pb["b_s"] == pytest.approx(pb["end_s"] - 0.9)
    assert pb["b_s"] == pytest.approx(pb["audio_s"] + pb["idle_s"] - 0.9)


@pytest.mark.slow


def test_state_is_kept_across_feeds_and_reset_between_sessions(cosy):
    block = one_block()
    immediate = run_session(cosy, block, parse_rule("immediate"))
    np.random.uniform(size=10)  # disturb the global generator between sessions
    grouped = run_session(cosy, block, parse_rule("timer:w=0.5"))
    assert len(immediate.feeds) == 4 and len(grouped.feeds) == 2
    # the fake's audio depends on the session's running phase and the seed only: identical samples
    assert np.array_equal(immediate.audio, grouped.audio) and len(immediate.audio) == 240 * 36
    summary, parts, feeds = block_tables([immediate, grouped])
    assert summary["audio_key"].nunique() == 1 and summary["fed_text_sha256"].nunique() == 1
    assert summary["audio_s"].nunique() == 1  # equal durations: ΔB is all idle
    assert len(parts) == 6 and len(feeds) == 6 and parts["n_samples"].sum() == 2 * len(immediate.audio)
    # B from the recorded chunks by the docs/concepts.md#serial-playback recurrence (worked here, not by the engine):
    # C_last − a_last, a_last = 0.9 s. Which session ends later depends on how late each one's
    # chunks came (wall-clock timing), so only each session's own bookkeeping is asserted.
    for res, row in zip((immediate, grouped), summary.itertuples()):
        ref = reference_playback([t for t, _ in res.chunks], [n / res.sample_rate for _, n in res.chunks])
        assert row.b_s == pytest.approx(ref["end"] - 0.9, abs=1e-9) and row.idle_s == pytest.approx(ref["idle"])


def test_a_failing_model_is_a_recorded_session_failure(cosy, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("CUDA out of memory")
        yield  # pragma: no cover

    monkeypatch.setattr(cosy.model, "inference_zero_shot", broken)
    res = run_session(cosy, one_block(), parse_rule("immediate"))
    assert res.error == "RuntimeError: CUDA out of memory" and np.isnan(res.playback()["b_s"])


def test_session_limits_stop_and_record(cosy):
    # audio: the first chunk ("Guten Morgen", 11 letters) holds 0.11 s, beyond a 0.05 s limit
    res = run_session(cosy, one_block(), parse_rule("immediate"), max_audio_s=0.05)
    assert res.error.startswith("SessionLimit: stopped after") and "of audio (limits 180 s, 0.05 s)" in res.error
    assert len(res.chunks) == 1
    # wall time: no chunk can arrive before the model's 0.05 s delay, so 0.01 s is always exceeded
    res = run_session(cosy, one_block(), parse_rule("immediate"), max_wall_s=0.01)
    assert res.error.startswith("SessionLimit: stopped after") and "(limits 0.01 s, 240 s)" in res.error


def test_block_selection_respects_the_word_range_and_the_seed():
    texts = [f"w{i} x" for i in range(30)]  # 2 words per update
    streams = [stream(np.arange(30.0), texts, talk_id=f"t{k}", source_s=40.0) for k in range(3)]
    a = select_blocks(streams, min_words=7, max_words=9, seed=3)
    starts = [b.first for b in a]
    assert starts == [b.first for b in select_blocks(streams, min_words=7, max_words=9, seed=3)]
    assert starts != [b.first for b in select_blocks(streams, min_words=7, max_words=9, seed=4)]
    assert all(b.n_words == 8 and b.last - b.first == 3 for b in a)
    with pytest.raises(InputError, match="talk t0, system A: has no block of 3–3 words"):
        select_blocks(streams, min_words=3, max_words=3, seed=0)


def summary_table(b_ref, b_grp, keys_equal=True):
    rows = []
    for i, (r, g) in enumerate(zip(b_ref, b_grp)):
        for cond, b, key in (("immediate", r, "k"), ("timer:w=4", g, "k" if keys_equal else "other")):
            rows.append({"talk_id": f"t{i}", "system": "A", "block_first_seq": 0, "condition": cond, "b_s": b,
                         "audio_s": 10.0, "idle_s": b - 5.0, "audio_key": f"{key}{i}", "error": ""})
    return pd.DataFrame(rows)


def test_comparison_is_a_paired_source_bootstrap_over_blocks():
    b_ref, b_grp = np.array([1.0, 2.0, 3.0, 4.0]), np.array([2.5, 2.0, 4.0, 3.9])
    boot = Bootstrap(draws=500, seed=7)
    row = compare_blocks(summary_table(b_ref, b_grp), reference="immediate", boot=boot).iloc[0]
    delta = b_grp - b_ref
    idx = np.random.default_rng(7).integers(0, 4, size=(500, 4))
    # the default end convention (simulplay's order:floor((n+1)a)): with ⌊501 · 0.025⌋ = 12, the
    # 12th smallest and the 489th of the 500 resampled means
    means = np.sort(delta[idx].mean(axis=1))
    low, high = means[11], means[488]
    assert row["delta_b_s"] == pytest.approx(delta.mean()) and (row["ci_low_s"], row["ci_high_s"]) == (low, high)
    assert (row["n_later"], row["n_earlier"], row["identical_audio"], row["n_blocks"]) == (2, 1, 4, 4)
    assert row["duration_part_s"] + row["idle_part_s"] == pytest.approx(row["delta_b_s"])


def test_a_failed_session_stops_the_comparison_unless_allowed():
    table = summary_table([1.0, 2.0, 3.0], [2.0, 3.0, 4.0])
    table.loc[1, "error"] = "SessionLimit: stopped"
    with pytest.raises(IncompleteError, match="1 session.*talk_id=t0.*SessionLimit"):
        compare_blocks(table, reference="immediate", boot=Bootstrap(draws=10))
    row = compare_blocks(table, reference="immediate", boot=Bootstrap(draws=10), allow_incomplete=True).iloc[0]
    assert row["n_blocks"] == 2 and row["excluded"] == 1


@pytest.mark.slow


def test_blocks_command_end_to_end(cli, tmp_path, setup):
    trace = tmp_path / "t.csv"
    rows = [{"talk_id": f"t{k}", "system": s, "seq": i, "time_s": 0.3 * i, "text": f"Wort{i} und noch{i}",
             "source_s": 3.0} for k in range(2) for s in ("A", "F") for i in range(6)]
    pd.DataFrame(rows).to_csv(trace, index=False)
    out, comp, parts = tmp_path / "blocks.parquet", tmp_path / "compare.csv", tmp_path / "parts.csv"
    proc = cli("blocks", trace, "--backend", spec(setup), "--rule", "immediate", "--rule", "timer:w=0.5",
               "--min-words", "6", "--max-words", "9", "--out", out, "--compare", comp, "--parts", parts,
               "--store", tmp_path / "store", "--draws", "200")
    assert proc.returncode == 0, proc.stderr
    summary = pd.read_parquet(out)
    assert len(summary) == 8 and (summary["error"] == "").all() and set(summary["n_words"]) == {6}
    compare = pd.read_csv(comp)
    assert list(compare["system"]) == ["A", "F"] and (compare["identical_audio"] == 2).all()
    assert compare["signature"].str.contains("boot_seed:1032026").all()
    # ΔB per system: the mean over its blocks of B(timer:w=0.5) − B(immediate), from the summary
    b = summary.pivot_table(index=["system", "talk_id"], columns="condition", values="b_s")
    want = (b["timer:w=0.5"] - b["immediate"]).groupby("system").mean()
    assert compare["delta_b_s"].to_numpy() == pytest.approx(want.loc[["A", "F"]].to_numpy(), abs=1e-9)
    assert len(list((tmp_path / "store" / "audio").rglob("*.flac"))) == summary["audio_key"].nunique()


@pytest.mark.slow


def test_cosyvoice_import_path_errors_are_one_line(cli, tmp_path, setup):
    _, model, wav = setup
    trace = tmp_path / "t.csv"
    pd.DataFrame([{"talk_id": "t", "system": "A", "seq": 0, "time_s": 0.0, "text": "Hallo Welt", "source_s": 1.0}]
                 ).to_csv(trace, index=False)
    base = ["blocks", trace, "--min-words", "1", "--out", tmp_path / "o.parquet", "--compare", tmp_path / "c.csv"]
    no_package = f"cosyvoice:checkout={tmp_path},model_dir={model},prompt_wav={wav},prompt_text=x"
    # in a fresh process each: a checkout's package, once imported, stays imported in a process
    proc = cli(*base, "--backend", no_package, subprocess=True)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "holds no cosyvoice package (CosyVoice is not on the package registry" in proc.stderr
    broken = make_checkout(tmp_path / "broken", broken=True)
    proc = cli(*base, "--backend", no_package.replace(f"checkout={tmp_path}", f"checkout={broken}"), subprocess=True)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "cannot import cosyvoice.cli.cosyvoice (No module named 'hyperpyyaml_not_installed')" in proc.stderr
    assert not (tmp_path / "o.parquet").exists()


@pytest.mark.slow


def test_request_backends_are_refused_by_blocks_and_sessions_by_serve(cli, tmp_path, setup):
    trace = tmp_path / "t.csv"
    pd.DataFrame([{"talk_id": "t", "system": "A", "seq": 0, "time_s": 0.0, "text": "Hallo Welt", "source_s": 1.0}]
                 ).to_csv(trace, index=False)
    proc = cli("blocks", trace, "--backend", "piper", "--min-words", "1", "--out", tmp_path / "o.parquet",
               "--compare", tmp_path / "c.csv")
    assert proc.returncode == 2 and "backend 'piper' synthesizes requests, not continuing sessions" in proc.stderr
    proc = cli("serve", "--backend", spec(setup), "--port", "0")
    assert proc.returncode == 2 and "backend 'cosyvoice' is a session backend" in proc.stderr
