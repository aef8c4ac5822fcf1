"""A command whose optional extra is missing stops before any work with one line naming the
extra (`simulplay quality needs the quality extra: pip install 'simulplay[quality]'`), exit
code 2, no traceback and nothing written.

The extra is hidden from a `simulplay` subprocess by a ``sitecustomize`` module first on its
PYTHONPATH: a finder first on ``sys.meta_path`` that refuses the extra's top-level modules
(ImportError), as when the packages are not installed, whatever this machine has installed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.fake_cosyvoice import make_checkout, make_model_and_prompt

ROOT = Path(__file__).resolve().parents[2]

BLOCKER = '''
import os, sys
HIDDEN = set(os.environ.get("HIDE_MODULES", "").split(","))
class Hide:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HIDDEN:
            raise ImportError(f"{name} is hidden", name=name)
        return None
sys.meta_path.insert(0, Hide())
'''

TRACE = '{"talk_id": "t1", "system": "A", "source_s": 4.0, "updates": [{"time_s": 1.0, "text": "Hello there."}]}\n'


def hidden_run(tmp_path: Path, hide: list[str], *args: str) -> subprocess.CompletedProcess:
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(BLOCKER)
    env = dict(os.environ, HIDE_MODULES=",".join(hide),
               PYTHONPATH=os.pathsep.join([str(site), str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "simulplay", *args], cwd=tmp_path / "work", env=env,
                          capture_output=True, text=True, timeout=120)


def files_under(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def _xtts(w: Path) -> list[str]:
    return ["synth", "t.jsonl", "--rule", "immediate", "--backend", f"xtts:model_dir={w / 'no-model'}",
            "--store", "out/store", "--out", "out/m.parquet"]


def qwen_weights(w: Path) -> Path:
    """A folder the qwen3-asr settings accept (a Hugging Face model's config.json)."""
    folder = w.parent / "qwen"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    return folder


def _cosyvoice(w: Path) -> list[str]:
    checkout = make_checkout(w.parent / "checkout")
    (checkout / "cosyvoice" / "cli" / "cosyvoice.py").write_text("import hyperpyyaml\n")  # as the real one does
    model, wav = make_model_and_prompt(w.parent)
    return ["synth", "t.jsonl", "--rule", "immediate", "--backend",
            f"cosyvoice:checkout={checkout},model_dir={model},prompt_wav={wav},prompt_text=hello",
            "--store", "out/store", "--out", "out/m.parquet"]


#: extra → (the modules hidden, the command line in a folder holding t.jsonl).
CASES = {
    "quality": (["speechmos"], lambda w: ["quality", "m.parquet", "--store", "store", "--out", "out/q.csv"]),
    "asr": (["faster_whisper"], lambda w: ["asr", "m.parquet", "--store", "store", "--language", "en",
                                           "--out", "out/t.parquet"]),
    "vad": (["silero_vad"], lambda w: ["edges", "m.parquet", "--store", "store", "--out", "out/e.csv"]),
    "textlatency": (["omnisteval"], lambda w: ["textlatency", "t.jsonl", "--references", "r.txt", "--segmentation",
                                               "s.yaml", "--summary", "s.parquet", "--a", "A", "--f", "F",
                                               "--out", "out/tl.csv"]),
    "ray": (["ray"], lambda w: ["synth", "t.jsonl", "--rule", "immediate", "--executor", "ray",
                                "--store", "out/store", "--out", "out/m.parquet"]),
    "xtts": (["TTS"], _xtts),
    "qwen": (["qwen_asr"], lambda w: ["asr", "m.parquet", "--store", "store", "--language", "en",
                                      "--recognizer", f"qwen3-asr:model={qwen_weights(w)}", "--out", "out/t.parquet"]),
    "cosyvoice": (["hyperpyyaml"], _cosyvoice),
}


@pytest.mark.parametrize("extra", sorted(CASES))
def test_a_missing_extra_is_one_line_before_any_work(tmp_path, extra):
    hide, command = CASES[extra]
    work = tmp_path / "work"
    (work / "out").mkdir(parents=True)
    (work / "t.jsonl").write_text(TRACE)
    args = command(work)
    before = files_under(work)
    proc = hidden_run(tmp_path, hide, *args)
    assert proc.stderr == f"simulplay {args[0]} needs the {extra} extra: pip install 'simulplay[{extra}]'\n"
    assert proc.returncode == 2 and proc.stdout == ""
    assert files_under(work) == before, "files were written before the refusal"


def test_similarity_names_resemblyzer_and_joins_need_no_extra(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    proc = hidden_run(tmp_path, ["resemblyzer"], "quality", "m.parquet", "--store", "s", "--out", "q.csv",
                      "--metrics", "similarity")
    assert proc.returncode == 2 and proc.stderr == (
        "simulplay quality needs the quality extra: pip install 'simulplay[quality]' && "
        "pip install --no-deps Resemblyzer==0.1.4\n")
    proc = hidden_run(tmp_path, ["speechmos", "resemblyzer"], "quality", "m.parquet", "--store", "s", "--out",
                      "q.csv", "--metrics", "joins")
    assert "needs the" not in proc.stderr and "is not an audio store" in proc.stderr  # on to the store given
