"""The README stays a short door into the project, and every door in it opens: at most 200
lines, the two set-up commands first, every `simulplay` command (and flag) it names is a real
one, every file it links to exists. The documentation site builds with --strict (a broken
link or anchor, a page missing from the nav, an API docstring that cannot be collected)."""

import re
import shlex
import subprocess
import sys
from importlib.resources import files
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from simulplay.cli import app

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file())
README = ROOT / "README.md"
MAX_LINES = 200
SETUP = ["make demo", "make test"]
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def readme() -> str:
    return README.read_text(encoding="utf-8")


def code_of(text: str) -> list[str]:
    """The README's code, one string per line of a fenced block (continuation lines joined,
    comments cut) or per inline code span outside the blocks."""
    pieces = []
    for block in FENCE.findall(text):
        for line in block.replace("\\\n", " ").splitlines():
            pieces.append(line.split(" #")[0])
    pieces += [" ".join(span.split()) for span in re.findall(r"`([^`]+)`", FENCE.sub("", text))]
    return pieces


def commands_named(text: str) -> list[tuple[str, list[str]]]:
    """Each `simulplay COMMAND [SUBCOMMAND]` in the README's code, with the flags after it
    (up to the next `simulplay`)."""
    named = []
    for piece in code_of(text):
        parts = re.split(r"(?<![\w.-])simulplay (?=[a-z])", piece)
        for part in parts[1:]:
            words = part.replace("\\|", " ").split()
            named.append((words[0], words))
    return named


