"""The package's shape: the import graph of every module (parsed with ast, imports inside
functions included) has no cycle and never reaches up a layer of the table that
ARCHITECTURE.md draws; modules stay under 400 lines and command bodies under 25."""

import ast
import inspect
import re
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "simulplay"
MAX_MODULE_LINES = 400
MAX_COMMAND_LINES = 25


def module_files() -> dict[str, Path]:
    """Dotted module name → file, for every module of the package."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = module_files()


def imported_modules(name: str, path: Path) -> set[str]:
    """The package's modules that ``name`` imports (absolute or relative, anywhere in it)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(base + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        for target in targets:
            while target not in MODULES and "." in target:  # simulplay.x.y.Name → simulplay.x.y
                target = target.rpartition(".")[0]
            if target in MODULES and target != name:
                found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    return {name: imported_modules(name, path) for name, path in MODULES.items()}


def layer_table() -> dict[str, int]:
    """Package or module → layer, from the table in ARCHITECTURE.md."""
    table = {}
    for line in (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8").splitlines():
        m = re.match(r"\|\s*(\d+)\s*\|[^|]*\|(.*)\|\s*$", line)
        if m:
            for entry in re.findall(r"`([\w.]+)`", m.group(2)):
                table[entry] = int(m.group(1))
    return table


LAYERS = layer_table()


def layer_of(module: str) -> int:
    """The layer of the longest table entry covering ``module`` (``simulplay`` covers only itself)."""
    covering = [e for e in LAYERS if module == e or (e != "simulplay" and module.startswith(e + "."))]
    assert covering, f"{module} is in no layer of ARCHITECTURE.md's table"
    return LAYERS[max(covering, key=len)]


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a list of modules (first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        state[node] = 2
        path.pop()
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            return cycle
    return None


def test_the_graph_reader_sees_relative_and_function_level_imports(tmp_path, monkeypatch):
    """The checks below are only as good as the graph: a hand-made module proves that a
    relative import and an import inside a function both count, and a hand-made graph that
    a cycle is found (the expected edges are written by hand)."""
    probe = tmp_path / "a.py"
    probe.write_text("from . import b\n\ndef f():\n    from simulplay.x.c import thing\n", encoding="utf-8")
    names = ("simulplay.x", "simulplay.x.a", "simulplay.x.b", "simulplay.x.c")
    monkeypatch.setitem(globals(), "MODULES", {n: probe for n in names})
    assert imported_modules("simulplay.x.a", probe) == {"simulplay.x.b", "simulplay.x.c"}
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_every_module_has_a_layer_and_every_table_entry_exists():
    for module in MODULES:
        layer_of(module)
    missing = [e for e in LAYERS if e not in MODULES]
    assert not missing, f"ARCHITECTURE.md names {missing}, which the package does not have"
    assert sorted(set(LAYERS.values())) == list(range(max(LAYERS.values()) + 1))  # no gap


def test_there_is_no_import_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " → ".join(cycle)


def test_no_module_imports_from_a_layer_above_its_own():
    upward = [f"{a} (layer {layer_of(a)}) imports {b} (layer {layer_of(b)})"
              for a, targets in import_graph().items() for b in sorted(targets) if layer_of(b) > layer_of(a)]
    assert not upward, "\n".join(upward)


def external_imports(path: Path) -> set[str]:
    """Top-level names of the modules outside the package that a file imports (anywhere in it)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module.split(".")[0])
    return found - {"simulplay"}


def test_the_library_never_imports_the_terminal():
    """Progress reaches the library as a callback (simulplay.core.progress), not as a terminal:
    below the command line no module imports typer or rich (the layer test alone would let
    a library module draw its own progress bar with rich)."""
    terminal = {"typer", "rich", "click"}
    cli = layer_of("simulplay.cli")
    found = {m: sorted(external_imports(p) & terminal) for m, p in MODULES.items() if layer_of(m) < cli}
    assert not {m: t for m, t in found.items() if t}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_modules_stay_short(module):
    n = len(MODULES[module].read_text(encoding="utf-8").splitlines())
    assert n <= MAX_MODULE_LINES, f"{module} has {n} lines (at most {MAX_MODULE_LINES})"


def command_body_lines(fn) -> int:
    """Lines of a command's body after its docstring and its leading (lazy) imports."""
    body = ast.parse(textwrap.dedent(inspect.getsource(fn))).body[0].body
    i = 1 if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) else 0
    while i < len(body) - 1 and isinstance(body[i], (ast.Import, ast.ImportFrom)):
        i += 1
    return body[-1].end_lineno - body[i].lineno + 1


def test_command_bodies_are_thin():
    from simulplay.cli.app import COMMANDS, app

    assert [c.name for c in app.registered_commands] == [name for name, _ in COMMANDS]
    long = {name: n for name, fn in COMMANDS if (n := command_body_lines(fn)) > MAX_COMMAND_LINES}
    assert not long, f"command bodies over {MAX_COMMAND_LINES} lines: {long}"


def test_the_body_count_skips_only_the_docstring_and_the_imports():
    def sample():
        """Doc."""
        import os

        a = os.sep
        return a

    assert command_body_lines(sample) == 2  # by hand: `a = …` and `return a`


def test_the_build_lists_every_package():
    """pyproject.toml lists the packages by hand (it maps traces/ to simulplay.sample_traces):
    a new package folder missing from the list would be left out of the wheel."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"])
    folders = {".".join(p.parent.relative_to(ROOT).parts) for p in PACKAGE.rglob("__init__.py")}
    assert listed == folders | {"simulplay.sample_traces"}


#: What writing a file or opening the audio store looks like in code: calls by these names
#: and imports of these modules or names.
WRITES = {"open", "write_text", "write_bytes", "to_parquet", "to_csv", "to_excel", "savefig", "mkdir", "makedirs",
          "write_table", "atomic_path", "new_folder", "unlink", "rmtree", "write"}
WRITER_IMPORTS = {"shutil", "tempfile", "soundfile", "simulplay.store", "simulplay.core.atomic",
                  "simulplay.core.tables.write_table", "simulplay.core.paths.new_folder"}


def io_uses(path: Path) -> list[str]:
    """Where a file writes, opens the store or imports what does (``line: what``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            fn = node.func
            name = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
            if name in WRITES:
                found.append(f"{node.lineno}: {name}()")
        elif isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {a.name}" for a in node.names
                      if any(a.name == w or a.name.startswith(w + ".") for w in WRITER_IMPORTS)]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
            if any(n == w or n.startswith(w + ".") for n in names for w in WRITER_IMPORTS):
                found.append(f"{node.lineno}: from {node.module}")
    return found


def test_io_uses_sees_writes_and_store_imports(tmp_path):
    probe = tmp_path / "m.py"
    probe.write_text("import shutil\nfrom simulplay.store import AudioStore\n"
                     "from simulplay.core.tables import read_table\n"
                     "def f(p, df):\n    p.write_text('x')\n    df.rename(columns={})\n    df.to_csv(p)\n",
                     encoding="utf-8")
    assert io_uses(probe) == ["1: import shutil", "2: from simulplay.store", "5: write_text()", "7: to_csv()"]


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("simulplay.analysis")))
def test_analysis_computes_and_never_writes_files_or_opens_the_store(module):
    """analysis/ holds pure computations: the files are written by report/, workflows/ and
    the command line, and the store is opened there too."""
    assert not io_uses(MODULES[module]), f"{module}: {io_uses(MODULES[module])}"


