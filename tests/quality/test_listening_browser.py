"""The listening test end to end on real Piper audio: `simulplay listening-test` writes the page,
real headless Chromium (Debian's `chromium`, driven by playwright) opens it from file:// with
every non-file request aborted and recorded, plays both sides of every pair, rates them, sees no
condition name until the last rating, downloads the CSV; `simulplay listening-results` turns it
into the table, checked against the ratings given here. The excerpts themselves are checked
against `simulplay render`'s files and `simulplay replay --parts`: the same samples, the same
words under both conditions."""

from __future__ import annotations

import base64
import io
import json
import re
import shutil

import numpy as np
import pandas as pd
import pytest
import soundfile as sf
from playwright.sync_api import sync_playwright

from simulplay.core.tables import read_table
from simulplay.traces.model import join_texts
from tests.support.factories import stream

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]
CONDITIONS = ("immediate", "timer:w=2", "offline")
SIZE = {"e01": 2, "e02": 1, "e03": 0}  # how strongly the rater prefers timer:w=2 on each excerpt
RANK = {"offline": 2, "timer:w=2": 1, "immediate": 0}

pytestmark = pytest.mark.slow  # real Piper (shared session runs), subprocesses, one headless Chromium


@pytest.fixture(scope="module")
def made(piper_runs, tmp_path_factory):
    from tests.support.cli import run_cli

    streams = [stream([0.0, 0.8, 1.6, 2.4, 3.2], ["The city built a crossing", "near the school,",
                                                  "and the children walk", "to class on their own.",
                                                  "Everyone is happy."], talk_id="t1", source_s=6.0),
               stream([0.2, 1.0, 1.8, 2.6], ["Last winter the river", "froze over for the first time",
                                             "in a decade, and the town", "went skating on it."],
                      talk_id="t2", source_s=6.0)]
    run = piper_runs.run("listening", streams)
    d = tmp_path_factory.mktemp("listening")
    run_cli("listening-test", run.manifest, "--store", run.store, "--compare", "immediate,timer:w=2", "--excerpts",
            "3", "--excerpt-s", "4", "--seed", "5", "--reference", "--out", d / "page", "--quiet", check=True)
    return run, d / "page", json.loads((d / "page" / "listening-key.json").read_text())


def stimuli(page) -> dict[str, np.ndarray]:
    """The page's audio: each stimulus's FLAC decoded from data/test.js."""
    text = (page / "data" / "test.js").read_text()
    data = json.loads(text[text.index("{"):text.rindex("}") + 1])
    out = {}
    for sid, url in data["audio"].items():
        samples, _ = sf.read(io.BytesIO(base64.b64decode(url.split(",", 1)[1])), dtype="int16")
        out[sid] = samples
    return out


def test_excerpts_are_renders_samples_and_the_same_words(made, cli, tmp_path):
    run, page, key = made
    cli("render", run.manifest, "--store", run.store, "--out", tmp_path / "r", "--format", "wav", check=True)
    cli("replay", run.manifest, "--out", tmp_path / "s.parquet", "--parts", tmp_path / "p.parquet", check=True)
    files, _ = read_table(tmp_path / "r" / "render.parquet")
    parts, _ = read_table(tmp_path / "p.parquet")
    manifest, _ = read_table(run.manifest)
    audio = stimuli(page)
    assert len(key["excerpts"]) == 3 and len(audio) == 9
    for ex in key["excerpts"]:
        for cond in ("immediate", "timer:w=2"):
            st = ex["stimuli"][cond]
            row = files[(files["talk_id"] == ex["talk_id"]) & (files["condition"] == cond)].iloc[0]
            whole, rate = sf.read(tmp_path / "r" / row["file"], dtype="int16")
            a, b = round(st["start_s"] * rate), round(st["end_s"] * rate)
            assert np.array_equal(audio[st["id"]], whole[a:b])
            # the requests playing inside the excerpt say exactly its words
            p = parts[(parts["talk_id"] == ex["talk_id"]) & (parts["condition"] == cond)]
            half = 0.5 / rate  # a part starts at the sample nearest its playback start
            inside = p[(p["play_s"] >= st["start_s"] - half) & (p["end_s"] <= st["end_s"] + half)]
            m = manifest[(manifest["talk_id"] == ex["talk_id"]) & (manifest["condition"] == cond)]
            m = m[m["seq"].isin(inside["seq"])].sort_values("seq")
            assert join_texts(m["text"].tolist(), m["glue"].tolist()) == ex["words"]
        ref = audio[ex["stimuli"]["offline"]["id"]]
        assert len(ref) / 22050 == pytest.approx(ex["stimuli"]["offline"]["duration_s"]) and np.abs(ref).max() > 1000


