"""docs/api-example.md runs as a notebook would: every ```python block in order, in one
namespace, in a fresh folder (real Piper synthesis and a real `simulplay run`)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "api-example.md"
BLOCK = re.compile(r"^```python\n(.*?)^```$", re.S | re.M)


def python_blocks(text: str) -> list[str]:
    """The code of every ```python fenced block, in page order."""
    return BLOCK.findall(text)


def test_the_block_reader_finds_blocks_in_order():
    text = "# t\n\n```python\na = 1\n```\n\ntext\n\n```console\n$ no\n```\n\n```python\nb = a + 1\n```\n"
    assert python_blocks(text) == ["a = 1\n", "b = a + 1\n"]


def test_the_page_is_plain_markdown_with_python_blocks():
    """mkdocs builds it in strict mode later: no links out of docs/, every fence closed."""
    text = PAGE.read_text(encoding="utf-8")
    assert text.count("```") % 2 == 0
    assert len(python_blocks(text)) >= 10
    assert not re.search(r"\]\((?!https?://)[^)]*\.\./", text), "a relative link leaving docs/"
    used = "\n".join(python_blocks(text))
    for name in ("read_trace", "group", "synthesize", "replay", "eta", "bootstrap", "load_run"):
        assert f"simulplay.{name}(" in used, name


@pytest.mark.slow  # Piper synthesis of 45 requests, then `simulplay run` with its report: 30–70 s on 2 cores
def test_every_python_block_of_the_api_example_runs_in_order(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    namespace: dict = {"__name__": "__api_example__"}
    for k, code in enumerate(python_blocks(PAGE.read_text(encoding="utf-8")), start=1):
        try:
            exec(compile(code, f"{PAGE.name} block {k}", "exec"), namespace)  # noqa: S102 - the page's own code
        except Exception as e:
            raise AssertionError(f"{PAGE.name}, python block {k} failed:\n{code}") from e
    run, table = namespace["run"], namespace["table"]
    assert run.eta.table["eta_s"].tolist() == table["eta_s"].tolist()  # the run reused the notebook's audio
    assert (tmp_path / "simulplay-api-example" / "run" / "report" / "report.html").is_file()