#: What reading a file looks like in code: calls by these names or by a name ``read_…``, and
#: imports of a ``read_…`` name from the package.
READS = {"open", "read_text", "read_bytes", "exists", "is_file", "iterdir", "glob", "rglob"}


def read_uses(path: Path) -> list[str]:
    """Where a file reads one, or imports one of the package's readers (``line: what``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            fn = node.func
            name = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
            if name in READS or name.startswith("read_"):
                found.append(f"{node.lineno}: {name}()")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("simulplay"):
            found += [f"{node.lineno}: {a.name}" for a in node.names if a.name.startswith("read_")]
    return found


def test_read_uses_sees_reads_and_reader_imports(tmp_path):
    probe = tmp_path / "m.py"
    probe.write_text("from simulplay.formats.load import checked_curve, read_load_curve\n"
                     "def f(p):\n    p.exists()\n    return read_load_curve(p), checked_curve(1, 2, 'x')\n",
                     encoding="utf-8")
    assert read_uses(probe) == ["1: read_load_curve", "3: exists()", "4: read_load_curve()"]


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("simulplay.sim")))
def test_sim_parses_what_it_is_given_and_never_reads_a_file(module):
    """sim/ takes parsed objects and arrays: a table a user's text names (a load curve, a
    calibration table) is read where the text enters (simulplay.formats.service_spec)."""
    assert not read_uses(MODULES[module]), f"{module}: {read_uses(MODULES[module])}"
