"""The typer application: every command registered in the order ``--help`` lists them, and
``main()``, the console entry point (one-line errors: exit code 2 for bad input and outputs
refused before any work, 1 for a fault of the machine met during it).

Each command lives in the module named after it (:mod:`.eta` holds ``eta``, :mod:`.render`
``render``); a few small families share one: :mod:`.traces` (validate, group, the importers),
:mod:`.latency` (latency, export-simuleval, textlatency), :mod:`.diagnostics` (asr, content,
wordtiming), :mod:`.experiment` (run, demo), :mod:`.listening` (listening-test, listening-results), :mod:`.store`
(store verify, store gc). A command
parses, calls one library function and writes or prints. Units: every time is in seconds from
source start unless a flag says otherwise
(the SimulEval and OmniSTEval metrics are in ms, as those tools give them); output format
follows the --out suffix: .parquet (canonical), .csv or .md.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import warnings

import typer
from typer.exceptions import Abort, TyperException

from simulplay.cli import (
    blocks,
    bootstrap,
    diagnostics,
    edges,
    eta,
    experiment,
    explore,
    latency,
    listening,
    live,
    load,
    player,
    quality,
    render,
    replay,
    report,
    retime,
    serve,
    store,
    sweep,
    synth,
    traces,
)
from simulplay.cli.helptext import Command, Group
from simulplay.core.errors import (
    EXIT_INPUT,
    FileFault,
    Interrupted,
    SimulplayError,
    SimulplayWarning,
    Terminated,
    interrupt_exit_code,
)
from simulplay.core.extras import MissingExtra, set_command
from simulplay.core.plugins import forget_stored, load_plugins, split_plugin_args
from simulplay.core.version import __version__

SETTINGS = dict(
    cls=Group,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
    help="Replay simultaneous-translation text streams through TTS and serial playback, "
    "and compare when listeners hear the end. Times are seconds from source start.\n\n"
    "Exit codes: 0 done; 2 refused before any work (bad input, or an output folder or store that does not "
    "exist, cannot be made or cannot be written: every command that writes tries a test file there first); "
    "1 started but not finished (the disk filled, a file became unreadable or disappeared, requests failed, "
    "a damaged store); 130 / 143 interrupted (Ctrl-C / SIGTERM). Errors are one line: the path, what failed "
    "and what to do. Files are written whole or not at all, the audio store stays consistent, and the same "
    "command run again resumes.",
)
app = typer.Typer(**SETTINGS)


def _version(value: bool):
    if value:
        typer.echo(f"simulplay {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version and exit."),
          plugin: list[str] = typer.Option([], "--plugin", metavar="MODULE",
                                           help="Import a plugin first (a module on sys.path or a .py file; "
                                           "repeatable; allowed before or after the command's name): its rules, "
                                           "backends, recognizers and replay variants are usable by name, and "
                                           "named in signatures. See docs/plugins.md.")):
    load_plugins(plugin)


COMMANDS = (  # (name, function), in the order of `simulplay --help`
    ("validate", traces.validate), ("spoken", traces.spoken), ("group", traces.group), ("replay", replay.replay),
    ("synth", synth.synth),
    ("retime", retime.retime),
    ("eta", eta.eta), ("bootstrap", bootstrap.bootstrap), ("import-simuleval", traces.import_simuleval_command),
    ("import-simulstream", traces.import_simulstream_command), ("player", player.player), ("edges", edges.edges),
    ("render", render.render), ("quality", quality.quality),
    ("listening-test", listening.listening_test), ("listening-results", listening.listening_results),
    ("latency", latency.latency),
    ("export-simuleval", latency.export_simuleval_command),
    ("textlatency", latency.textlatency),
    ("report", report.report), ("explore", explore.explore), ("serve", serve.serve), ("live", live.live),
    ("load", load.load),
    ("blocks", blocks.blocks),
    ("asr", diagnostics.asr),
    ("content", diagnostics.content), ("wordtiming", diagnostics.wordtiming), ("run", experiment.run),
    ("demo", experiment.demo), ("sweep", sweep.sweep),
)
for _name, _command in COMMANDS:
    app.command(_name, cls=Command)(_command)
app.add_typer(store.app, name="store")  # store verify | store gc


def app_for(args: list[str]) -> typer.Typer:
    """The application to run ``args``: when they start with a command's name, one with the
    same settings and root options holding that command only (typer builds the click
    parameters of every registered command at start, about 30 ms for all of them, and a
    command parses, helps and fails the same either way); else the whole application."""
    command = dict(COMMANDS).get(args[0]) if args else None
    if command is None:
        return app
    one = typer.Typer(**SETTINGS)
    one.callback()(_root)
    one.command(args[0], cls=Command)(command)
    return one


def main() -> None:
    """Console entry point: one-line errors, exit code 2 for bad input (and outputs refused
    before any work), 1 for a fault of the machine during the work (a full disk, a file
    gone: :class:`~simulplay.core.errors.FileFault`, or any OSError no library call named); Ctrl-C
    (SIGINT) and SIGTERM end a command with one line saying what was kept, exit code 130 / 143."""
    previous = _on_signals(_interrupt)
    _BEFORE[:] = previous
    try:
        _run()
    finally:
        _on_signals(previous)
        _BEFORE.clear()


_BEFORE: list = []  # the (SIGINT, SIGTERM) handlers main() replaced


def _child_signals() -> None:
    """A process forked while main() runs (a library's multiprocessing pool: OmniSTEval's
    aligner) gets the handlers back that were in place before main(): ``Pool.terminate`` ends
    its workers with SIGTERM, and with ours a worker would print a Terminated traceback
    on the command's stderr instead of ending quietly. A child forked while the command
    cleans up after a signal (ours are SIG_IGN then) gets them back too, or terminate()
    could not end it."""
    for sig, before in zip((signal.SIGINT, signal.SIGTERM), _BEFORE):
        if signal.getsignal(sig) in (_interrupt, signal.SIG_IGN):
            signal.signal(sig, before)


os.register_at_fork(after_in_child=_child_signals)


def _run() -> None:
    with warnings.catch_warnings():  # restores showwarning on the way out
        warnings.showwarning = _show_warning
        _commands()


def _show_warning(message, category, filename, lineno, file=None, line=None):
    """simulplay's own warnings as one line on stderr; others as Python shows them."""
    if issubclass(category, SimulplayWarning):
        print(f"simulplay: warning: {message}", file=sys.stderr)
    else:
        _SHOW_WARNING(message, category, filename, lineno, file, line)


