"""Every public function, class and method of the data's packages (traces, grouping, manifest,
sim, durationmodel, analysis) and of the Python API (api) has a docstring, and the docstring of anything that
takes or returns a time says in which unit.

"Public" is read off the source with ``ast``: a function or class at module level (also
inside a module-level ``if``/``try``), or a method or nested class of a public class, whose
name does not start with ``_``, in a module whose file name does not start with ``_``
(a package's ``__init__.py`` counts as the package). Dunder methods are excluded, and so
are a property's ``@x.setter``/``@x.deleter`` (the getter carries the docstring) and
``@overload`` stubs.

The unit heuristic, kept simple on purpose: a function or method is *about time* when its
own name or one of its parameters' names ends with ``_s``, ``_ns`` or ``_ms``, starts with
``time`` or contains ``dur``; a class is about time when one of its annotated fields
(a dataclass's constructor parameters) is. Its docstring must then contain a unit as a
whole word: ``s``, ``ns``, ``ms``, ``Hz``, or a word starting with ``second``,
``nanosecond``, ``millisecond`` or ``sample``. It cannot tell a right unit from a wrong
one; it catches a time documented with none.
"""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("traces", "grouping", "manifest", "sim", "durationmodel", "analysis", "api")

TIME_NAME = re.compile(r"(_s|_ns|_ms)$|^time|dur")
UNIT_WORD = re.compile(r"(?<![\w'])(s|ns|ms|Hz|(nano|milli)?seconds?|samples?)(?![\w'])")

Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def module_files() -> list[Path]:
    """The packages' module files whose names do not start with ``_`` (``__init__.py`` kept)."""
    files = []
    for package in PACKAGES:
        for path in sorted((ROOT / "simulplay" / package).rglob("*.py")):
            if path.name == "__init__.py" or not path.name.startswith("_"):
                files.append(path)
    return files


def _decorator_names(node: Definition) -> set[str]:
    names = set()
    for deco in node.decorator_list:
        if isinstance(deco, ast.Call):
            deco = deco.func
        if isinstance(deco, ast.Attribute):
            names.add(deco.attr)
        elif isinstance(deco, ast.Name):
            names.add(deco.id)
    return names


def _statements(body: list[ast.stmt]):
    """The statements of ``body``, looking into ``if``/``try`` blocks."""
    for node in body:
        if isinstance(node, ast.If):
            yield from _statements(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            yield from _statements(node.body + node.orelse + node.finalbody)
            for handler in node.handlers:
                yield from _statements(handler.body)
        else:
            yield node


def public_definitions(tree: ast.Module) -> list[tuple[str, Definition]]:
    """(qualified name, node) of every public function, class and method of a module."""
    found: list[tuple[str, Definition]] = []

    def walk(body: list[ast.stmt], prefix: str) -> None:
        for node in _statements(body):
            if not isinstance(node, Definition) or node.name.startswith("_"):
                continue
            if _decorator_names(node) & {"setter", "deleter", "overload"}:
                continue
            found.append((prefix + node.name, node))
            if isinstance(node, ast.ClassDef):
                walk(node.body, f"{prefix}{node.name}.")

    walk(tree.body, "")
    return found


def all_public() -> list[tuple[str, Definition]]:
    """(``path:line qualified name``, node) over every module of those packages."""
    out = []
    for path in module_files():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for name, node in public_definitions(tree):
            out.append((f"{path.relative_to(ROOT)}:{node.lineno} {name}", node))
    return out


def time_names(node: Definition) -> list[str]:
    """The names that make ``node`` about time: its own and its parameters' (a class's annotated fields)."""
    names = [node.name]
    if isinstance(node, ast.ClassDef):
        names += [s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]
    else:
        a = node.args
        names += [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]
    return [n for n in names if TIME_NAME.search(n)]


def test_the_walk_finds_what_it_should():
    """The walk sees the functions the issue names, methods, and leaves private ones out."""
    names = {label.split(" ", 1)[1] for label, _ in all_public()}
    assert {"compute_eta", "validate_manifest", "replay", "read_trace", "Stream", "Stream.joined",
            "Bootstrap.signature"} <= names
    assert not any(part.startswith("_") for n in names for part in n.split("."))
    assert len(names) > 250  # 294 when this test was written


def test_public_definitions_on_a_hand_written_module():
    """Worked by hand: which definitions of a small module count as public."""
    source = '''
def f(): pass
def _g(): pass
class C:
    def m(self): pass
    def _p(self): pass
    def __len__(self): return 0
    @property
    def v(self): return 1
    @v.setter
    def v(self, x): pass
class _D:
    def m(self): pass
try:
    def h(): pass
except ImportError:
    pass
'''
    names = [n for n, _ in public_definitions(ast.parse(source))]
    assert names == ["f", "C", "C.m", "C.v", "h"]


def test_every_public_definition_has_a_docstring():
    missing = [label for label, node in all_public() if not (ast.get_docstring(node) or "").strip()]
    assert not missing, f"{len(missing)} public definitions without a docstring:\n" + "\n".join(missing)


def test_time_docstrings_name_a_unit():
    bare = []
    for label, node in all_public():
        doc = ast.get_docstring(node) or ""
        names = time_names(node)
        if names and doc and not UNIT_WORD.search(doc):
            bare.append(f"{label} ({', '.join(names)})")
    assert not bare, f"{len(bare)} docstrings of times without a unit:\n" + "\n".join(bare)


@pytest.mark.parametrize(
    ("doc", "has_unit"),
    [
        ("Start in seconds from source start.", True),
        ("Gap (s) before each chunk.", True),
        ("Deadline in int64 ns, inclusive.", True),
        ("Length in samples at 24000 Hz.", True),
        ("Returns the delays.", False),  # "returns" holds "ns", "delays" ends in "s": not units
        ("The trace's items, in terms of updates.", False),
    ],
)
def test_unit_word_heuristic(doc: str, has_unit: bool):
    assert bool(UNIT_WORD.search(doc)) is has_unit
