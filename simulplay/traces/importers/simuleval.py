"""Import SimulEval ``instances.log`` files (SimulEval 1.1, ``simuleval/evaluator/instance.py``).

Each line is one instance's ``summarize()``: ``index``, ``prediction``, ``delays`` and
``elapsed`` (ms, one per output unit), ``source`` (speech-to-text: a list whose first item
is the wav path; speech-to-speech: the path), ``source_length`` (ms).

* Speech-to-text → a trace. Units are ``prediction.split()`` (word logs), the characters
  of ``prediction`` (character logs: SimulEval removes spaces, so units are glued), or
  ``prediction_spm`` (spm logs: SentencePiece pieces, ``▁`` starts a word). ``--unit auto``
  picks word when the word count equals the number of delays, else char when the
  character count does (and the prediction has no whitespace), else spm when
  ``prediction_spm`` is present. ``</s>`` units are dropped with their delays (in
  character logs the four characters ``<``, ``/``, ``s``, ``>``). Consecutive units with
  the same time (``delays`` for the source clock, ``elapsed`` for the computation-aware
  clock) form one update at that time.
* Speech-to-speech (``durations`` present) → a request manifest: one request per emitted
  segment, ``ready_s`` = its time, ``audio_s`` = its duration, ``dispatch_s`` = its delay,
  ``service_s`` empty (the log holds no per-request service time), condition ``logged``.

``talk_id`` is the stem of the source wav name (``ted_1096_0``), or the index when the
line has no source; ``source_s`` is ``source_length / 1000``. All times in seconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from simulplay.core.fields import Checker
from simulplay.core.signature import base_signature
from simulplay.traces.importers.assembly import CLOCKS, ImportResult, ParsedStream, check_unique_talks, finish
from simulplay.traces.importers.detokenize import SPM_SPACE, UNITS, assemble, detokenize, group_runs, segments, squeeze
from simulplay.traces.importers.jsonlines import log_fingerprint, read_json_lines, refuse_other_log, talk_id_from_path
from simulplay.traces.importers.logfields import Fields, check_choice, check_system, shown

EOS = "</s>"
AUDIO_SUFFIXES = (".wav", ".flac", ".mp3", ".ogg", ".opus", ".m4a", ".aac", ".sph", ".webm")
MANIFEST_CONDITION = "logged"
MS = "milliseconds"


@dataclass
class _Head:
    """What every instance line has: where it is, which talk, how long the source is."""

    line: int
    talk_id: str
    source_s: float
    times_ms: list[float]


def import_simuleval(path: str | Path, *, system: str, clock: str = "source", unit: str = "auto",
                     as_manifest: bool = False) -> ImportResult:
    """Read a SimulEval instances.log into a trace (or, ``as_manifest``, a request manifest).

    The log's milliseconds become seconds from source start (``delays`` under the ``source``
    clock, ``elapsed`` under ``computation-aware``); ``source_s`` is ``source_length / 1000``.
    Raises :class:`InputError` naming file, line and field for every problem; nothing is
    returned unless the whole log is valid.
    """
    check_system(system)
    check_choice("--clock", clock, CLOCKS)
    check_choice("--unit", unit, ("auto", *UNITS))
    p = Path(path)
    check = Checker(str(p), pd.DataFrame(), row_label="line")
    if as_manifest:
        lines = read_json_lines(p, check)
        refuse_other_log(p, lines, "SimulEval")
        parsed = [x for x in (_manifest_instance(Fields(check, n, obj), clock, unit) for n, obj in lines)
                  if x is not None]
    else:
        instances, resolved = parse_text_log(p, check, clock, unit)
        parsed = [(head, resolved, stream) for head, stream in instances]
    check_unique_talks([(x[0].talk_id, x[0].line) for x in parsed], check)
    check.raise_if_any()
    sig = base_signature(table="manifest" if as_manifest else "trace", importer="simuleval",
                         log=p.name, log_sha256=log_fingerprint(p), clock=clock,
                         time_source="delays" if clock == "source" else "elapsed",
                         source_s_from="source_length", system=system)
    if as_manifest:
        return _manifest_result([x[0] for x in parsed], [x[2] for x in parsed], system, sig)
    sig["unit"] = resolved
    return finish([x[2] for x in parsed], system=system, source=str(p), signature=sig)


def parse_text_log(p: Path, check: Checker, clock: str, unit: str) -> tuple[list[tuple[_Head, ParsedStream]], str]:
    """Each speech-to-text instance of the log with its stream (seconds from the instance's
    start), and the log's unit (``unit``, or the one detected under ``auto``).

    Problems are recorded in ``check`` (a line that fails is left out); the caller raises.
    """
    lines = read_json_lines(p, check)
    refuse_other_log(p, lines, "SimulEval")
    parsed = [x for x in (_text_instance(Fields(check, n, obj), clock, unit) for n, obj in lines) if x is not None]
    units = {x[1] for x in parsed if x[1]}
    if len(units) > 1:
        check.add(f"instances look like different units ({', '.join(sorted(units))})",
                  accepted="one unit per log; pass --unit word, char or spm")
    resolved = next(iter(units), "word") if unit == "auto" else unit  # all-ambiguous logs read alike
    return [(head, stream) for head, _, stream in parsed], resolved


def _head(f: Fields, clock: str, times_key: str) -> _Head | None:
    n0 = len(f.check.problems)
    index = f.obj.get("index")
    if not f.present("index", "the instance index (a whole number)"):
        index = None
    elif isinstance(index, bool) or not isinstance(index, int):
        f.problem(f"{shown(index)} is not a whole number", "index", "the instance index (a whole number)")
    talk = _talk_id(f, index)
    source_s = f.number("source_length", f"the source duration in {MS}, > 0", positive=True)
    times = f.numbers(times_key, f"one time per unit in {MS} from source start, non-decreasing", ordered=True)
    if len(f.check.problems) > n0:
        return None
    return _Head(f.lineno, talk, source_s / 1000, times)


def _talk_id(f: Fields, index) -> str:
    src = f.obj.get("source")
    if src is None or src == "" or src == []:
        return str(index)
    first = src[0] if isinstance(src, list) else src
    accepted = "the source wav path, or a list whose first item is it"
    if not isinstance(first, str):
        f.problem(f"{shown(first)} is not a path", "source", accepted)
        return str(index)
    if isinstance(src, str) and any(c.isspace() for c in src) and not src.lower().endswith(AUDIO_SUFFIXES):
        f.problem("looks like source text (a text-input log, whose delays count source words, not ms)",
                  "source", accepted + " (speech-input logs only)")
    return talk_id_from_path(first) or str(index)


def _text_instance(f: Fields, clock: str, unit: str):
    if "durations" in f.obj:
        f.problem("a speech-to-speech instance holds request clocks, not text", "durations",
                  "a speech-to-text log, or --as-manifest to import this one as a request manifest")
        return None
    head = _head(f, clock, "delays" if clock == "source" else "elapsed")
    pred = f.string("prediction", "the predicted text")
    n0 = len(f.check.problems)
    if clock != "source":
        delays = f.numbers("delays", f"one delay per unit in {MS}")
        if delays is not None and head is not None and len(delays) != len(head.times_ms):
            f.problem(f"has {len(head.times_ms)} items but delays has {len(delays)}", "elapsed",
                      "one elapsed time per delay")
    if head is None or pred is None or len(f.check.problems) > n0:
        return None
    units, detected = _units(f, pred, len(head.times_ms), unit)
    if units is None:
        return None
    units, times = _drop_eos(units, head.times_ms, detected)
    keys, runs = group_runs(times, units)
    t, x, g = assemble([k / 1000 for k in keys], segments(runs, detected))
    stream = ParsedStream(head.talk_id, head.line, head.source_s, t, x, g, detokenize(units, detected))
    ambiguous = detected != "spm" and len(pred.split()) == len(pred)  # one one-character word, or nothing
    return head, "" if ambiguous else detected, stream


def _units(f: Fields, pred: str, n: int, unit: str) -> tuple[list[str] | None, str]:
    """The prediction's units and their kind, checked against the number of times ``n``."""
    words, chars = pred.split(), list(pred)
    has_space = any(c.isspace() for c in pred)
    if unit == "spm" or (unit == "auto" and "prediction_spm" in f.obj):
        pieces = f.strings("prediction_spm", "the list of SentencePiece pieces, one per delay")
        if pieces is None:
            return None, "spm"
        if len(pieces) != n:
            f.problem(f"has {len(pieces)} pieces but there are {n} delays", "prediction_spm", "one piece per delay")
            return None, "spm"
        if squeeze(detokenize(pieces, "spm")) != squeeze(pred):  # whitespace runs are one boundary
            f.problem("does not detokenize to prediction ('▁' → space)", "prediction_spm",
                      "the pieces SimulEval joined into prediction")
            return None, "spm"
        return list(pieces), "spm"
    if unit in ("auto", "word") and len(words) == n:
        return words, "word"
    if unit in ("auto", "char") and len(chars) == n and not has_space:
        return chars, "char"
    wanted = {"auto": "one delay per word (word logs), per character (character logs, no spaces) or per "
                      "prediction_spm piece", "word": "one delay per word (--unit word)",
              "char": "one delay per character and no spaces (--unit char)"}[unit]
    f.problem(f"has {len(words)} words and {len(chars)} characters but there are {n} delays", "prediction",
              wanted)
    return None, unit


