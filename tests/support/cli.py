"""Running the `simulplay` command from a test: in this process (the default) or in a real
subprocess.

In process, the command is the console entry point itself (:func:`simulplay.cli.main`) with
``sys.argv`` set, the working folder and environment the test asks for, and file descriptors
1 and 2 redirected to temporary files, so what Python prints, what rich draws and what a
library writes from C all reach ``stdout``/``stderr`` as they would from a subprocess; an
exception that escapes ``main()`` is printed as Python prints it (a traceback, exit code 1).
That skips a Python start-up and the imports of pandas, pyarrow and scipy on every call (about
1 to 2 s on a loaded 2-core machine) for the hundreds of calls that test what a command does.

A real subprocess is used when a test asks for one (``subprocess=True``: what only a fresh
interpreter shows), when the environment it passes holds a ``PYTHON*`` variable (read only at
an interpreter's start; PYTHONWARNINGS is applied here as the interpreter would apply it),
and for every call when ``SIMULPLAY_TEST_SUBPROCESS=1`` is set (the whole suite as a user's
shell runs the command). The tests that end a process (signals, kills, a full disk mid-write)
start their own subprocesses.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import subprocess as sp
import sys
import tempfile
import traceback
import types
import warnings
from collections.abc import Sequence
from pathlib import Path

ALWAYS_SUBPROCESS = os.environ.get("SIMULPLAY_TEST_SUBPROCESS") == "1"
ROOT = Path(__file__).resolve().parents[2]


def run_cli(*args, cwd=None, check=False, timeout=600, env=None, subprocess=None,
            imports: Sequence[str] = ()) -> sp.CompletedProcess:
    """Run ``simulplay *args``; returns a :class:`subprocess.CompletedProcess` with the exit
    code and the decoded stdout and stderr (``check``: fail the test on a non-zero exit;
    ``timeout``: seconds, for a real process only).
    ``subprocess``: True for a real process, False for this one, None to let the rules above
    decide; ``imports``: modules imported first (``tests.support.fakes`` registers the fake
    backends), in either."""
    argv = [str(a) for a in args]
    env = {k: str(v) for k, v in (env or {}).items()}
    if subprocess is None:
        subprocess = ALWAYS_SUBPROCESS or any(k.startswith("PYTHON") and k != "PYTHONWARNINGS" for k in env)
    if subprocess:
        first = f"import runpy, {', '.join(imports)}; "
        start = ["-c", first + "runpy.run_module('simulplay', run_name='__main__', alter_sys=True)"] if imports \
            else ["-m", "simulplay"]
        path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
        proc = sp.run([sys.executable, *start, *argv], capture_output=True, text=True, cwd=cwd,
                      timeout=timeout, env={**os.environ, "PYTHONPATH": path, **env})
    else:
        for module in imports:
            importlib.import_module(module)
        proc = _in_process(argv, cwd, env)
    if check and proc.returncode != 0:
        raise AssertionError(f"simulplay {' '.join(argv)} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc


def _in_process(argv: list[str], cwd, env: dict[str, str]) -> sp.CompletedProcess:
    from simulplay.cli import main

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        with _environment(env), _folder(cwd), _descriptors(out, err), _console_script(argv), \
                _fresh_warnings(env.get("PYTHONWARNINGS", "")):
            code = _exit_code(main)
        out.seek(0)
        err.seek(0)
        return sp.CompletedProcess(["simulplay", *argv], code, _text(out.read()), _text(err.read()))


def _exit_code(main) -> int:
    """What the process would exit with: SystemExit's code (a message is printed, as Python
    does, with code 1), 1 with a traceback on stderr for any other exception."""
    try:
        main()
    except SystemExit as e:
        if e.code is None:
            return 0
        if isinstance(e.code, int):
            return e.code
        print(e.code, file=sys.stderr)
        return 1
    except BaseException:  # noqa: BLE001 - shown as the interpreter would show it
        traceback.print_exc()
        return 1
    return 0


def _text(data: bytes) -> str:
    """Decoded as ``subprocess.run(text=True)`` decodes (universal newlines)."""
    return data.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")


@contextlib.contextmanager
def _environment(env: dict[str, str]):
    before = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextlib.contextmanager
def _folder(cwd):
    before = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(before)


@contextlib.contextmanager
def _descriptors(out, err):
    """File descriptors 1 and 2 onto ``out`` and ``err``, and sys.stdout/stderr writing to them."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    saved = os.dup(1), os.dup(2)
    streams = sys.stdout, sys.stderr
    os.dup2(out.fileno(), 1)
    os.dup2(err.fileno(), 2)
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", line_buffering=True)
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace",
                                  line_buffering=True)
    try:
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(ValueError, OSError):
                stream.flush()
        sys.stdout, sys.stderr = streams
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])


#: A fresh interpreter's warning filters (Python's documented defaults, without -W or PYTHONWARNINGS).
DEFAULT_FILTERS = (("default", DeprecationWarning, "__main__"), ("ignore", DeprecationWarning, None),
                   ("ignore", PendingDeprecationWarning, None), ("ignore", ImportWarning, None),
                   ("ignore", ResourceWarning, None))


@contextlib.contextmanager
def _fresh_warnings(options: str):
    """Warnings filtered as a fresh interpreter filters them (with ``options`` as its
    PYTHONWARNINGS) and printed on stderr, not recorded by pytest (a library's warning would
    reach a user's terminal)."""
    with warnings.catch_warnings():
        warnings.resetwarnings()
        for action, category, module in reversed(DEFAULT_FILTERS):
            warnings.filterwarnings(action, category=category, module=module or "")
        for option in filter(None, options.split(",")):
            warnings._setoption(option)  # as the interpreter reads PYTHONWARNINGS at its start
        impl = warnings._showwarnmsg_impl
        warnings._showwarnmsg_impl = _print_warning
        try:
            yield
        finally:
            warnings._showwarnmsg_impl = impl


def _print_warning(msg) -> None:
    file = msg.file or sys.stderr
    with contextlib.suppress(OSError):
        file.write(warnings._formatwarnmsg(msg))


@contextlib.contextmanager
def _console_script(argv: list[str]):
    """``sys.argv`` and ``__main__`` as the installed ``simulplay`` script has them: click names
    the program after ``argv[0]`` when ``__main__`` belongs to no package (under ``python -m
    pytest`` it would say "python -m pytest.simulplay" in a usage error)."""
    before = sys.argv, sys.modules["__main__"]
    script = types.ModuleType("__main__")
    script.__package__ = None
    sys.argv, sys.modules["__main__"] = ["simulplay", *argv], script
    try:
        yield
    finally:
        sys.argv, sys.modules["__main__"] = before
