"""The report's layout in headless Chromium at 1280 px: what overflows, and a small
grey-scale thumbnail of the whole page compared with a stored reference for gross layout
changes (a table or figure gone, a column of text, a page twice as long).

Regenerate the reference after an intended layout change (and look at it first):

    python -m tests.support.report_layout        # writes tests/data/report_layout_1280.png
"""

from __future__ import annotations

import io
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image, ImageFilter
from playwright.sync_api import sync_playwright

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--font-render-hinting=none"]
REFERENCE = Path(__file__).parents[1] / "data" / "report_layout_1280.png"
WIDTH = 1280
THUMB_WIDTH = 80  # pixels: 1280 / 16
# Measured on the test report: the same page again 0.0001; body text 17 px instead of 15 px
# 0.006; the previous 980 px page 0.029 (height +4 %); a 640 px column 0.034 (height +22 %).
MAX_DISTANCE = 0.015  # mean absolute grey difference (0–1) after a light blur
MAX_HEIGHT_CHANGE = 0.10  # relative page height


def layout_of(html: Path, profile: Path, width: int = WIDTH, height: int = 900) -> dict:
    """Open ``html`` in Chromium at ``width`` px: the page width, the elements reaching past
    the viewport, the tables that scroll sideways, and a full-page screenshot (PNG bytes)."""
    with sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, headless=True, args=FLAGS,
            viewport={"width": width, "height": height}, device_scale_factor=1, offline=True)
        try:
            page = ctx.new_page()
            page.goto(html.as_uri(), wait_until="load")
            page.wait_for_function("() => [...document.images].every(i => i.complete)", timeout=120_000)
            page.evaluate("() => document.fonts.ready.then(() => true)")
            seen = page.evaluate("""() => ({
                pageWidth: document.documentElement.scrollWidth, viewport: window.innerWidth,
                wide: [...document.querySelectorAll('body *')]
                    .filter(e => e.getBoundingClientRect().right > window.innerWidth + 0.5)
                    .map(e => e.tagName.toLowerCase() + ' in #' + ((e.closest('section') || {}).id || '?')),
                scrolling: [...document.querySelectorAll('.scroll')].filter(d => d.scrollWidth > d.clientWidth)
                    .map(d => ((d.closest('section') || {}).id || '?') + ': ' + d.scrollWidth + ' > ' + d.clientWidth),
                tables: document.querySelectorAll('table').length})""")
            seen["shot"] = page.screenshot(full_page=True)
        finally:
            ctx.close()
    return seen


def thumbnail(png: bytes) -> Image.Image:
    """The page as a grey-scale image ``THUMB_WIDTH`` pixels wide (height in proportion)."""
    im = Image.open(io.BytesIO(png)).convert("L")
    return im.resize((THUMB_WIDTH, max(1, round(im.height * THUMB_WIDTH / im.width))), Image.Resampling.BOX)


def layout_distance(thumb: Image.Image, reference: Image.Image) -> tuple[float, float]:
    """(relative height change, mean absolute grey difference in 0–1): ``thumb`` is resized
    to the reference's height and both are blurred by one pixel, so that a line moving by a
    few screen pixels does not count but a block of text, a table or a figure does."""
    change = abs(thumb.height - reference.height) / reference.height
    a = thumb.resize(reference.size, Image.Resampling.BOX).filter(ImageFilter.BoxBlur(1))
    b = reference.filter(ImageFilter.BoxBlur(1))
    diff = np.abs(np.asarray(a, dtype=float) - np.asarray(b, dtype=float)) / 255.0
    return change, float(diff.mean())


def build_test_report(folder: Path) -> Path:
    """The report the layout checks look at: the synthetic 12-talk run of the report tests."""
    from simulplay.report import build_report, write_report
    from tests.support.report_runs import make_run

    run = make_run(folder / "run", 12)
    write_report(build_report(run), folder / "report")
    return folder / "report" / "report.html"


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        html = build_test_report(Path(tmp))
        seen = layout_of(html, Path(tmp) / "profile")
    REFERENCE.parent.mkdir(parents=True, exist_ok=True)
    thumbnail(seen["shot"]).save(REFERENCE, optimize=True)
    print(f"wrote {REFERENCE} ({REFERENCE.stat().st_size} bytes); overflowing: {seen['wide'] or 'none'}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
