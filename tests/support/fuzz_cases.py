"""Fuzz cases for the command line: real-shaped inputs, seeded mutations, and a judge.

The corpus holds what simulplay reads from users, each made by the code or tool that
writes it: the bundled sample traces (stream-per-line JSONL, and as row-per-update JSONL,
CSV and Parquet written by ``write_trace``), request manifests written by ``synth`` (fake
backend) and by the SimulEval importer, SimulEval instances logs (word, SentencePiece and
speech-to-speech lines in the shape SimulEval 1.1 writes) and a simulstream metrics log
(``tests/support/simulstream_logs.py``). A case is (seed, index): ``random.Random(f"{seed}-{index}")``
picks a target command, mutates its input with :func:`tests.support.mutators.mutate` and runs it.

The judge: a case is *accepted* (exit 0, its output file readable by pandas) or *refused*
(exit 2, at most eleven lines on stderr, each a ``… error: …`` line of at most
:data:`MAX_LINE` characters, and no output file, not even a temporary one); anything else —
a traceback, another exit code, a RuntimeWarning (NumPy's invalid casts), a leftover file —
is a failure, reported with its seed and index so ``bench/fuzz.py --seed S --case N`` replays it.

:func:`run_in_process` calls ``simulplay.cli.main`` with ``sys.argv`` patched and the
streams captured (about 0.5 s saved per case against a subprocess); :func:`run_subprocess`
runs the same case as ``python -m simulplay`` so that a test can show the two agree.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import os
import random
import subprocess
import sys
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from unittest import mock

import pandas as pd
import typer.main

from tests.support.mutators import mutate

ROOT = Path(__file__).resolve().parents[2]
_typer_get_command = typer.main.get_command
MAX_LINE = 1000  # characters in one error line
MAX_LINES = 11  # ten problems and "… and N more"


@dataclass(frozen=True)
class Target:
    """A command over one corpus file; ``{in}`` and ``{out}`` in ``args`` are replaced."""

    name: str
    source: str  # corpus file name (its suffix picks the mutators)
    args: tuple[str, ...]
    out: str  # output file name (its suffix says how pandas reads it)


TARGETS = (
    Target("validate-streams", "streams.jsonl", ("validate", "{in}", "--out", "{out}"), "stats.csv"),
    Target("validate-csv", "trace.csv", ("validate", "{in}", "--out", "{out}"), "stats.parquet"),
    Target("validate-parquet", "trace.parquet", ("validate", "{in}", "--out", "{out}"), "stats.csv"),
    Target("group-streams", "streams.jsonl", ("group", "{in}", "--rule", "timer:w=2", "--rule", "punct",
                                              "--out", "{out}"), "requests.parquet"),
    Target("group-rows", "trace.jsonl", ("group", "{in}", "--rule", "immediate", "--out", "{out}"), "requests.csv"),
    Target("group-csv", "trace.csv", ("group", "{in}", "--rule", "words", "--max-chars", "40", "--out", "{out}"),
           "requests.csv"),
    Target("group-parquet", "trace.parquet", ("group", "{in}", "--rule", "immediate", "--out", "{out}"),
           "requests.parquet"),
    Target("replay-parquet", "manifest.parquet", ("replay", "{in}", "--out", "{out}"), "summary.parquet"),
    Target("replay-csv", "manifest.csv", ("replay", "{in}", "--service", "scale=2", "--out", "{out}"), "summary.csv"),
    Target("replay-ready", "logged.csv", ("replay", "{in}", "--out", "{out}"), "summary.parquet"),
    Target("replay-logged", "logged.parquet", ("replay", "{in}", "--release", "request", "--out", "{out}"),
           "summary.csv"),
    Target("simuleval-word", "word.log", ("import-simuleval", "{in}", "--system", "A", "--out", "{out}"),
           "trace.parquet"),
    Target("simuleval-spm", "spm.log", ("import-simuleval", "{in}", "--system", "A", "--unit", "spm", "--out",
                                        "{out}"), "trace.csv"),
    Target("simuleval-s2s", "s2s.log", ("import-simuleval", "{in}", "--system", "A", "--as-manifest", "--out",
                                        "{out}"), "manifest.parquet"),
    Target("simulstream", "simulstream.jsonl", ("import-simulstream", "{in}", "--system", "A", "--out", "{out}"),
           "trace.parquet"),
)


@dataclass
class Outcome:
    code: int | None  # None: an exception escaped main()
    stdout: str
    stderr: str
    escaped: str = ""  # the traceback of an escaped exception
    warnings: list[str] = field(default_factory=list)


@dataclass
class Case:
    seed: int
    index: int
    target: Target
    steps: list[str]
    data: bytes

    def label(self) -> str:
        return (f"case {self.index} of seed {self.seed} ({self.target.name}; replay: python bench/fuzz.py "
                f"--seed {self.seed} --case {self.index}): " + "; ".join(self.steps))


# ---- the corpus --------------------------------------------------------------------


def build_corpus(folder: Path) -> dict[str, bytes]:
    """The unmutated inputs, by file name (written under ``folder`` on the way)."""
    from simulplay.traces import write_trace
    from simulplay.traces.readers import read_trace
    from tests.support.simulstream_logs import seamless_log

    folder.mkdir(parents=True, exist_ok=True)
    lines = (ROOT / "traces" / "sample_traces.jsonl").read_text(encoding="utf-8").splitlines()[:2]
    streams = [json.loads(line) for line in lines]
    for s in streams:
        s["updates"] = s["updates"][:24]
    (folder / "streams.jsonl").write_text("".join(json.dumps(s) + "\n" for s in streams), encoding="utf-8")
    frame = read_trace(folder / "streams.jsonl")
    for suffix in (".jsonl", ".csv", ".parquet"):
        write_trace(frame, folder / f"trace{suffix}", {"table": "trace"})
    _synthesized_manifest(folder)
    _simuleval_logs(folder, streams)
    seamless_log(folder / "simulstream.jsonl", [9.5, 6.25], seed=29)
    _logged_manifest(folder)
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file() and p.name in _SOURCES}


_SOURCES = {t.source for t in TARGETS}


def _synthesized_manifest(folder: Path) -> None:
    """A manifest written by ``synth`` (the deterministic fake backend) in Parquet and CSV."""
    import tests.support.fakes  # noqa: F401 - registers the fake-test backend
    from simulplay.backends import parse_backend
    from simulplay.grouping import parse_rule
    from simulplay.synthesis.run import synthesize_files

    config = parse_backend("fake-test")
    rules = [parse_rule("timer:w=3"), parse_rule("immediate")]
    res = synthesize_files(config, folder / "store", folder / "manifest.parquet", traces=[folder / "trace.parquet"],
                           rules=rules, contention_sample=0)
    res.manifest.to_csv(folder / "manifest.csv", index=False)


def _simuleval_logs(folder: Path, streams: list[dict]) -> None:
    """Speech-to-text logs (word and spm units) and a speech-to-speech log, one line per
    instance, as SimulEval 1.1 writes them (delays and elapsed in ms, source_length in ms)."""
    word, spm, s2s = [], [], []
    for k, s in enumerate(streams):
        words = [(w, u["time_s"]) for u in s["updates"] for w in u["text"].split()]
        delays = [1000.0 * t for _, t in words] + [1000.0 * s["source_s"]]
        source = [f"/data/wav/{s['talk_id']}_{k}.wav", "samplerate: 16000 Hz", "channels: 1"]
        base = {"index": k, "delays": delays, "elapsed": [d + 120.0 for d in delays], "reference": "",
                "source": source, "source_length": 1000.0 * s["source_s"]}
        text = " ".join(w for w, _ in words)
        word.append({**base, "prediction": text + " </s>", "prediction_length": len(delays)})
        pieces = ["\u2581" + w for w, _ in words] + ["\u2581</s>"]
        spm.append({**base, "prediction": text + " </s>", "prediction_spm": pieces, "prediction_length": len(pieces)})
        ready = [1000.0 * u["time_s"] for u in s["updates"]]
        s2s.append({"index": k, "prediction": f"/out/wavs/{k}_pred.wav", "delays": ready,
                    "durations": [400.0 * len(u["text"].split()) for u in s["updates"]], "elapsed": [],
                    "prediction_offset": ready[0], "intervals": [], "prediction_length": 1.0,
                    "source_length": 1000.0 * s["source_s"], "reference": None, "source": source[0]})
    for name, rows in (("word.log", word), ("spm.log", spm), ("s2s.log", s2s)):
        (folder / name).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def _logged_manifest(folder: Path) -> None:
    """The request manifest the SimulEval importer writes for the speech-to-speech log."""
    from simulplay.traces.importers import import_simuleval
    from simulplay.traces.importers.assembly import write_import

    res = import_simuleval(folder / "s2s.log", system="A", as_manifest=True)
    write_import(res, folder / "logged.parquet")
    res.frame.to_csv(folder / "logged.csv", index=False)


# ---- cases -------------------------------------------------------------------------


def make_case(seed: int, index: int, corpus: dict[str, bytes]) -> Case:
    rng = random.Random(f"{seed}-{index}")
    target = rng.choice(TARGETS)
    data, steps = mutate(corpus[target.source], Path(target.source).suffix, rng)
    return Case(seed, index, target, steps, data)


def case_args(case: Case, folder: Path) -> tuple[list[str], Path]:
    """Write the case's input under ``folder``; the command's arguments and output path."""
    folder.mkdir(parents=True, exist_ok=True)
    src = folder / case.target.source
    src.write_bytes(case.data)
    out = folder / case.target.out
    args = [str(src) if a == "{in}" else str(out) if a == "{out}" else a for a in case.target.args]
    return args, out


@functools.cache
def _click_command(app):
    return _typer_get_command(app)


def run_in_process(args: list[str]) -> Outcome:
    """``simulplay ARGS`` through the console entry point in this process. Typer's click
    command is built once and reused (building it is most of a small command's time);
    everything else — parsing, the command, ``main``'s error handling — runs as it does
    in a process of its own."""
    from simulplay.cli import main

    stdout, stderr = io.StringIO(), io.StringIO()
    argv = sys.argv
    code, escaped = None, ""
    with warnings.catch_warnings(record=True) as caught, mock.patch.object(typer.main, "get_command", _click_command):
        warnings.simplefilter("always")
        sys.argv = ["simulplay", *args]
        try:
            with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                main()
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except BaseException:  # noqa: BLE001 - what the fuzz test looks for
            escaped = traceback.format_exc()
        finally:
            sys.argv = argv
    shown = [f"{w.category.__name__}: {w.message} ({Path(w.filename).name}:{w.lineno})" for w in caught
             if issubclass(w.category, RuntimeWarning)]
    return Outcome(code, stdout.getvalue(), stderr.getvalue(), escaped, shown)


def run_subprocess(args: list[str]) -> Outcome:
    """``python -m simulplay ARGS`` in a real process (with this checkout first on the path)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "PYTHONWARNINGS": "error::RuntimeWarning"}
    proc = subprocess.run([sys.executable, "-m", "simulplay", *args], capture_output=True, text=True, env=env,
                          timeout=300)
    return Outcome(proc.returncode, proc.stdout, proc.stderr)


