"""The command line's plain values coerced without Pydantic (simulplay/cli/coerce.py) give
what typer's own Pydantic coercion gives: the same value and type, or the same error."""

import subprocess
import sys
from pathlib import Path

import pytest
import typer
import typer.main
from typer._click import Context
from typer._click.exceptions import BadParameter
from typer._coercion import build_runtime_param

from simulplay.cli.coerce import PlainParam, install
from simulplay.cli.helptext import Command

app = typer.Typer()


@app.command(cls=Command)
def demo(
    text: str = typer.Option("x", "--text"),
    count: int = typer.Option(3, "--count"),
    bounded: int = typer.Option(5, "--bounded", min=1, max=10),
    clamped: int = typer.Option(5, "--clamped", min=1, max=10, clamp=True),
    ratio: float = typer.Option(0.95, "--ratio"),
    positive: float = typer.Option(1.0, "--positive", min=0.5),
    flag: bool = typer.Option(False, "--flag"),
    path: Path = typer.Option(Path("out"), "--path"),
    existing: Path = typer.Option(Path("."), "--existing", exists=True, dir_okay=False),
    names: list[str] = typer.Option([], "--name"),
):
    """A command with one parameter of each plain kind."""


def params():
    command = typer.main.get_command(app)
    return command, {p.name: p for p in command.params}


def outcome(runtime, value, param, ctx):
    try:
        out = runtime.coerce(value, param=param, ctx=ctx)
    except BadParameter as e:
        return ("error", e.format_message())
    return ("value", type(out), repr(out))


CASES = {
    "text": ["", "a b", " padded ", "ünïcode", None, 5],
    "count": ["5", "-3", "007", "0", "-0", "+5", "1_000", " 5", "5.0", "1e3", "x", "9" * 30, 3, True, None],
    "bounded": ["1", "10", "0", "11", "5", 5],
    "clamped": ["0", "11", "5"],
    "ratio": ["0.95", "1", "-2.5", ".5", "5.", "1e-3", "nan", "inf", "x", "0.1000000000000000055511151231257827",
              0.95, 1, float("nan")],
    "positive": ["0.5", "0.4", "2"],
    "flag": [True, False, None, "true"],
    "path": ["", "a/../b", "~/x", "dir/", "-", " a ", None],
    "existing": [".", "missing.txt", "tests"],
    "names": [(), ("a", "b"), ["c"], ("a", 1)],
}


@pytest.mark.parametrize("name, value", [(n, v) for n, vs in CASES.items() for v in vs])
def test_the_fast_coercion_gives_typers_value_or_error(name, value, tmp_path, monkeypatch):
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    command, by_name = params()
    param = by_name[name]
    assert isinstance(param._runtime_param, PlainParam)  # install() took it
    ctx = Context(command)
    assert outcome(param._runtime_param, value, param, ctx) == outcome(
        build_runtime_param(param.type_descriptor), value, param, ctx)


def test_other_annotations_keep_typers_coercion():
    from enum import StrEnum

    class Color(StrEnum):
        red = "red"

    choice = typer.Typer()

    @choice.command(cls=Command)
    def pick(color: Color = typer.Option(Color.red, "--color"), number: int = typer.Option(1, "--n",
                                                                                           parser=int)):
        """Choices and parsers go to typer."""

    command = typer.main.get_command(choice)
    install(command.params)
    ctx = Context(command)
    for p in (p for p in command.params if p.name in ("color", "n")):
        assert p.get_runtime_param().coerce("red" if p.name == "color" else "4", param=p, ctx=ctx) in (Color.red, 4)
        assert p._runtime_param._kind == [None] and p._runtime_param._typer  # typer's own coercion did it


def test_replay_and_eta_import_no_pydantic(tmp_path):
    """A whole `simulplay replay` in a fresh interpreter never imports Pydantic."""
    from simulplay.core.tables import write_table
    from tests.support.factories import manifest as make_manifest

    manifest = tmp_path / "m.parquet"
    write_table(make_manifest({("t1", "A", "immediate"): [(0.0, 0.5, 1.0), (1.0, 0.5, 1.0)]}), manifest,
                {"table": "manifest"}, kind="manifest")
    code = ("import sys, runpy; sys.argv = ['simulplay', 'replay', sys.argv[1], '--out', sys.argv[2]]\n"
            "try:\n    runpy.run_module('simulplay', run_name='__main__')\n"
            "except SystemExit as e:\n    assert not e.code, e.code\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pydantic'))")
    proc = subprocess.run([sys.executable, "-c", code, str(manifest), str(tmp_path / "s.parquet")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"


def test_the_installed_typer_is_a_supported_release_with_every_private_name_used():
    """coerce.py imports typer's private modules (its comment says why): the installed typer
    must be one of SUPPORTED_TYPER, pyproject.toml must pin typer to them, and every private
    name used must be there (a typer that moved one fails here, not in a user's command)."""
    import importlib
    import tomllib

    from simulplay.cli import coerce

    major, minor = (int(x) for x in typer.__version__.split(".")[:2])
    assert (major, minor) in coerce.SUPPORTED_TYPER, typer.__version__
    deps = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())["project"]["dependencies"]
    pins = [d.split("#")[0].strip() for d in deps if d.startswith("typer")]
    assert pins == [f"typer>={major}.{minor},<{major}.{minor + 1}"] and len(coerce.SUPPORTED_TYPER) == 1
    for module, names in {"typer._coercion": ("RuntimeParam", "build_runtime_param"),
                          "typer._param_types": ("coerce_cli_path", "lenient_issubclass"),
                          "typer.core": ("_TyperParameter",)}.items():
        for name in names:
            assert hasattr(importlib.import_module(module), name), (module, name)
    command, _ = params()
    assert all(hasattr(p, "_runtime_param") and hasattr(p, "type_descriptor") for p in command.params)
