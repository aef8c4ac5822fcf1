"""Short-form SimulEval logs → long-form streams, with the talks' segmentation YAML.

A short-form ``instances.log`` holds one instance per segment of a talk, each timed from
its own start. With the segmentation file (:mod:`segmentation`) every instance is matched
to its segment and its times are moved onto the talk's clock:

* Matching (``match``): ``name`` — the instance's source wav ``<talk>_<N>.wav`` is segment
  N of ``<talk>.wav`` in the YAML's order (fairseq's MuST-C naming); ``position`` — the
  n-th instance of the log is the n-th entry of the YAML; ``auto`` (default) — ``name``
  when every instance's wav stem ends in ``_<N>``, ``position`` when none does. Either way
  every segment needs exactly one instance and its ``source_length`` must equal the
  segment's ``duration`` within 10 ms, so a segmentation that does not fit is refused
  rather than trusted.
* Times: ``offset + delays / 1000`` (source clock) or ``offset + elapsed / 1000``
  (computation-aware clock: SimulEval measures ``elapsed`` from the instance's start).
  Delays beyond the segment's end are kept (SimulEval writes them). An update that would
  come before the previous update of its talk (the previous segment still emitting when
  the next one starts, common under the computation-aware clock) waits for it: its time
  becomes the previous update's; such updates are counted (``held``) and signed.
* Text: a talk's segments are joined in order with a space between segments; ``</s>`` is
  dropped; a segment with no output text adds no update (counted as ``empty``).
* ``source_s``: the talk wav's duration (``wavs``) or the end of its last segment.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pandas as pd

from simulplay.core.errors import InputError, Problem
from simulplay.core.fields import Checker
from simulplay.core.signature import base_signature
from simulplay.traces.importers.assembly import CLOCKS, ImportResult, ParsedStream, finish
from simulplay.traces.importers.detokenize import UNITS
from simulplay.traces.importers.jsonlines import log_fingerprint
from simulplay.traces.importers.logfields import check_choice, check_system
from simulplay.traces.importers.segmentation import Segment, Segmentation, ns, read_segmentation
from simulplay.traces.importers.simuleval import parse_text_log
from simulplay.traces.importers.wavinfo import wav_frames
from simulplay.traces.model import word_count

MATCHES = ("auto", "name", "position")
TOLERANCE_NS = 10_000_000  # 10 ms between source_length and the segment's duration
INDEXED = re.compile(r"^(?P<talk>.+)_(?P<index>\d+)$")
NAMED = "source wavs named <talk>_<N>.wav, N the segment's position among its talk's entries (0-based)"


@dataclasses.dataclass
class _Piece:
    """One instance matched to its segment: its log line and its stream (segment clock)."""

    line: int
    name: str
    source_s: float
    stream: ParsedStream
    segment: Segment | None = None


def import_simuleval_segmented(path: str | Path, segmentation: str | Path, *, system: str, clock: str = "source",
                               unit: str = "auto", wavs: str | Path | None = None,
                               match: str = "auto") -> ImportResult:
    """Stitch a short-form SimulEval instances.log into one long-form stream per talk.

    Times in seconds on the talk's clock. Raises :class:`InputError` naming the log line and
    the YAML entry of every problem; nothing is returned unless log and segmentation agree.
    """
    check_system(system)
    check_choice("--clock", clock, CLOCKS)
    check_choice("--unit", unit, ("auto", *UNITS))
    check_choice("--match", match, MATCHES)
    if wavs is not None and not Path(wavs).is_dir():
        raise InputError.at(wavs, "is not a folder", field="--wavs", accepted="the folder holding the talks' wavs")
    seg = read_segmentation(segmentation)
    p = Path(path)
    check = Checker(str(p), pd.DataFrame(), row_label="line")
    instances, resolved = parse_text_log(p, check, clock, unit)
    check.raise_if_any()
    pieces = [_Piece(h.line, h.talk_id, h.source_s, s) for h, s in instances]
    mode = _mode(pieces, match, check)
    check.raise_if_any()
    (_by_name if mode == "name" else _by_position)(pieces, seg, check)
    check.raise_if_any()
    _check_durations(pieces, seg, check)
    sources = {talk: _source_s(segs, seg, wavs, check) for talk, segs in seg.talks.items()}
    check.raise_if_any()
    by_segment = {pc.segment.entry: pc for pc in pieces}
    stitched = [_stitch(talk, [by_segment[s.entry] for s in segs], sources[talk]) for talk, segs in seg.talks.items()]
    sig = base_signature(
        table="trace", importer="simuleval", log=p.name, log_sha256=log_fingerprint(p),
        segmentation=seg.path.name, segmentation_sha256=seg.sha256, match=mode, clock=clock,
        time_source="offset + delays" if clock == "source" else "offset + elapsed",
        source_s_from="wav duration" if wavs is not None else "last segment end",
        held_updates=sum(h for _, h, _ in stitched), unit=resolved, system=system)
    res = finish([s for s, _, _ in stitched], system=system, source=str(p), signature=sig)
    return dataclasses.replace(res, stats=_stats(stitched, seg, system))


def _mode(pieces: list[_Piece], match: str, check: Checker) -> str:
    """``name`` or ``position``; a log whose names mix both conventions is refused."""
    if match == "position":
        return match
    named = [INDEXED.match(pc.name) is not None for pc in pieces]
    if match == "auto" and not any(named):
        return "position"
    if not all(named):
        first = pieces[named.index(True)] if any(named) else None
        odd = pieces[named.index(False)]
        but = f", unlike {first.name} at line {first.line}" if first is not None and match == "auto" else ""
        check.add(f"{odd.name} carries no segment index (…_N){but}", row=odd.line, field="source",
                  accepted=f"{NAMED} for every instance, or --match position (the log in the YAML's order)")
    return "name"


def _by_name(pieces: list[_Piece], seg: Segmentation, check: Checker) -> None:
    taken: dict[int, _Piece] = {}
    for pc in pieces:
        m = INDEXED.match(pc.name)
        talk, k = m.group("talk"), int(m.group("index"))
        segs = seg.talks.get(talk)
        if pc.name in seg.talks:
            check.add(f"{pc.name} is the whole talk's wav, not one of its segments", row=pc.line, field="source",
                      accepted="a short-form log (one instance per segment); import a long-form log without "
                      "--segmentation")
        elif segs is None:
            check.add(f"{pc.name}: no entry of {seg.path} has wav {talk} (a talk not in the segmentation)",
                      row=pc.line, field="source", accepted=f"{NAMED}, <talk>.wav listed in the YAML")
        elif k >= len(segs):
            check.add(f"{pc.name} names segment {k} of {segs[0].wav}, but {seg.path} has {len(segs)} segment(s) "
                      f"of it (0–{len(segs) - 1})", row=pc.line, field="source", accepted=NAMED)
        elif segs[k].entry in taken:
            first = taken[segs[k].entry]
            check.add(f"{pc.name} is {segs[k].describe(str(seg.path))}, already the instance at line {first.line}",
                      row=pc.line, field="source", accepted="one instance per segment")
        else:
            pc.segment = segs[k]
            taken[segs[k].entry] = pc
    if check.problems:
        return
    missing = [s for s in seg.segments if s.entry not in taken]
    if missing:
        s = missing[0]
        check.problems.append(Problem(
            str(seg.path), f"{s.describe()} has no instance in {check.source}: the log has "
            f"{len(pieces)} instances for {len(seg.segments)} segments ({len(missing)} without one)",
            row=s.line, row_label="line", accepted="a log with one instance per segment of the YAML"))


def _by_position(pieces: list[_Piece], seg: Segmentation, check: Checker) -> None:
    n, m = len(pieces), len(seg.segments)
    if n > m:
        check.add(f"instance {m + 1} ({pieces[m].name}) has no segment: the log has {n} instances, {seg.path} "
                  f"{m} segments", row=pieces[m].line, accepted="one instance per segment, in the YAML's order")
    elif n < m:
        s = seg.segments[n]
        check.problems.append(Problem(
            str(seg.path), f"{s.describe()} has no instance: the log {check.source} has {n} "
            f"instances for {m} segments", row=s.line, row_label="line",
            accepted="one instance per segment, in the YAML's order"))
    else:
        for pc, s in zip(pieces, seg.segments):
            pc.segment = s


def _check_durations(pieces: list[_Piece], seg: Segmentation, check: Checker) -> None:
    for pc in pieces:
        s = pc.segment
        diff = abs(ns(pc.source_s) - ns(s.duration_s))
        if diff > TOLERANCE_NS:
            check.add(f"{pc.name}: {pc.source_s * 1000:g} ms differs by {diff / 1e6:.3f} ms from the "
                      f"{s.duration_s:.6f} s of {s.describe(str(seg.path))}", row=pc.line, field="source_length",
                      accepted="the segment's duration within 10 ms (a segmentation that fits the log)")


def _source_s(segs: tuple[Segment, ...], seg: Segmentation, wavs, check: Checker) -> float | None:
    """The talk wav's duration (seconds), or its last segment's end without ``wavs``."""
    if wavs is None:
        return segs[-1].end_s
    first = segs[0]
    wav = Path(wavs) / Path(first.wav.replace("\\", "/")).name
    where = dict(source=str(seg.path), row_label="line", field="wav")
    if not wav.is_file():
        check.problems.append(Problem(message=f"talk {first.talk_id}: no wav at {wav}", row=first.line,
                                      accepted="--wavs DIR holding the YAML's wav files", **where))
        return None
    frames, rate = wav_frames(wav)
    duration = frames / rate
    late = [s for s in segs if ns(s.end_s) > ns(duration) + TOLERANCE_NS]
    if late:
        s = late[0]
        check.problems.append(Problem(
            message=f"{s.describe()} ends at {s.end_s:.6f} s, after the {duration:.6f} s of {wav}",
            row=s.line, accepted="segments inside the talk's wav (within 10 ms)", **where))
    return duration


def _stitch(talk: str, pieces: list[_Piece], source_s: float) -> tuple[ParsedStream, int, int]:
    """The talk's stream on its clock, the number of updates held back, the empty segments."""
    times: list[float] = []
    texts: list[str] = []
    glue: list[bool] = []
    refs: list[str] = []
    held = empty = 0
    for pc in pieces:
        s = pc.stream
        empty += not s.texts
        for i, (t, x, g) in enumerate(zip(s.times, s.texts, s.glue)):
            at = pc.segment.offset_s + t
            if times and at < times[-1]:
                held += 1
                at = times[-1]
            times.append(at)
            texts.append(x)
            glue.append(bool(g) and i > 0)  # a space between segments
        if s.reference:
            refs.append(s.reference)
    return ParsedStream(talk, pieces[0].line, source_s, times, texts, glue, " ".join(refs)), held, empty


def _stats(stitched: list[tuple[ParsedStream, int, int]], seg: Segmentation, system: str) -> pd.DataFrame:
    return pd.DataFrame([{
        "talk_id": s.talk_id, "system": system, "segments": len(seg.talks[s.talk_id]), "empty": empty,
        "updates": len(s.texts), "words": word_count(s.reference), "first_s": s.times[0], "last_s": s.times[-1],
        "held": held, "source_s": s.source_s,
    } for s, held, empty in stitched])
