"""MuST-C/IWSLT segmentation files: the YAML list that cuts talks into short-form segments.

Each entry is a mapping with ``wav`` (the talk's audio file), ``offset`` and ``duration``
(seconds on the talk's clock); other keys (``speaker_id``, ``rW``, ``uW``, …) are accepted
and ignored. MuST-C writes one flow mapping per line::

    - {duration: 3.500000, offset: 16.090000, rW: 0, uW: 0, speaker_id: spk.1096, wav: ted_1096.wav}

The entries with one ``wav`` are that talk's segments in file order: the k-th is segment
k (0-based), the index that segment wavs such as ``ted_1096_3.wav`` carry. The segments of
a talk must be in time order and must not overlap.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import yaml

from simulplay.core.errors import InputError
from simulplay.core.fields import Checker
from simulplay.core.tables import check_readable
from simulplay.traces.importers.jsonlines import log_fingerprint, talk_id_from_path

ACCEPTED = "a YAML list of {duration, offset, speaker_id, wav} mappings (MuST-C segmentation)"
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present; both are yaml.safe_load's


def ns(seconds: float) -> int:
    """Seconds as whole nanoseconds (exact comparisons of six-decimal YAML values)."""
    return round(seconds * 1e9)


@dataclass(frozen=True)
class Segment:
    """One entry of the segmentation file; times in seconds on the talk's clock."""

    entry: int  # 1-based position in the file
    line: int  # 1-based line where the entry starts
    wav: str
    talk_id: str  # the wav's stem
    index: int  # 0-based position among the entries of its talk
    offset_s: float
    duration_s: float

    @property
    def end_s(self) -> float:
        """Where the segment ends: ``offset_s + duration_s``, seconds on the talk's clock."""
        return self.offset_s + self.duration_s

    def describe(self, source: str | None = None) -> str:
        """``segment 3 of ted_1096.wav (segments.yaml entry 12, line 12)``; without ``source``
        (a message already located in the YAML) ``segment 3 of ted_1096.wav (entry 12)``."""
        if source is None:
            return f"segment {self.index} of {self.wav} (entry {self.entry})"
        return f"segment {self.index} of {self.wav} ({source} entry {self.entry}, line {self.line})"


@dataclass(frozen=True)
class Segmentation:
    """A checked segmentation file: its entries, per talk in order, and its fingerprint."""

    path: Path
    segments: tuple[Segment, ...]
    talks: dict[str, tuple[Segment, ...]]  # talk_id → its segments, talks in order of first entry
    sha256: str  # first 12 hex digits


def read_segmentation(path: str | Path) -> Segmentation:
    """Read and check a segmentation YAML (``yaml`` safe loading).

    Raises :class:`InputError` naming the file, line and key of each problem: broken YAML,
    an entry that is not a mapping or lacks ``wav``/``offset``/``duration``, a negative
    offset, a duration ≤ 0, overlapping or out-of-order segments of one talk.
    """
    p = check_readable(path)
    items = _load(p)
    check = Checker(str(p), pd.DataFrame(), row_label="line")
    segments: list[Segment] = []
    counts: dict[str, int] = {}
    for entry, (line, obj) in enumerate(items, start=1):
        seg = _entry(check, entry, line, obj, counts)
        if seg is not None:
            segments.append(seg)
    check.raise_if_any()
    talks: dict[str, list[Segment]] = {}
    for seg in segments:
        talks.setdefault(seg.talk_id, []).append(seg)
    for segs in talks.values():
        _check_order(check, segs)
    check.raise_if_any()
    return Segmentation(p, tuple(segments), {t: tuple(s) for t, s in talks.items()}, log_fingerprint(p))


def _load(p: Path) -> list[tuple[int, object]]:
    """The top-level list's items with the line where each starts."""
    try:
        text = p.read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError.at(p, f"is not UTF-8 text (byte {e.start})", accepted=ACCEPTED) from e
    loader = _LOADER(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        what = getattr(e, "problem", None) or str(e).splitlines()[0]
        if mark is None:
            raise InputError.at(p, f"broken YAML ({what})", accepted=ACCEPTED) from e
        raise InputError.at(p, f"broken YAML ({what} at column {mark.column + 1})", row=mark.line + 1,
                            row_label="line", accepted=ACCEPTED) from e
    finally:
        loader.dispose()
    if not isinstance(data, list) or not data:
        found = "an empty list" if data == [] else "empty" if data is None else f"a {type(data).__name__}"
        raise InputError.at(p, f"is {found}, not a list of segments", row=1, row_label="line", accepted=ACCEPTED)
    return [(item.start_mark.line + 1, obj) for item, obj in zip(node.value, data)]


def _entry(check: Checker, entry: int, line: int, obj: object, counts: dict[str, int]) -> Segment | None:
    n0 = len(check.problems)
    if not isinstance(obj, dict):
        check.add(f"entry {entry} is a {type(obj).__name__}, not a mapping", row=line, accepted=ACCEPTED)
        return None
    wav = obj.get("wav")
    if not isinstance(wav, str) or not talk_id_from_path(wav):
        check.add(f"entry {entry}: {'is missing' if 'wav' not in obj else f'{wav!r} is not a file name'}",
                  row=line, field="wav", accepted="the talk's audio file name, e.g. ted_1096.wav")
    offset = _number(check, entry, line, obj, "offset", "the segment's start in seconds on the talk's clock, ≥ 0")
    duration = _number(check, entry, line, obj, "duration", "the segment's length in seconds, > 0", positive=True)
    if len(check.problems) > n0:
        return None
    talk = talk_id_from_path(wav)
    index = counts.get(talk, 0)
    counts[talk] = index + 1
    return Segment(entry, line, wav, talk, index, offset, duration)


def _number(check: Checker, entry: int, line: int, obj: dict, key: str, accepted: str,
            *, positive: bool = False) -> float | None:
    if key not in obj:
        check.add(f"entry {entry}: is missing", row=line, field=key, accepted=accepted)
        return None
    v = obj[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        check.add(f"entry {entry}: {str(v)[:40]!r} is not a number", row=line, field=key, accepted=accepted)
    elif v != v or v in (float("inf"), float("-inf")):
        check.add(f"entry {entry}: {v} is not finite", row=line, field=key, accepted=accepted)
    elif v < 0 or (positive and v == 0):
        check.add(f"entry {entry}: {v:g} is not {'positive' if positive else '≥ 0'}", row=line, field=key,
                  accepted=accepted)
    else:
        return float(v)
    return None


def _check_order(check: Checker, segs: list[Segment]) -> None:
    """Each segment starts at or after the end of the one before it (exact, in nanoseconds)."""
    for prev, seg in zip(segs, segs[1:]):
        if ns(seg.offset_s) < ns(prev.offset_s) + ns(prev.duration_s):
            check.add(f"segment {seg.index} of {seg.wav} (entry {seg.entry}) starts at {seg.offset_s:.6f} s, "
                      f"before segment {prev.index} (entry {prev.entry}, line {prev.line}) ends at "
                      f"{prev.end_s:.6f} s", row=seg.line, field="offset",
                      accepted="the segments of one talk in time order, not overlapping")
