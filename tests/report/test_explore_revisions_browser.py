"""The explorer's revision lane in headless Chromium: under each lane of a translator that
revises, its hypothesis over time (the final text where each update wrote it, each span a
later update took back struck through until then) and the commits of the lane's policy with
the requests they became, worked out by hand on the stream of the worked example; an
append-only translator has no such lane."""

from __future__ import annotations

import json

import pytest

from simulplay.workflows.experiment import experiment_from_dict
from simulplay.workflows.pipeline import run_experiment
from tests.grouping.test_commit_factor import REVISING
from tests.report.test_explore_browser import Browser, hover_tip, open_talk
from tests.support import fakes  # noqa: F401  (registers the fake backend)

pytestmark = pytest.mark.slow  # a fake-backend run and one headless Chromium

STABLE = "stable:k=2+immediate"


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    folder = tmp_path_factory.mktemp("explore-rev")
    (folder / "t.jsonl").write_text("".join(json.dumps(s) + "\n" for s in REVISING), encoding="utf-8")
    exp = experiment_from_dict({
        "traces": ["t.jsonl"], "a": "A", "f": "F", "rules": ["immediate"], "commit": ["eager", "stable:k=2"],
        "reference": "immediate", "out": "run", "backend": {"name": "fake-test"},
        "analysis": {"draws": 50, "seed": 0}}, folder / "exp.toml")
    run_experiment(exp)
    browser = Browser(tmp_path_factory.mktemp("profile"))
    page = browser.open(exp.out / "explore" / "index.html")
    open_talk(page, "t1", STABLE)
    yield browser, page
    page.close()
    browser.close()


def drawn(page) -> dict:
    return page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('g.hyp-lane')].map(g => [
        g.dataset.system + '|' + g.dataset.condition, {
          kept: [...g.querySelectorAll('rect.span.kept')].map(e => [Number(e.dataset.t0), e.dataset.text]),
          retracted: [...g.querySelectorAll('rect.span.retracted')].map(e => [Number(e.dataset.t0),
                                                                              Number(e.dataset.t1), e.dataset.text]),
          struck: [...g.querySelectorAll('text.struck')].map(e => e.textContent),
          commits: [...g.querySelectorAll('rect.commit')].map(e => [Number(e.dataset.t), e.dataset.text,
                                                                    e.dataset.req])}]))""")


def test_the_hypothesis_its_retractions_and_the_commits_with_their_requests(page):
    browser, p = page
    lanes = drawn(p)
    assert set(lanes) == {"A|immediate", f"A|{STABLE}"}  # F never revises: no revision lane
    for lane in lanes.values():
        # 1 s "Das ist gut." · 2 s ", weil" glued, retracting "." · 3 s retracts ", weil" · 4 s "und"
        assert lane["kept"] == [[1, "Das ist gut"], [4, "und"]]
        assert lane["retracted"] == [[1, 2, "."], [2, 3, ", weil"]]
        assert lane["struck"] == [".", ", weil"]
    # eager speaks each update as it comes, one request each under immediate
    assert lanes["A|immediate"]["commits"] == [[1, "Das ist gut.", "0"], [2, ", weil", "1"], [4, "und", "2"]]
    # stable:k=2 at 2 s: H1 and H2 agree on "Das ist gut", cut back to its last word boundary: "Das ist";
    # at 3 s and 4 s the agreement ends in the same word; the stream's end commits "gut und" at 4 s
    assert lanes[f"A|{STABLE}"]["commits"] == [[2, "Das ist", "0"], [4, "gut und", "1"]]
    tip = hover_tip(p, f'g.hyp-lane[data-condition="{STABLE}"] rect.commit[data-t="4"]')
    assert tip == f"commit at 4.000000 s (A · {STABLE})\ngut und\n→ request seq 1"
    tip = hover_tip(p, f'g.hyp-lane[data-condition="{STABLE}"] rect.retracted[data-t1="3"]')
    assert tip == "written at 2.000000 s, retracted at 3.000000 s\n" + "".join(c + "\u0336" for c in ", weil")
    assert browser.seen["errors"] == [] and browser.seen["console"] == [] and browser.seen["blocked"] == []
