"""The bundled sample traces exist once — ``traces/sample_traces.jsonl`` (SPEC §7), which
``simulplay/data/sample_traces.jsonl`` (what the demo reads) links to — and the generator
reproduces that file byte for byte."""

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT / "traces" / "sample_traces.jsonl"
PACKAGED = ROOT / "simulplay" / "data" / "sample_traces.jsonl"


def test_the_generator_reproduces_the_bundled_sample_traces_byte_for_byte(tmp_path):
    out = tmp_path / "sample_traces.jsonl"
    subprocess.run([sys.executable, str(ROOT / "traces" / "generate.py"), str(out)], check=True, capture_output=True)
    assert out.read_bytes() == TRACES.read_bytes()


def test_there_is_one_copy_and_the_demo_reads_it():
    assert TRACES.is_file() and not TRACES.is_symlink()
    assert PACKAGED.is_symlink() and PACKAGED.resolve() == TRACES.resolve()  # a link, not a second copy
    demo = tomllib.loads((ROOT / "simulplay" / "data" / "demo.toml").read_text(encoding="utf-8"))
    assert demo["traces"] == ["sample_traces.jsonl"]  # relative to demo.toml: the packaged link
