"""Small objects for tests: streams, traces, manifests, logs and reference loops.

Builders used by more than one test file live here (lhotse's ``testing/dummies.py``);
values a test asserts are worked out in the test itself.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from simulplay.grouping import parse_rule
from simulplay.traces import write_trace
from simulplay.traces.model import Stream, frame_from_streams

WORDS = ("the quick brown fox jumps over the lazy dog while seven small birds sing a song about the "
         "river and the mountain far away from home").split()

# one output whose third request stalls playback: (dispatch_s, service_s, audio_s) rows …
MIDDLE_STALL_REQUESTS = [(1.0, 0, 2.0), (2.5, 0, 1.0), (6.0, 0, 1.0), (6.5, 0, 2.0)]
# … and the same as a (ready_s, duration_s) timeline (zero service: ready at dispatch)
MIDDLE_STALL = [(r, d) for r, _, d in MIDDLE_STALL_REQUESTS]

# two English talks of system A with short, clearly spoken sentences (real recognition tests)
ASR_TALKS = [
    {"talk_id": "t1", "system": "A", "source_s": 8.0, "updates": [
        {"time_s": 0.0, "text": "Good morning everyone."}, {"time_s": 1.0, "text": "Today we will talk about rivers"},
        {"time_s": 2.5, "text": "and mountains in the north."},
        {"time_s": 4.0, "text": "Please listen carefully because"},
        {"time_s": 5.0, "text": "the weather changes quickly."}]},
    {"talk_id": "t2", "system": "A", "source_s": 8.0, "updates": [
        {"time_s": 0.0, "text": "My sister bought fresh bread"}, {"time_s": 1.5, "text": "at the market yesterday."},
        {"time_s": 3.0, "text": "Then she walked home slowly"},
        {"time_s": 4.5, "text": "along the green river path."}]},
]


def stream(times, texts=None, glue=None, source_s=100.0, talk_id="t1", system="A") -> Stream:
    times = np.asarray(times, dtype=float)
    texts = tuple(texts) if texts is not None else tuple(f"w{i}" for i in range(len(times)))
    glue = np.asarray(glue, dtype=bool) if glue is not None else np.zeros(len(times), bool)
    return Stream(talk_id, system, source_s, times, texts, glue)


def trace_frame(n_streams=2, n_updates=5, source_s=30.0) -> pd.DataFrame:
    rows = []
    for k in range(n_streams):
        for i in range(n_updates):
            rows.append({"talk_id": f"talk{k // 2}", "system": "AF"[k % 2], "seq": i,
                         "time_s": float(i), "text": f"word{i} more", "source_s": source_s})
    return pd.DataFrame(rows)


def manifest(outputs: dict, source_s=20.0) -> pd.DataFrame:
    """``outputs``: {(talk, system, condition): [(dispatch, service, audio), ...]}."""
    rows = []
    for (talk, system, cond), reqs in outputs.items():
        for i, (d, s, a) in enumerate(reqs):
            rows.append({"talk_id": talk, "system": system, "condition": cond, "seq": i,
                         "dispatch_s": d, "service_s": s, "audio_s": a, "source_s": source_s})
    return pd.DataFrame(rows)


def reference_playback(ready, dur):
    """The docs/concepts.md#serial-playback recurrence, one part at a time, skipping silent parts."""
    c_prev, first, idle, d_sum, ends = 0.0, None, 0.0, 0.0, []
    for r, d in zip(ready, dur):
        if d <= 0:
            ends.append(None)
            continue
        p = max(r, c_prev)
        idle += max(0.0, r - c_prev)
        first = p if first is None else first
        c_prev = p + d
        d_sum += d
        ends.append(c_prev)
    return {"first": first, "idle": idle, "audio": d_sum, "end": c_prev if first is not None else None,
            "ends": ends}


def reference_clock(dispatch, service):
    ready, prev = [], -np.inf
    for d, s in zip(dispatch, service):
        start = max(d, prev)
        prev = start + s
        ready.append(prev)
    return np.array(ready)


