"""The lists a reader meets first are kept true by tests: docs/index.md's page table links
every page of the site's navigation and its command table names every command; the README's
documentation list links every page a user reads; ARCHITECTURE.md's API list names every
function of the Python API."""

import re
from pathlib import Path

import yaml

import simulplay
from simulplay.cli.app import COMMANDS

ROOT = Path(__file__).resolve().parents[1]
#: Pages for developers or reached from another page (the README lists them under Contributing
#: or not at all; it links the changelog as CHANGELOG.md, the file the page includes).
NOT_IN_README = {"index.md", "api-example.md", "tests.md", "benchmarks.md", "robustness.md", "changelog.md"}


def nav_pages() -> set[str]:
    """Every page file of mkdocs.yml's navigation."""
    def walk(node) -> set[str]:
        if isinstance(node, str):
            return {node}
        if isinstance(node, dict):
            return set().union(*(walk(v) for v in node.values()))
        return set().union(*(walk(v) for v in node))

    config = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=yaml.BaseLoader)
    return walk(config["nav"])


def section(text: str, heading: str) -> str:
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    return text[start:end if end > 0 else None]


def test_every_page_of_the_site_is_in_its_navigation():
    assert {p.name for p in (ROOT / "docs").glob("*.md")} == nav_pages()


def test_the_home_page_links_every_page_and_names_every_command():
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\(([\w-]+\.md)", section(index, "## Where to read")))
    assert nav_pages() - {"index.md", "api-example.md"} <= linked, nav_pages() - linked
    named = set(re.findall(r"`([a-z-]+(?: [a-z]+)?)`", section(index, "## Commands")))
    commands = {name for name, _ in COMMANDS} | {"store verify", "store gc"}
    assert commands <= named, commands - named


def test_the_readme_links_every_page_a_user_reads():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\(docs/([\w-]+\.md)", readme))
    missing = nav_pages() - NOT_IN_README - linked
    assert not missing, f"the README links no {sorted(missing)}"


def test_the_readme_command_table_names_every_command():
    table = section((ROOT / "README.md").read_text(encoding="utf-8"), "## Commands")
    named = set(re.findall(r"`simulplay ([a-z-]+)", table))
    assert {name for name, _ in COMMANDS} | {"store"} <= named, {name for name, _ in COMMANDS} - named


def test_architecture_names_every_function_of_the_python_api():
    text = section((ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8"), "## What each package holds")
    api = section(text, "- **api/**")
    missing = [name for name in simulplay._API if f"`{name}`" not in api and f"`simulplay.{name}`" not in api]
    assert not missing, f"ARCHITECTURE.md's api/ entry does not name {missing}"


def test_the_experiment_key_list_names_every_key():
    """docs/experiments.md's key table names every key an experiment file accepts (the
    reader's TOP_KEYS and ANALYSIS_KEYS, and ``plugins``, read before them), and the error
    for an unknown key lists ``plugins`` among them."""
    from simulplay.core.errors import InputError
    from simulplay.workflows.experiment import ANALYSIS_KEYS, TOP_KEYS, experiment_from_dict

    text = section((ROOT / "docs" / "experiments.md").read_text(encoding="utf-8"), "## Experiment files")
    table = text[text.index("Every key"):]
    listed = set(re.findall(r"`(\w+)`", table))
    assert {*TOP_KEYS, *ANALYSIS_KEYS, "plugins"} <= listed, {*TOP_KEYS, *ANALYSIS_KEYS, "plugins"} - listed
    try:
        experiment_from_dict({"plugin": []}, ROOT / "x.toml")
    except InputError as e:
        assert "key 'plugin'" in str(e) and ", plugins)" in str(e)
    else:
        raise AssertionError("an unknown key was accepted")


def test_the_glossary_trace_columns_are_the_formats_page_columns():
    """The glossary's trace entry names the columns of formats.md's Trace table, which are the
    reader's (required, then optional)."""
    from simulplay.traces.model import OPTIONAL_COLUMNS, TRACE_COLUMNS

    formats = section((ROOT / "docs" / "formats.md").read_text(encoding="utf-8"), "## Trace")
    table = re.findall(r"^\| `(\w+)`", formats, re.M)
    assert table == [*TRACE_COLUMNS, *OPTIONAL_COLUMNS]
    glossary = (ROOT / "docs" / "glossary.md").read_text(encoding="utf-8")
    entry = " ".join(re.search(r"\*\*trace\*\* — (.*?)\n\n", glossary, re.S).group(1).split())
    named = [n.strip() for chunk in re.findall(r"`([^`]+)`", entry) for n in chunk.split(",")]
    assert named == [*TRACE_COLUMNS, *OPTIONAL_COLUMNS], entry