def click_command(words: list[str]):
    """The click command that `simulplay WORDS…` names, and the words that named it."""
    command, path = typer.main.get_command(app), []
    for word in words:
        sub = getattr(command, "commands", {}).get(word)
        if sub is None:
            break
        command, path = sub, [*path, word]
    return command, path


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading: lowercase, punctuation dropped, spaces as '-'."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors_of(path: Path) -> set[str]:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    return {github_anchor(re.sub(r"\s*\{#[^}]*\}\s*$", "", h)) for h in re.findall(r"^#{1,6} (.+)$", text, re.M)}


def test_readme_is_at_most_200_lines():
    n = len(readme().splitlines())
    assert n <= MAX_LINES, f"README.md has {n} lines; move detail into docs/ (at most {MAX_LINES})"


def test_readme_starts_with_the_two_setup_commands():
    text = readme()
    lines = [line for line in text.splitlines() if line.strip()]
    assert lines[0].startswith("# ") and lines[1].startswith("```"), "the title, then the set-up commands"
    first_block = FENCE.search(text).group(1)
    commands = [line.split("#")[0].strip() for line in first_block.splitlines() if line.split("#")[0].strip()]
    assert commands == SETUP, f"the first code block should hold exactly {SETUP}, holds {commands}"


@pytest.mark.slow


def test_every_command_the_readme_names_is_real_and_takes_its_flags():
    named = commands_named(readme())
    assert len({words[0] for _, words in named}) >= 20, "the command table went missing"
    runner, problems = CliRunner(), []
    for name, words in named:
        command, path = click_command(words)
        if not path:
            problems.append(f"simulplay {name}: no such command")
            continue
        result = runner.invoke(app, [*path, "--help"])
        if result.exit_code != 0 or "Usage" not in result.output:
            problems.append(f"simulplay {' '.join(path)} --help: exit {result.exit_code}: {result.output[-300:]}")
        known = {opt for param in command.params for opt in param.opts + param.secondary_opts} | {"--help"}
        for flag in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", " ".join(words)):
            if flag not in known:
                problems.append(f"simulplay {' '.join(path)} has no option {flag}")
    assert problems == [], "\n".join(problems)


def test_every_relative_link_and_image_in_the_readme_exists():
    text = FENCE.sub("", readme())
    links = LINK.findall(text)
    assert any(link.startswith("docs/") for link in links), "the README should link into docs/"
    missing = []
    for link in links:
        if re.match(r"^[a-z][a-z0-9+.-]*:", link):  # https:, mailto:
            continue
        target, _, anchor = link.partition("#")
        path = (README.parent / target) if target else README
        if not path.exists():
            missing.append(f"{link}: no file {path.relative_to(ROOT)}")
        elif anchor and path.suffix == ".md" and anchor not in anchors_of(path):
            missing.append(f"{link}: {path.name} has no heading with anchor #{anchor}")
    assert missing == [], "\n".join(missing)


@pytest.mark.slow
def test_docs_site_builds_strictly(docs_site):
    """The session's strict build (the ``docs_site`` fixture, shared with the API page's test) passed."""
    assert (docs_site / "api" / "index.html").is_file()


def test_every_advised_retime_re_times_every_request():
    """Wherever the README, the docs or a warning advise a re-timing, the command re-times every
    request (``--all``): without it ``retime`` re-times a sample of 20, a look at the clock,
    not a new measurement (``--sample N`` says so where a sample is meant)."""
    texts = {p: p.read_text(encoding="utf-8") for p in [ROOT / "README.md", *(ROOT / "docs").rglob("*.md"),
                                                        *(ROOT / "simulplay").rglob("*.py")]}
    commands = [(p.relative_to(ROOT), " ".join(m.group(0).split())) for p, text in texts.items()
                for m in re.finditer(r"simulplay retime [^`\n\"]*(?:\n[^`\n\"]*)?--out", text)]
    assert len(commands) >= 4, commands  # README, faq, experiments, synthesis, the contended-run warning
    assert all("--all" in c or "--sample" in c for _, c in commands), commands


def test_the_demo_request_count_includes_the_sweep_confirmation():
    """The README's count of a fresh demo's Piper requests is the design's plus the sweep's
    confirmed point's, as docs/install.md quotes the fresh run's two lines (`synthesized N`
    of the design, `confirmed by synthesis … synthesized M`): the demo synthesizes both."""
    text = " ".join(readme().split())
    total, design, confirm = map(int, re.search(r"\((\d+) Piper requests: (\d+) of the design, (\d+) of the "
                                                r"sweep's confirmed point\)", text).groups())
    install = " ".join((ROOT / "docs" / "install.md").read_text(encoding="utf-8").split())
    assert design == int(re.search(r"`\d+ requests: synthesized (\d+),", install).group(1))
    assert confirm == int(re.search(r"confirmed by synthesis: [^(]*\(…; synthesized (\d+),", install).group(1))
    assert total == design + confirm


def test_no_code_cites_the_specification():
    """The docs are the reference: modules and docs cite docs pages, never a section of the
    project's specification (``SPEC §8``), which a reader of the code does not have."""
    citing = [f"{path.relative_to(ROOT)}:{n}" for path in [*(ROOT / "simulplay").rglob("*.py"),
                                                            *(ROOT / "docs").rglob("*.md")]
              for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
              if re.search(r"\bSPEC\b\s*§|\bSPEC\.md\b|specification section", line)]
    assert not citing, citing


def test_every_docs_page_the_code_cites_exists_with_its_heading():
    """Docstrings and test notes cite the design as ``docs/<page>.md#<anchor>``: each page exists
    and holds a heading with that anchor (its own or an explicit ``{#id}``)."""
    cited = set()
    for path in [*(ROOT / "simulplay").rglob("*.py"), *(ROOT / "tests").rglob("*.py")]:
        cited |= set(re.findall(r"docs/([\w-]+\.md)(?:#([\w-]+))?", path.read_text(encoding="utf-8")))
    assert cited, "no citation found: the pattern is broken"
    missing = []
    for page, anchor in sorted(cited):
        path = ROOT / "docs" / page
        ids = anchors_of(path) | set(re.findall(r"\{#([\w-]+)\}", path.read_text(encoding="utf-8"))) \
            if path.is_file() else set()
        if not path.is_file() or (anchor and anchor not in ids):
            missing.append(f"docs/{page}#{anchor}")
    assert not missing, missing


def readme_walkthrough() -> list[list[str]]:
    """The commands of the README's "Your own logs, step by step" block, as argument lists
    (continuation lines joined, comments dropped)."""
    text = readme()
    block = re.search(r"## Your own logs, step by step.*?```sh\n(.*?)```", text, re.S).group(1)
    commands = []
    for line in block.replace("\\\n", " ").splitlines():
        line = line.split("  #")[0].strip()
        if line:
            commands.append(shlex.split(line))
    return commands


@pytest.mark.slow
def test_the_readme_walkthrough_runs_as_written(tmp_path):
    """Every command of the walk-through runs, in order, on two small simulstream logs
    (SeamlessStreamAtt-shaped, generated: one 20 s talk, A eager and F batched), with real
    Piper, and writes the file it names."""
    from tests.support.simulstream_logs import seamless_log

    seamless_log(tmp_path / "a.jsonl", [20.0], hold=1)
    seamless_log(tmp_path / "f.jsonl", [20.0], hold=3)
    commands = readme_walkthrough()
    assert [c[1] for c in commands] == ["import-simulstream", "import-simulstream", "group", "synth", "replay", "eta",
                                        "report", "explore"]
    assert all("--store" in c for c in commands[-2:])  # the report's Listen clips, the explorer's audio
    for args in commands:
        assert args[0] == "simulplay"
        proc = subprocess.run([sys.executable, "-m", "simulplay", *args[1:]], cwd=tmp_path, capture_output=True,
                              text=True, timeout=900)
        assert proc.returncode == 0, f"{' '.join(args)}:\n{proc.stdout}\n{proc.stderr}"
        out = args[args.index("--out") + 1]
        assert (tmp_path / out).exists(), f"{' '.join(args)} wrote no {out}"
    assert list((tmp_path / "report" / "audio").glob("*.mp3")), "the report has no Listen clips (no --store?)"


@pytest.mark.slow
def test_the_readme_python_api_runs_as_written(tmp_path, monkeypatch):
    """The README's Python block runs as written on a small trace named as it says (the
    bundled sample traces' first 8 s, systems renamed A and F), with real Piper."""
    import simulplay
    from simulplay.core.signature import base_signature
    from simulplay.traces import write_trace

    sample = simulplay.read_trace(files("simulplay.sample_traces") / "sample_traces.jsonl").table
    small = sample[sample["time_s"] < 8].replace({"system": {"eager": "A", "batched": "F"}})
    write_trace(small.reset_index(drop=True), tmp_path / "talks.jsonl", base_signature(table="trace"))
    code = re.search(r"## Python API\n\n```python\n(.*?)```", readme(), re.S).group(1)
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)
    table = namespace["table"]
    assert set(table.eta["condition"]) == {"timer:w=2"} and table.signatures[0]["rule"] == "timer:w=2"
