"""Every fenced code block in the docs, the README, ARCHITECTURE.md and the changelog is
closed, and no fence shares its line with text: Markdown reads "``` Times are …" as the
start of inline code, so a block closed that way swallows the page after it, and the strict
docs build does not notice."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([*(ROOT / "docs").glob("*.md"), ROOT / "README.md", ROOT / "ARCHITECTURE.md", ROOT / "CHANGELOG.md"])
OPEN = re.compile(r"^(\s*)(`{3,}|~{3,})([\w+-]*)\s*(\{[^}]*\})?\s*$")  # ``` or ```python, nothing after


def fence_problems(text: str) -> list[str]:
    """Where a page's fences go wrong (``line N: what``): a fence line with text after it, or a
    block still open at the end."""
    problems, inside = [], None
    for n, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not (stripped.startswith("```") or stripped.startswith("~~~")):
            continue
        if inside is None:
            m = OPEN.match(line)
            if not m:
                problems.append(f"line {n}: an opening fence with text after its language: {stripped[:40]!r}")
                continue
            inside = (m.group(2), n)
        elif stripped.startswith(inside[0][0] * len(inside[0])):
            if stripped.rstrip(inside[0][0]):
                problems.append(f"line {n}: a closing fence shares its line with text: {stripped[:40]!r}")
            inside = None
    if inside is not None:
        problems.append(f"line {inside[1]}: a fence opened here is never closed")
    return problems


def test_the_check_sees_both_faults():
    assert fence_problems("```python\nx = 1\n``` Times are seconds\n") == [
        "line 3: a closing fence shares its line with text: '``` Times are seconds'"]
    assert fence_problems("text\n```sh\nmake demo\n") == ["line 2: a fence opened here is never closed"]
    assert fence_problems("```python\nx = 1\n```\n\n~~~\ny\n~~~\n") == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_fence_is_closed_on_a_line_of_its_own(page):
    assert fence_problems(page.read_text(encoding="utf-8")) == []
