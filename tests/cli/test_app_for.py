"""A command line that starts with a command's name runs on an application holding that
command only (simulplay/cli/app.py, app_for): its help, its usage errors and its root
options read the same as from the whole application."""

import pytest
from typer.testing import CliRunner

from simulplay.cli.app import COMMANDS, app, app_for


def invoke(application, args):
    result = CliRunner().invoke(application, args, env={"COLUMNS": "100"})
    return result.exit_code, result.output


@pytest.mark.parametrize("name", ["replay", "eta", "sweep", "load", "demo"])
def test_help_and_a_usage_error_read_the_same(name):
    one = app_for([name])
    assert one is not app and len(one.registered_commands) == 1
    assert invoke(one, [name, "--help"]) == invoke(app, [name, "--help"])
    assert invoke(one, [name, "--no-such-flag"]) == invoke(app, [name, "--no-such-flag"])


def test_every_command_gets_an_application_of_its_own():
    for name, command in COMMANDS:
        (info,) = app_for([name]).registered_commands
        assert (info.name, info.callback) == (name, command)


def test_other_lines_get_the_whole_application():
    for args in ([], ["--help"], ["--version"], ["store", "verify"], ["replai"]):
        assert app_for(args) is app
    assert invoke(app_for(["--version"]), ["--version"]) == invoke(app, ["--version"])