_SHOW_WARNING = warnings.showwarning


def _commands() -> None:
    try:
        args, plugins = split_plugin_args(sys.argv[1:])  # --plugin is accepted anywhere in the line
        set_command(" ".join(["simulplay", *args[:1]]))  # named by a missing extra's one line
        load_plugins(plugins)
        try:
            rv = app_for(args)(args=args, standalone_mode=False)
        finally:
            set_command("simulplay")  # a later call from Python (a test's in-process run) names no command
            forget_stored()  # nor the plugin entries of the tables this command read
    except Abort as e:  # click turns KeyboardInterrupt (and our SIGTERM) into Abort
        print("simulplay: interrupted before the command finished (files appear only when complete, so none is "
              "half-written); run the same command again", file=sys.stderr)
        sys.exit(interrupt_exit_code(e.__cause__))
    except TyperException as e:  # usage errors: unknown flag, bad value, missing argument
        ctx = getattr(e, "ctx", None)
        if type(e).__name__ == "NoArgsIsHelpError":  # typer has printed the help
            sys.exit(0)
        name = ctx.command_path if ctx is not None else "simulplay"
        message = " ".join(e.format_message().split())
        print(f"{name}: error: {message} (see '{name} --help')", file=sys.stderr)
        sys.exit(2)
    except Interrupted as e:
        print(f"simulplay: {e}", file=sys.stderr)
        sys.exit(e.exit_code)
    except SimulplayError as e:
        _print_error(e)
        sys.exit(getattr(e, "exit_code", EXIT_INPUT))
    except OSError as e:  # a file operation no library call named: still one line, exit code 1
        fault = FileFault(e.filename, "a file operation failed", e)
        _print_error(fault)
        sys.exit(fault.exit_code)
    sys.exit(rv if isinstance(rv, int) else 0)


def _print_error(e: SimulplayError) -> None:
    if isinstance(e, MissingExtra):  # names the command itself: "simulplay quality needs the quality extra: …"
        print(e, file=sys.stderr)
        return
    for line in str(e).splitlines():
        print(f"simulplay: error: {line}", file=sys.stderr)


def _interrupt(signum, frame):
    """SIGINT → KeyboardInterrupt, SIGTERM → Terminated, once: a second signal while the
    command cleans up (releasing locks, removing temporary files) is ignored."""
    _on_signals(signal.SIG_IGN)
    raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def _on_signals(handler):
    """Set ``handler`` (one, or a (SIGINT, SIGTERM) pair) for both signals; returns the old pair."""
    pair = handler if isinstance(handler, tuple) else (handler, handler)
    old = tuple(signal.getsignal(s) or signal.SIG_DFL for s in (signal.SIGINT, signal.SIGTERM))
    if threading.current_thread() is threading.main_thread():  # only the main thread may set handlers
        signal.signal(signal.SIGINT, pair[0])
        signal.signal(signal.SIGTERM, pair[1])
    return old
