"""`make demo` installs everything the demo imports.

`make demo` installs simulplay with the extras of the Makefile's DEMO_EXTRAS into a fresh
virtual environment. A machine that ran `make test` has every extra installed, so a demo
step importing a package outside those extras works there and fails on a fresh machine.
This test runs a small demo (the demo's command and design on traces cut short:
tests/support/demo_imports.py) in a subprocess, maps every module it imported to the
distribution that installed it (``importlib.metadata.packages_distributions``) and checks
each is in the requirement closure of ``simulplay[DEMO_EXTRAS]``: pyproject.toml's
requirements, then each installed distribution's own (``importlib.metadata.requires``,
markers evaluated with the extras asked for), transitively.

A few packages are imported only when installed (a library's ``try: import …`` with a
fallback): :data:`OPTIONAL` lists them with the module that tries them, and
:func:`test_the_optional_imports_are_optional` imports those modules with the packages
hidden, so the list cannot hide a real requirement."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import sysconfig
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]

#: Distributions a dependency imports only when they are installed → the module that tries them.
OPTIONAL = {
    "colorama": "numba",  # numba.core.errors: colored messages when colorama is there
    "coverage": "numba.core.lowering",  # numba.misc.coverage_support: only when coverage is installed
    "psutil": "joblib.externals.loky.backend.context",  # the CPU count of loky (os' otherwise)
    "resampy": "librosa.core.audio",  # lazy_loader.load: a lazy module when installed, never used by DNSMOS
    "samplerate": "librosa.core.audio",  # the same
    "tqdm": "torch.hub",  # torch.hub's progress bar (its own _Faketqdm otherwise)
}


def norm(name: str) -> str:
    """A distribution name in its normalized form (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def demo_extras(makefile: Path = ROOT / "Makefile") -> list[str]:
    """The extras of the Makefile's ``DEMO_EXTRAS = a,b`` line."""
    found = re.search(r"^DEMO_EXTRAS\s*=\s*(.*)$", makefile.read_text(encoding="utf-8"), re.M)
    assert found, "the Makefile has no DEMO_EXTRAS line"
    return [e.strip() for e in found.group(1).split(",") if e.strip()]


def closure(extras: list[str]) -> set[str]:
    """Normalized names of the distributions ``pip install '.[extras]'`` installs."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = list(project["dependencies"]) + [r for e in extras for r in project["optional-dependencies"][e]]
    todo = [Requirement(r) for r in wanted]
    seen: dict[str, set[str]] = {norm(project["name"]): set(extras)}
    while todo:
        req = todo.pop()
        name = norm(req.name)
        if name in seen and set(req.extras) <= seen[name]:
            continue
        asked = seen.setdefault(name, set()) | set(req.extras)
        seen[name] = asked
        for text in metadata.requires(req.name) or []:
            dep = Requirement(text)
            if dep.marker is None or any(dep.marker.evaluate({"extra": e}) for e in (asked or {""})):
                todo.append(dep)
    return set(seen)


def distributions_of(modules: dict[str, str | None]) -> dict[str, set[str]]:
    """Normalized distribution → the top-level modules of ``modules`` it installed. The
    standard library and modules without a file (built in, made by an extension) are left
    out; a top-level module that ``packages_distributions`` does not know (an extension's
    helper module registered at top level) is found by its file's folder under ``sys.path``."""
    known = metadata.packages_distributions()
    stdlib = [Path(sysconfig.get_paths()[k]).resolve() for k in ("stdlib", "platstdlib")]
    site = sorted({Path(p).resolve() for p in sys.path if p and Path(p).is_dir()} - set(stdlib), key=lambda p: -len(
        str(p)))
    found: dict[str, set[str]] = {}
    for name, file in modules.items():
        top = name.split(".")[0]
        if top in sys.stdlib_module_names or top == "tests":
            continue
        dists = known.get(top)
        if not dists:
            if file is None or any(Path(file).resolve().is_relative_to(s) for s in stdlib):
                continue
            path = Path(file).resolve()
            base = next((s for s in site if path.is_relative_to(s)), None)
            dists = known.get(path.relative_to(base).parts[0]) if base else None
            if not dists and base == ROOT:
                continue  # this checkout (simulplay itself)
            assert dists, f"module {name} ({file}) belongs to no installed distribution"
        for d in dists:
            found.setdefault(norm(d), set()).add(top)
    return found


def test_the_closure_walk_follows_extras_and_markers():
    """Hand-checked on this project's own metadata: the base requirements, an extra's
    packages and their requirements; a marker for another extra is not followed."""
    base = closure([])
    assert {"simulplay", "numpy", "piper-tts", "onnxruntime", "typer", "rich"} <= base  # onnxruntime: piper-tts's
    assert "speechmos" not in base and "silero-vad" not in base
    quality = closure(["quality"])
    assert {"speechmos", "librosa", "webrtcvad-wheels", "torch"} <= quality
    assert "silero-vad" not in quality and "resemblyzer" not in quality
    # mkdocstrings[python] asks for an extra: its handler comes only through it
    assert "mkdocstrings-python" in closure(["docs"]) and "mkdocstrings-python" not in base


def test_demo_extras_reads_the_makefile(tmp_path):
    (tmp_path / "Makefile").write_text("X = 1\nDEMO_EXTRAS = vad, quality\nTEST_EXTRAS = test\n")
    assert demo_extras(tmp_path / "Makefile") == ["vad", "quality"]


@pytest.mark.slow  # a small real demo: Piper, Silero VAD, DNSMOS, the report's figures (≈ 40 s alone)
def test_the_demo_imports_only_what_make_demo_installs(tmp_path):
    out = tmp_path / "modules.json"
    run = subprocess.run([sys.executable, "-m", "tests.support.demo_imports", str(out), str(tmp_path / "demo")],
                         cwd=ROOT, capture_output=True, text=True, timeout=400)
    assert run.returncode == 0, run.stderr[-3000:]
    assert (tmp_path / "demo" / "report" / "report.html").is_file(), "the small demo did not reach its report"
    imported = distributions_of(json.loads(out.read_text()))
    # the demo's own steps: Piper, the VAD of the edge replay, DNSMOS of the quality step
    assert {"piper-tts", "silero-vad", "speechmos"} <= set(imported)
    extras = demo_extras()
    installed = closure(extras)
    outside = {d: sorted(mods) for d, mods in imported.items() if d not in installed and d not in OPTIONAL}
    assert not outside, (f"the demo imports distributions that `make demo` (simulplay[{','.join(extras)}]) "
                         f"does not install: {outside}; add their extra to the Makefile's DEMO_EXTRAS")


@pytest.mark.slow  # imports torch and numba with four packages hidden (≈ 6 s)
def test_the_optional_imports_are_optional():
    hidden = sorted(OPTIONAL)
    code = ("import sys, importlib, importlib.util\n"
            "class Block:\n"
            f"    def find_spec(self, name, path=None, target=None):\n"
            f"        if name.split('.')[0] in {hidden!r}: raise ImportError('hidden: ' + name)\n"
            "sys.meta_path.insert(0, Block())\n"
            "find_spec = importlib.util.find_spec\n"  # as for a package not installed: no spec (lazy_loader asks)
            f"importlib.util.find_spec = lambda n, p=None: None if n.split('.')[0] in {hidden!r} else find_spec(n, p)\n"
            f"for m in {sorted(set(OPTIONAL.values()))!r}: importlib.import_module(m)\n"
            f"assert not any(m.split('.')[0] in {hidden!r} for m in sys.modules)\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