def small_trace(path: Path, n_streams: int = 2, n_updates: int = 14, source_s: float = 30.0) -> None:
    """A seeded trace file of short English updates: streams ``talk{k // 2}``, systems A/F
    alternating, 1–2 s between updates, a full stop on every fourth; source 30 s unless
    given."""
    rng = np.random.default_rng(0)
    streams = []
    for k in range(n_streams):
        times = np.cumsum(rng.integers(1, 3, n_updates)).astype(float)
        texts = [" ".join(rng.choice(WORDS, int(rng.integers(1, 5)))) + ("." if i % 4 == 3 else "")
                 for i in range(n_updates)]
        streams.append(stream(times, texts, talk_id=f"talk{k // 2}", system="AF"[k % 2], source_s=source_s))
    write_trace(frame_from_streams(streams), path, {"table": "trace"})


def groups(rule: str, s: Stream) -> list[tuple]:
    """(first, last, dispatch_s to 1 ns, trigger) of each group ``rule`` makes of ``s``."""
    return [(g.first, g.last, round(g.dispatch_s, 9), g.trigger) for g in parse_rule(rule).group(s)]


def trace_updates(frame: pd.DataFrame, talk: str | None = None) -> list[tuple]:
    """(time_s, text, glue) of a trace frame's updates, of one talk if given."""
    rows = frame if talk is None else frame[frame["talk_id"] == talk]
    return list(zip(rows["time_s"], rows["text"], rows["glue"]))


def write_jsonl(folder: Path, lines: list, name: str, *, ensure_ascii: bool = True) -> Path:
    """A log of one JSON object per line (a str line is written as given, e.g. broken JSON)."""
    p = folder / name
    p.write_text("".join((x if isinstance(x, str) else json.dumps(x, ensure_ascii=ensure_ascii)) + "\n"
                         for x in lines), encoding="utf-8")
    return p


#: The backend table of an experiment on real Piper with one onnxruntime thread.
PIPER_BACKEND = {"name": "piper", "intra_op_threads": 1}


def toml_value(value) -> str:
    """``value`` (a str, bool, number or list of them) as TOML writes it: a JSON string is
    a TOML basic string, and a list of them a TOML array."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False) if isinstance(value, str) else repr(value)


def _toml_keys(table: dict) -> str:
    return "".join(f"{k} = {toml_value(v)}\n" for k, v in table.items() if v is not None)


def experiment_toml(*, backend: dict | list[dict] | None = None, analysis: dict | None = None,
                    tables: dict[str, dict] | None = None, **keys) -> str:
    """The text of an experiment file: the tests' tiny experiment (``name = "tiny"``, the
    trace ``trace.jsonl`` of :func:`small_trace`, systems A and F, rules ``immediate`` and
    ``timer:w=3`` against ``immediate``, ``out = "run"``) with ``keys`` added or replacing
    top-level keys (``None`` leaves a key out); ``backend`` the ``[backend]`` table (fake-test
    unless given; a list: one ``[[backend]]`` table each, ``{}``: none), ``analysis`` the
    ``[analysis]`` table (draws 200, seed 0 unless given), ``tables`` any further tables."""
    top = {"name": "tiny", "traces": ["trace.jsonl"], "a": "A", "f": "F", "rules": ["immediate", "timer:w=3"],
           "reference": "immediate", "out": "run"}
    text = _toml_keys({**top, **keys})
    backend = {"name": "fake-test"} if backend is None else backend
    if isinstance(backend, list):
        text += "".join(f"\n[[backend]]\n{_toml_keys(b)}" for b in backend)
    elif backend:
        text += f"\n[backend]\n{_toml_keys(backend)}"
    text += f"\n[analysis]\n{_toml_keys({'draws': 200, 'seed': 0} if analysis is None else analysis)}"
    return text + "".join(f"\n[{name}]\n{_toml_keys(table)}" for name, table in (tables or {}).items())


def write_experiment(folder: Path, name: str = "exp.toml", *, trace: bool = True, **options) -> Path:
    """:func:`experiment_toml` (``options``) written to ``folder/name``, beside a
    :func:`small_trace` of two talks × A/F of 6 updates at ``folder/trace.jsonl`` unless
    ``trace`` is False; the file's path."""
    if trace:
        small_trace(folder / "trace.jsonl", n_streams=4, n_updates=6)
    path = folder / name
    path.write_text(experiment_toml(**options), encoding="utf-8")
    return path
