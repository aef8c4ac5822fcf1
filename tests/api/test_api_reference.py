"""The API reference documents every parameter: each public function's docstring has a
Google-style ``Args:`` entry for every parameter of its signature (and no other), and the
built page docs/api.md shows every function, in the order of the pipeline, with every
parameter named in its table (mkdocstrings renders only the documented ones)."""

from __future__ import annotations

import html
import inspect
import re

import pytest

import simulplay
import simulplay.api

FUNCTIONS = [n for n in simulplay.api.__all__ if inspect.isfunction(getattr(simulplay.api, n))]
PIPELINE = ["read_trace", "group", "synthesize", "replay", "eta", "bootstrap", "sweep", "load_run"]


def documented_args(doc: str) -> list[str]:
    """The parameter names of a Google-style docstring's ``Args:`` section, in order."""
    doc = inspect.cleandoc(doc)
    m = re.search(r"^Args:\n((?:(?: {4}.*)?\n)+)", doc + "\n", re.M)
    return re.findall(r"^ {4}(\w+)(?: \([^)]*\))?:", m.group(1), re.M) if m else []


def test_the_args_reader_reads_a_google_section():
    doc = '''Do it.

    Args:
        a: first,
            continued.
        b (int): second.

    Returns:
        c: not an argument.
    '''
    assert documented_args(doc) == ["a", "b"]


def test_the_pipeline_order_lists_every_public_function():
    assert sorted(PIPELINE) == sorted(FUNCTIONS)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_every_parameter_has_an_args_entry(name):
    function = getattr(simulplay.api, name)
    doc = inspect.getdoc(function)
    assert documented_args(doc) == list(inspect.signature(function).parameters), name
    assert "\nReturns:\n" in "\n" + doc, f"{name}: no Returns section"


def section_of(page: str, name: str) -> str:
    """The HTML of one function's entry: from its heading to the next function's or class's."""
    start = page.index(f'id="simulplay.api.{name}"')
    names = "|".join(simulplay.api.__all__)  # every function and result class
    nxt = re.compile(rf'id="simulplay\.api\.(?:{names})"')
    after = nxt.search(page, start + 1)
    return page[start:after.start() if after else None]


@pytest.mark.slow  # the session's one strict mkdocs build (docs_site), about 5 s
def test_the_built_api_page_shows_every_function_and_parameter(docs_site):
    page = (docs_site / "api" / "index.html").read_text(encoding="utf-8")
    positions = [page.find(f'id="simulplay.api.{n}"') for n in PIPELINE]
    assert -1 not in positions, [n for n, p in zip(PIPELINE, positions) if p < 0]
    assert positions == sorted(positions), "the functions are not in pipeline order"
    missing = []
    for name in PIPELINE:
        entry = section_of(page, name)
        table = entry[entry.index("Parameters:"):] if "Parameters:" in entry else ""
        shown = {html.unescape(c) for c in re.findall(r"<code>(\w+)</code>", table)}
        missing += [f"{name}({p})" for p in inspect.signature(getattr(simulplay.api, name)).parameters
                    if p not in shown]
    assert not missing, f"not on the built API page: {missing}"
    assert ":func:" not in page and ":class:" not in page, "a Sphinx role left unrendered"