def _drop_eos(units: list[str], times: list[float], unit: str) -> tuple[list[str], list[float]]:
    """Remove ``</s>`` units with their times (four characters in character logs)."""
    if unit == "char":
        keep = np.ones(len(units), bool)
        text = "".join(units)
        start = text.find(EOS)
        while start >= 0:
            keep[start:start + len(EOS)] = False
            start = text.find(EOS, start + len(EOS))
    else:
        keep = np.array([u.replace(SPM_SPACE, "") != EOS for u in units], dtype=bool)
    return [u for u, k in zip(units, keep) if k], [t for t, k in zip(times, keep) if k]


def _manifest_instance(f: Fields, clock: str, unit: str):
    if "durations" not in f.obj:
        f.problem("is missing: a speech-to-text instance holds text, not request clocks", "durations",
                  "a speech-to-speech log, or no --as-manifest to import this one as a trace")
        return None
    head = _head(f, clock, "delays" if clock == "source" else "elapsed")
    n0 = len(f.check.problems)
    durations = f.numbers("durations", f"one audio duration per segment in {MS}")
    delays = f.numbers("delays", f"one delay per segment in {MS}") if clock != "source" else None
    if head is None or len(f.check.problems) > n0:
        return None
    if delays is None:
        delays = head.times_ms
    if clock != "source" and durations and not head.times_ms:
        f.problem("is empty (SimulEval 1.1 writes no elapsed times for speech output)", "elapsed",
                  "--clock source for this log")
        return None
    for key, values in (("durations", durations), ("delays", delays)):
        if len(values) != len(head.times_ms):
            f.problem(f"has {len(values)} items but {'elapsed' if clock != 'source' else 'delays'} has "
                      f"{len(head.times_ms)}", key, "one item per emitted speech segment")
            return None
    if not durations:
        f.problem("is empty: the instance emitted no speech", "durations", "at least one segment per talk")
        return None
    return head, "", (delays, durations)


def _manifest_result(heads: list[_Head], clocks: list[tuple[list[float], list[float]]], system: str,
                     sig: dict) -> ImportResult:
    rows, stats = [], []
    for h, (delays, durations) in zip(heads, clocks):
        for k, (ready, delay, dur) in enumerate(zip(h.times_ms, delays, durations)):
            rows.append({"talk_id": h.talk_id, "system": system, "condition": MANIFEST_CONDITION, "seq": k,
                         "dispatch_s": delay / 1000, "service_s": np.nan, "audio_s": dur / 1000,
                         "source_s": h.source_s, "ready_s": ready / 1000})
        stats.append({"talk_id": h.talk_id, "system": system, "requests": len(durations),
                      "audio_s": sum(durations) / 1000, "first_ready_s": h.times_ms[0] / 1000,
                      "source_s": h.source_s})
    sig["condition"] = MANIFEST_CONDITION
    return ImportResult("manifest", pd.DataFrame(rows), pd.DataFrame(stats), sig)
