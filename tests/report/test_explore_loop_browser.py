"""The explorer's closed-loop view in headless Chromium: a closed-loop output's lane draws
the queued audio q(t) = max(0, C_k − t) (k the last request ready by t) with corners worked
out by hand, and each of its requests names its trigger and what the policy saw (queued
audio, requests in flight); open-loop lanes have neither."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from simulplay.report.explore import build_explorer, write_explorer
from tests.report.test_explore_browser import Browser, hover_tip, open_talk
from tests.report.test_report_loops import BACKLOG, plan_manifest
from tests.support.report_runs import make_run

pytestmark = pytest.mark.slow  # one headless Chromium


@pytest.fixture(scope="module")
def loop_page(tmp_path_factory):
    root = tmp_path_factory.mktemp("explore-loop")
    man = plan_manifest()
    closed = man["condition"] == BACKLOG
    # what the policy saw at each dispatch: every earlier part had ended (q = 0), nothing in flight
    man = man.assign(queued_s=np.where(closed, 0.0, np.nan),
                     in_flight=pd.array([0 if c else None for c in closed], dtype="Int64"))
    folder = make_run(root / "run", 2, draws=50, traces=False, manifest=man, rules=["immediate", "backlog"])
    write_explorer(build_explorer(folder), folder / "explore")
    browser = Browser(tmp_path_factory.mktemp("profile"))
    yield browser, folder / "explore" / "index.html"
    browser.close()


def queued(page) -> dict:
    return page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('g.lane')].map(g => {
        const q = g.querySelector('polyline.queued');
        return [g.dataset.system + '|' + g.dataset.condition, q ? [q.dataset.points, Number(q.dataset.max)] : null];
    }))""")


def test_a_closed_loop_lane_draws_q_of_t_and_its_requests_say_what_the_policy_saw(loop_page):
    browser, index = loop_page
    page = browser.open(index)
    open_talk(page, "t1", BACKLOG)
    # A under backlog: parts ready 0 (plays 0–1) and 1 (plays 1–3): q jumps to 1 at 0, falls to 0 at 1,
    # jumps to 2 at 1 and falls to 0 at 3. F: one 4 s part ready at 0.
    assert queued(page) == {"A|immediate": None, "F|immediate": None,
                            f"A|{BACKLOG}": ["0,0 0,1 1,0 1,0 1,2 3,0", 2],
                            f"F|{BACKLOG}": ["0,0 0,4 4,0", 4]}
    tip = hover_tip(page, f'g.lane[data-system="A"][data-condition="{BACKLOG}"] rect.req[data-seq="1"]')
    assert "trigger backlog" in tip and "the policy saw at dispatch: queued audio 0.000000 s · in flight 0" in tip
    tip = hover_tip(page, 'g.lane[data-system="A"][data-condition="immediate"] rect.req[data-seq="1"]')
    assert "trigger immediate" in tip and "policy saw" not in tip
    open_talk(page, "t2", BACKLOG)
    # F under backlog in t2: parts ready 0 (plays 0–2) and 3 (plays 3–5): q is 0 from 2 to 3.
    assert queued(page)[f"F|{BACKLOG}"] == ["0,0 0,2 2,0 3,0 3,2 5,0", 2]
    assert browser.seen["errors"] == [] and browser.seen["console"] == [] and browser.seen["blocked"] == []
    page.close()