def judge(outcome: Outcome, out: Path, folder: Path, inputs: set[str]) -> str | None:
    """None when the case was accepted or refused as it should be; else what went wrong."""
    if outcome.escaped:
        return "traceback:\n" + outcome.escaped
    if "Traceback" in outcome.stderr:
        return "traceback on stderr:\n" + outcome.stderr
    if outcome.warnings:
        return "warning: " + "; ".join(outcome.warnings)
    left = sorted(p.name for p in folder.iterdir() if p.name not in inputs and p != out)
    if outcome.code == 0:
        if not out.is_file():
            return f"exit 0 without {out.name}"
        try:
            pd.read_parquet(out) if out.suffix == ".parquet" else pd.read_csv(out)
        except Exception as e:  # noqa: BLE001 - any failure to read is the finding
            return f"exit 0 but pandas cannot read {out.name}: {type(e).__name__}: {e}"
        return f"files left beside the output: {left}" if left else None
    if outcome.code != 2:
        return f"exit code {outcome.code}; stderr: {outcome.stderr[-2000:]}"
    lines = outcome.stderr.strip().splitlines()
    if not lines or len(lines) > MAX_LINES:
        return f"refused with {len(lines)} lines on stderr: {outcome.stderr[:2000]}"
    for line in lines:
        if ": error: " not in line or len(line) > MAX_LINE:
            return f"refused with a line that is no one-line error ({len(line)} characters): {line[:300]}"
    if out.exists():
        return f"refused but wrote {out.name}"
    return f"refused but left files: {left}" if left else None


def run_case(case: Case, folder: Path, *, runner=run_in_process) -> str | None:
    """Run one case in ``folder`` (fresh); None when it passed, else the finding."""
    args, out = case_args(case, folder)
    outcome = runner(args)
    return judge(outcome, out, folder, {case.target.source})
