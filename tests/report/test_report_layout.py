"""The report at a glance, in real headless Chromium at 1280 px: no element wider than the
viewport, no table that needs a sideways scrollbar, wide tables split to fit, and the
page's look compared with a stored thumbnail for gross layout changes."""

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from simulplay.report import html
from simulplay.report.model import ReportTable
from tests.support.report_layout import (
    MAX_DISTANCE,
    MAX_HEIGHT_CHANGE,
    REFERENCE,
    build_test_report,
    layout_distance,
    layout_of,
    thumbnail,
)

pytestmark = pytest.mark.slow  # a headless Chromium per test


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    folder = tmp_path_factory.mktemp("layout")
    page = build_test_report(folder)
    return page, layout_of(page, folder / "profile")


def test_nothing_is_wider_than_the_viewport_at_1280(report):
    _, seen = report
    assert seen["pageWidth"] <= seen["viewport"] == 1280
    assert seen["wide"] == [], seen["wide"][:10]
    assert seen["scrolling"] == [], seen["scrolling"]  # no table needs a horizontal scrollbar
    assert seen["tables"] >= 9  # every table of the report was laid out


def test_the_page_looks_like_the_stored_reference(report, tmp_path):
    page, seen = report
    reference = Image.open(REFERENCE)
    change, distance = layout_distance(thumbnail(seen["shot"]), reference)
    assert change <= MAX_HEIGHT_CHANGE and distance <= MAX_DISTANCE, (
        f"page height changed by {change:.1%}, look by {distance:.3f}: if intended, look at the report and run "
        "`python -m tests.support.report_layout` to store a new reference")
    # the comparison notices a gross change: the same page in the previous 980 px column
    narrow = tmp_path / "narrow.html"
    narrow.write_text(page.read_text().replace("main{max-width:1240px", "main{max-width:980px"))
    squeezed = layout_of(narrow, tmp_path / "profile")
    change, distance = layout_distance(thumbnail(squeezed["shot"]), reference)
    assert change > MAX_HEIGHT_CHANGE or distance > MAX_DISTANCE


def test_a_table_too_wide_for_the_page_is_split_into_parts_that_fit(tmp_path):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"system": ["A", "F"], "condition": ["punct:cap=2,min_words=3", "timer:w=4"],
                          **{f"metric_{i:02d}_s": rng.uniform(-1000, 1000, 2) for i in range(24)}})
    table = ReportTable.signed("wide", "A wide table", "Seconds.", frame, [{"table": "wide"}] * 2)
    page = tmp_path / "wide.html"
    page.write_text(html.page("wide", "A table of 26 columns.", [table], []))
    seen = layout_of(page, tmp_path / "profile")
    assert seen["tables"] > 1 and seen["wide"] == [] and seen["scrolling"] == []
    text = page.read_text()
    assert text.count("<th scope=\"col\">system</th>") == seen["tables"]  # text columns repeat in every part
