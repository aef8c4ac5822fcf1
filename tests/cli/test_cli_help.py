"""--help that reads well: no ``<bool>`` after flags, nothing cut at 80 columns, paragraphs
wrapped once (no half-empty lines from the docstring's own line breaks)."""

import pytest
import typer.main
from typer.testing import CliRunner

from simulplay.cli.app import COMMANDS, app
from simulplay.cli.helptext import reflow

GROUP = typer.main.get_command(app)
BOX = "│╭╮╰╯─"


def rendered(*args: str, columns: int = 80) -> str:
    result = CliRunner().invoke(app, [*args, "--help"], env={"COLUMNS": str(columns), "TERMINAL_WIDTH": ""})
    assert result.exit_code == 0, result.output
    return result.output


def flat(text: str) -> str:
    return " ".join(text.translate({ord(c): " " for c in BOX}).split())


@pytest.mark.parametrize("name", [n for n, _ in COMMANDS])
def test_no_word_of_any_help_is_cut_at_80_columns(name):
    """Every word of the command's docstring and of each option's help appears whole in
    the rendered help (rich shortens a word longer than its column with an ellipsis)."""
    out = rendered(name)
    assert max(len(line) for line in out.splitlines()) <= 80
    shown = flat(out)
    command = GROUP.commands[name]
    words = [w for p in command.params for w in (p.help or "").split()] + (command.help or "").split()
    # "\b" marks a paragraph kept as written (click's marker, not shown); "\[" is rich's
    # escape of a bracket that would otherwise start markup (shown as "[")
    cut = [w for w in words if w != "\b" and w.replace("\\[", "[") not in shown]
    assert cut == [], f"{name} --help at 80 columns cuts {cut}"


@pytest.mark.parametrize("args", [(), ("replay",), ("synth",), ("run",)])
def test_flags_show_no_value_type(args):
    out = rendered(*args)
    assert "<bool>" not in out
    line = next(x for x in out.splitlines() if flat(x).startswith("--help"))  # the option's own line
    assert flat(line).startswith("--help Show this message")  # nothing between the flag and its help


def test_docstring_paragraphs_are_wrapped_once():
    # the replay docstring breaks "first_play_s (first part's playback" across source lines;
    # reflowed, rich fills each line: no line of the paragraph but its last ends short
    lines = rendered("replay", columns=100).splitlines()
    start = next(i for i, line in enumerate(lines) if "Summary columns" in line)
    end = next(i for i in range(start, len(lines)) if not lines[i].strip())
    widths = [len(line.rstrip()) for line in lines[start:end - 1]]
    assert len(widths) >= 3 and min(widths) > 80, lines[start:end]


def test_reflow_keeps_list_items_and_verbatim_paragraphs():
    text = "First line\n    continues here.\n\n\b\nkeep  this\nas is\n\nItems:\n* one\n  more\n* two"
    assert reflow(text) == "First line continues here.\n\n\b\nkeep  this\nas is\n\nItems:\n* one more\n* two"