def rating_for(trial: dict) -> int:
    """The rating this test gives (B − A in rank, scaled by the excerpt's size, at most ±2)."""
    diff = RANK[trial["condition_b"]] - RANK[trial["condition_a"]]
    return int(np.clip(diff * max(SIZE[trial["excerpt"]], 1), -2, 2)) if diff else 0


@pytest.fixture(scope="module")
def rated(made, tmp_path_factory):
    _, page, key = made
    seen = {"console": [], "errors": [], "blocked": [], "requests": []}
    out = tmp_path_factory.mktemp("rated")
    with sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(str(out / "profile"), executable_path=CHROMIUM, headless=True,
                                                   args=FLAGS, offline=True, accept_downloads=True)
        try:
            def intercept(route):  # nothing may leave the folder: anything else is recorded and aborted
                if route.request.url.startswith(("file:", "blob:", "data:")):
                    route.continue_()
                else:
                    seen["blocked"].append(route.request.url)
                    route.abort()

            ctx.route("**/*", intercept)
            tab = ctx.new_page()
            tab.on("request", lambda r: seen["requests"].append(r.url))
            tab.on("console", lambda m: seen["console"].append((m.type, m.text)))
            tab.on("pageerror", lambda e: seen["errors"].append(str(e)))
            tab.goto((page / "index.html").as_uri())
            tab.wait_for_selector("body[data-state=ready]")
            tab.fill("#rater", "ann")
            tab.click("#begin")
            blind = []
            for t in key["trials"]:
                tab.wait_for_selector(f"body[data-trial='{t['trial']}']")
                blind.append(tab.content() + tab.inner_text("body"))
                assert tab.is_disabled("#next")
                tab.click("#play-a")
                tab.wait_for_selector("body[data-played-a='1']")
                tab.click("#play-b")
                tab.wait_for_selector("body[data-played-b='1']")
                assert tab.is_disabled("#next")  # played both, not rated yet
                tab.check(f"input[name=rating][value='{rating_for(t)}']")
                tab.click("#next")
            tab.wait_for_selector("body[data-state=done]")
            revealed = tab.inner_text("#unblinded")
            with tab.expect_download() as dl:
                tab.click("#export")
            dl.value.save_as(out / "ann.csv")
        finally:
            ctx.close()
    return seen, blind, revealed, out / "ann.csv"


def test_the_page_runs_offline_blind_and_exports_every_rating(made, rated):
    _, page, key = made
    seen, blind, revealed, csv = rated
    assert seen["blocked"] == [] and seen["errors"] == []
    assert [c for c in seen["console"] if c[0] in ("error", "warning")] == []
    assert all(u.startswith(("file:", "data:", "blob:")) for u in seen["requests"]) and seen["requests"]
    for html in blind:  # no condition name in the page or its text before the last rating
        for name in CONDITIONS:
            assert not re.search(rf"\b{re.escape(name)}\b", html), name
    for name in CONDITIONS:
        assert name in revealed
    got = pd.read_csv(csv, dtype={"rating": int})
    assert len(got) == len(key["trials"]) == 11 and (got["test_id"] == key["test_id"]).all()
    want = pd.DataFrame(key["trials"])
    assert got["condition_a"].tolist() == want["condition_a"].tolist()
    assert got["rating"].tolist() == [rating_for(t) for t in key["trials"]]
    assert (got["plays_a"] >= 1).all() and (got["plays_b"] >= 1).all() and (got["rater"] == "ann").all()


def test_results_of_the_export(made, rated, cli, tmp_path):
    _, page, key = made
    csv = rated[3]
    cli("listening-results", csv, "--key", page / "listening-key.json", "--out", tmp_path / "res.parquet",
        "--draws", "500", check=True)
    res, meta = read_table(tmp_path / "res.parquet")
    res = res.set_index(["condition", "versus"])
    # timer:w=2 over immediate: +2, +1, +1 on e01, e02, e03 (size 0 still prefers by one step)
    row = res.loc[("timer:w=2", "immediate")]
    assert row["mean"] == pytest.approx(4 / 3) and row["n_prefer"] == 3 and row["n_ratings"] == 3
    assert row["ci_low"] == 1 and row["ci_high"] == 2
    assert res.loc[("immediate", "offline"), "mean"] == pytest.approx(-(2 + 2 + 2) / 3)
    assert res.loc[("timer:w=2", "offline"), "mean"] == pytest.approx(-(2 + 1 + 1) / 3)
    raters, _ = read_table(tmp_path / "res.raters.parquet")
    assert raters.set_index("rater").loc["ann", "n_repeats"] == 2
    assert raters.set_index("rater").loc["ann", "share_same"] == 1
    assert meta["signatures"][0]["seed"] == 5 and meta["signatures"][0]["draws"] == 500
