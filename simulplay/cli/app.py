"""The typer application: every command registered in the order ``--help`` lists them, and
``main()``, the console entry point (one-line errors, exit code 2 for bad input).

Each command lives in the module of its family (:mod:`.traces`, :mod:`.synth`,
:mod:`.replay`, :mod:`.compare`, :mod:`.report`, :mod:`.blocks`, :mod:`.diagnostics`,
:mod:`.experiment`): it parses, calls one library function and writes or prints. Units:
every time is in seconds from source start unless a flag says otherwise; output format
follows the --out suffix: .parquet (canonical), .csv or .md.
"""

from __future__ import annotations

import sys

import typer
from typer.exceptions import Abort, TyperException

from simulplay import __version__
from simulplay.cli import blocks, compare, diagnostics, experiment, replay, report, synth, traces
from simulplay.cli.helptext import Command, Group
from simulplay.errors import SimulplayError

app = typer.Typer(
    cls=Group,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
    help="Replay simultaneous-translation text streams through TTS and serial playback, "
    "and compare when listeners hear the end. Times are seconds from source start.",
)


def _version(value: bool):
    if value:
        typer.echo(f"simulplay {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version and exit.")):
    pass


COMMANDS = (  # (name, function), in the order of `simulplay --help`
    ("validate", traces.validate), ("group", traces.group), ("replay", replay.replay), ("synth", synth.synth),
    ("eta", compare.eta), ("import-simuleval", traces.import_simuleval_command),
    ("import-simulstream", traces.import_simulstream_command), ("player", replay.player), ("edges", replay.edges),
    ("report", report.report), ("serve", synth.serve), ("blocks", blocks.blocks), ("asr", diagnostics.asr),
    ("content", diagnostics.content), ("wordtiming", diagnostics.wordtiming), ("run", experiment.run),
    ("demo", experiment.demo),
)
for _name, _command in COMMANDS:
    app.command(_name, cls=Command)(_command)


def main() -> None:
    """Console entry point: one-line errors and exit code 2 for bad input."""
    try:
        rv = app(standalone_mode=False)
    except Abort:
        print("simulplay: aborted", file=sys.stderr)
        sys.exit(130)
    except TyperException as e:  # usage errors: unknown flag, bad value, missing argument
        ctx = getattr(e, "ctx", None)
        if type(e).__name__ == "NoArgsIsHelpError":  # typer has printed the help
            sys.exit(0)
        name = ctx.command_path if ctx is not None else "simulplay"
        message = " ".join(e.format_message().split())
        print(f"{name}: error: {message} (see '{name} --help')", file=sys.stderr)
        sys.exit(2)
    except SimulplayError as e:
        for line in str(e).splitlines():
            print(f"simulplay: error: {line}", file=sys.stderr)
        sys.exit(2)
    sys.exit(rv if isinstance(rv, int) else 0)
