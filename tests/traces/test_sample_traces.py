"""The bundled sample traces exist once — ``traces/sample_traces.jsonl``, beside the demo
experiment and the generator — and the build ships that folder as the package
``simulplay.sample_traces`` (no copy, no link); the generator runs from the repository root
and reproduces the file byte for byte."""

import subprocess
import sys
import tomllib
import zipfile
from importlib.resources import files
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "traces" / "sample_traces.jsonl"


def test_the_generator_runs_from_the_repository_root_and_reproduces_the_traces(tmp_path):
    out = tmp_path / "sample_traces.jsonl"
    subprocess.run([sys.executable, "-m", "traces.generate", str(out)], cwd=ROOT, check=True, capture_output=True)
    assert out.read_bytes() == TRACES.read_bytes()


def test_there_is_one_copy_and_the_demo_reads_it():
    assert TRACES.is_file() and not TRACES.is_symlink()
    assert not any(p.is_symlink() for p in (ROOT / "simulplay").rglob("*"))
    installed = files("simulplay.sample_traces")
    assert Path(str(installed.joinpath("sample_traces.jsonl"))).resolve() == TRACES.resolve()  # this checkout's file
    demo = tomllib.loads(installed.joinpath("demo.toml").read_text(encoding="utf-8"))
    assert demo["traces"] == ["sample_traces.jsonl"]  # relative to demo.toml: the same folder


@pytest.mark.slow
def test_the_wheel_holds_the_traces_and_the_demo_experiment(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                    str(tmp_path), str(ROOT)], check=True, capture_output=True)
    wheel = next(tmp_path.glob("simulplay-*.whl"))
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        assert z.read("simulplay/sample_traces/sample_traces.jsonl") == TRACES.read_bytes()
    assert "simulplay/sample_traces/demo.toml" in names
    assert not any(n.startswith("traces/") for n in names)  # mapped into the package, not a top-level folder
