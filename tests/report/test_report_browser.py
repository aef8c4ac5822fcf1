"""The HTML report in real headless Chromium (Debian's `chromium`, installed by `make test`):
no console errors, no request leaving the file, a drawn page, readable on a phone."""

import io
import shutil
from pathlib import Path
from urllib.parse import quote

import numpy as np
import pandas as pd
import pytest
from PIL import Image
from playwright.sync_api import sync_playwright

from simulplay.report import build_report, write_report
from tests.support.report_runs import make_run

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]

# a headless Chromium per test (about 20 s in all)
pytestmark = pytest.mark.slow


def open_page(path, tmp_path, width=390, height=844):
    """Load ``path`` in Chromium; returns what a reader's browser saw."""
    seen = {"requests": [], "console": [], "page_errors": [], "failed": [], "why": [], "blocked": []}

    def intercept(route):  # nothing may leave the file: every other request is recorded and aborted
        if route.request.url.startswith("file:"):
            route.continue_()
        else:
            seen["blocked"].append(route.request.url)
            route.abort()

    with sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=CHROMIUM, headless=True, args=FLAGS,
            viewport={"width": width, "height": height}, device_scale_factor=1, offline=True)
        try:
            ctx.route("**/*", intercept)
            page = ctx.new_page()
            page.on("request", lambda r: seen["requests"].append(r.url))
            page.on("requestfailed", lambda r: seen["failed"].append(r.url) or seen["why"].append(r.failure))
            page.on("console", lambda m: seen["console"].append((m.type, m.text)))
            page.on("pageerror", lambda e: seen["page_errors"].append(str(e)))
            page.goto(path.as_uri(), wait_until="load")
            # every image decoded (or failed) and the fonts laid out: then the page is drawn
            page.wait_for_function("() => [...document.images].every(i => i.complete)", timeout=120_000)
            page.evaluate("() => document.fonts.ready.then(() => true)")
            # every audio element has read its metadata (readyState ≥ 1, duration known) or failed
            page.wait_for_function("() => [...document.querySelectorAll('audio')]"
                                   ".every(a => a.readyState >= 1 || a.error)", timeout=120_000)
            seen["audio"] = page.evaluate("""() => [...document.querySelectorAll('audio')].map(a => ({
                src: a.getAttribute('src'), ready: a.readyState, duration: a.duration,
                error: a.error && a.error.code, width: a.getBoundingClientRect().width}))""")
            seen["layout"] = page.evaluate("""() => ({
                pageWidth: document.documentElement.scrollWidth, viewport: window.innerWidth,
                images: [...document.images].map(i => [i.complete, i.naturalWidth, i.getBoundingClientRect().width]),
                wraps: [...document.querySelectorAll('.scroll')].map(d => [getComputedStyle(d).overflowX,
                                                                            d.scrollWidth, d.clientWidth]),
                sections: document.querySelectorAll('section').length,
                sigs: document.querySelectorAll('.sig code').length})""")
            seen["shot"] = page.screenshot(full_page=True)
        finally:
            ctx.close()
    return seen


@pytest.fixture(scope="module")
def report_html(tmp_path_factory):
    run = make_run(tmp_path_factory.mktemp("run"), 12)
    out = tmp_path_factory.mktemp("rep") / "report"
    write_report(build_report(run), out)
    return out / "report.html"


def test_report_opens_offline_without_errors_or_outside_requests(report_html, tmp_path):
    seen = open_page(report_html, tmp_path)
    assert seen["console"] == [] and seen["page_errors"] == [] and seen["failed"] == []
    outside = [u for u in seen["requests"] if u != report_html.as_uri() and not u.startswith("data:")]
    assert outside == [] and seen["blocked"] == []
    pixels = np.asarray(Image.open(io.BytesIO(seen["shot"])).convert("L"), dtype=float)
    assert pixels.shape[0] > 3000 and pixels.std() > 30  # a long page with text and figures, not blank
    layout = seen["layout"]
    assert len(layout["images"]) == 4 and all(ok and w > 0 and shown <= 390 for ok, w, shown in layout["images"])
    assert layout["sections"] >= 12 and layout["sigs"] >= 12


def test_report_is_readable_on_a_phone(report_html, tmp_path):
    layout = open_page(report_html, tmp_path, width=360, height=740)["layout"]
    assert layout["pageWidth"] <= layout["viewport"] == 360  # the page itself never scrolls sideways
    assert all(style == "auto" for style, _, _ in layout["wraps"])
    assert any(inner > outer for _, inner, outer in layout["wraps"])  # wide tables scroll inside their box


def test_the_browser_check_catches_outside_requests_and_errors(tmp_path):
    bad = tmp_path / "bad.html"
    bad.write_text('<!doctype html><html><head><link rel="icon" href="data:,"></head><body>'
                   '<img src="http://127.0.0.1:9/x.png"><script>console.error("boom")</script></body></html>')
    seen = open_page(bad, tmp_path)
    assert ("error", "boom") in seen["console"]
    assert seen["blocked"] == ["http://127.0.0.1:9/x.png"] and "http://127.0.0.1:9/x.png" in seen["requests"]


def _check_audio(seen, report_html, width):
    """Every audio element loaded its file from the report folder; their durations, keyed by src."""
    folder = report_html.parent.as_uri() + "/"
    assert seen["console"] == [] and seen["page_errors"] == [] and seen["blocked"] == []
    # a media request the player stops once it has read what preload="metadata" asks is aborted, not failed
    audio = {folder + a["src"] for a in seen["audio"]}
    assert all(url in audio and why == "net::ERR_ABORTED" for url, why in zip(seen["failed"], seen["why"])), seen
    assert all(u == report_html.as_uri() or u.startswith("data:") or u.startswith(folder) for u in seen["requests"])
    assert seen["audio"] and all(a["ready"] >= 1 and a["error"] is None and 0 < a["width"] <= width
                                 for a in seen["audio"])
    return {a["src"]: a["duration"] for a in seen["audio"]}


def test_report_audio_elements_load_with_their_durations(tmp_path_factory, tmp_path):
    root = tmp_path_factory.mktemp("listen-run")
    run = make_run(root / "run", 4, store=root / "store")
    out = root / "report"
    rep = build_report(run, listen_s=12.5)
    write_report(rep, out)
    durations = _check_audio(open_page(out / "report.html", tmp_path), out / "report.html", 390)
    expected = {quote(c.file): c.duration_s for c in rep.audio.clips}
    assert set(durations) == set(expected) and len(expected) == 4
    for src, seconds in durations.items():  # the browser's duration is the clip's, to a microsecond
        assert seconds == pytest.approx(expected[src], abs=2e-6) and expected[src] == 12.5


def test_committed_demo_report_plays_its_audio(tmp_path):
    html = Path(__file__).resolve().parents[2] / "reports" / "demo" / "report.html"
    table = pd.read_csv(html.parent / "tables" / "listen.csv")
    durations = _check_audio(open_page(html, tmp_path), html, 390)
    assert sorted(durations) == sorted(quote(f) for f in table["file"])  # src: the file name URL-escaped
    for row in table.to_dict("records"):
        assert durations[quote(row["file"])] == pytest.approx(row["clip_s"], abs=2e-6)
        assert (html.parent / row["file"]).stat().st_size < 200_000  # a short, compressed excerpt
