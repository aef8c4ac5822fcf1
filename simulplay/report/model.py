"""What a report is made of: signed tables and figures, before any file is written."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from simulplay.core.signature import compact_signatures, format_signature, merge

#: Column labels shown in Markdown, HTML and LaTeX (CSV keeps the column names).
LABELS = {
    "backend": "backend", "realization": "realization", "system": "system", "condition": "condition",
    "talk_id": "talk", "n_talks": "talks", "requests_per_talk": "requests/talk", "first_play_s": "first playback (s)",
    "audio_s": "audio D (s)", "idle_s": "idle I (s)", "offset_s": "offset L (s)", "source_s": "source S (s)",
    "delta_ref_s": "δ(0) (s)", "delta_s": "δ(w) (s)", "eta_s": "η (s)", "ci_low_s": "CI low (s)",
    "ci_high_s": "CI high (s)", "n_negative": "η<0", "n_zero": "η=0", "n_positive": "η>0",
    "duration_part_s": "duration part (s)",
    "idle_part_s": "idle part (s)", "p1": "P1", "p2": "P2", "delta_p1_s": "δ(P1) (s)", "delta_p2_s": "δ(P2) (s)",
    "diff_s": "δ(P1)−δ(P2) (s)", "streams": "streams", "updates": "updates", "words": "words",
    "median_words": "median words", "p90_words": "90th pct words", "pct_le2_words": "≤2 words (%)",
    "pct_terminal_punct": "final punct. (%)", "after_source_end": "updates after source end", "groups": "groups",
    "requests": "requests", "failed": "failed requests", "threshold": "VAD threshold", "rule": "rule",
    "reference": "reference", "reduction_s": "reduction (s)", "nonspeech_s": "non-speech (s)",
    "speech_s": "speech (s)", "share_pct": "non-speech share (%)", "edge_s": "edge removed (s)",
    "L_live_s": "L live (s)", "L_isolated_s": "L isolated (s)", "dL_isolated_s": "ΔL isolated (s)",
    "L_shared_s": "L shared (s)", "dL_shared_s": "ΔL shared (s)", "eta_live_s": "η live (s)",
    "eta_isolated_s": "η isolated (s)", "eta_shared_s": "η shared (s)", "d_eta_isolated_s": "Δη isolated (s)",
    "d_eta_shared_s": "Δη shared (s)",
}


def label(col: str) -> str:
    """The display label of a column (the name itself when none is defined)."""
    if col in LABELS:
        return LABELS[col]
    if col == "eta_s[service-fit]":
        return "η service-fit, modelled clock (s)"
    if col.startswith("eta_s[") and col.endswith("]"):
        return f"η {col[6:-1]} (s)"
    return col


#: Signature keys that tables show as columns (the column that holds each).
PER_ROW_COLUMNS = {"rule": "condition", "reference": "reference", "backend": "backend",
                   "realization": "realization", "threshold": "threshold"}


def signature_lines(sigs: Sequence[Mapping[str, Any] | str], frame: pd.DataFrame | None = None) -> list[str]:
    """Distinct display signatures: structured ones compacted (keys shown as columns
    marked ``(per row)``); display strings (CSV tables) compacted the same way when the
    row's own column values, masked in its string, make the strings equal."""
    dicts = [s for s in sigs if not isinstance(s, str)]
    strings = [s for s in sigs if isinstance(s, str)]
    if frame is not None and len(set(strings)) > 1 and len(strings) == len(frame):
        varying = {c for c in frame.columns if frame[c].nunique(dropna=False) > 1}
        masked = [_mask(s, row, varying) for s, row in zip(strings, frame.to_dict("records"))]
        if len(set(masked)) == 1:
            strings = masked
    lines = [format_signature(s) for s in compact_signatures(dicts)] + strings
    return list(dict.fromkeys(lines))


def _mask(shown: str, row: Mapping[str, Any], varying: set[str]) -> str:
    """``shown`` with each per-row key whose value equals the row's column (one that
    varies in the table) replaced by ``(per row)``; the values come from the row,
    nothing is read from the string."""
    for key, col in PER_ROW_COLUMNS.items():
        if col in row and col in varying:
            token = format_signature({key: row[col]})
            shown = re.sub(rf"(^|\|){re.escape(token)}(?=\||$)", lambda m, k=key: f"{m.group(1)}{k}:(per row)", shown)
    return shown


def extend(sig: Mapping[str, Any] | str, extra: Mapping[str, Any]) -> dict[str, Any] | str:
    """A structured signature with ``extra`` merged in; a display string (a CSV input's
    signature, never parsed) is kept as it is."""
    return sig if isinstance(sig, str) else merge(sig, extra)


def row_strings(sigs: Sequence[Mapping[str, Any] | str]) -> list[str]:
    """Each signature as its display string (structured ones formatted, strings kept)."""
    return [s if isinstance(s, str) else format_signature(s) for s in sigs]


@dataclass
class ReportTable:
    """One table: machine columns in ``frame``, one full signature per row."""

    key: str  # file stem under tables/
    title: str
    caption: str
    frame: pd.DataFrame
    signatures: list[str]  # one display string per row (CSV column)
    lines: list[str]  # what the report shows under the table
    digits: dict[str, int] = field(default_factory=dict)  # decimals of float columns (default 3)
    number: str = ""  # "Table 2"
    labels: dict[str, str] = field(default_factory=dict)  # overrides of LABELS for this table
    extra_signatures: dict[str, list[str]] = field(default_factory=dict)  # CSV columns signature[NAME]
    notes: list[str] = field(default_factory=list)  # shown under the table, before its signatures

    def label(self, col: str) -> str:
        """The column's heading: this table's override, else the shared :data:`LABELS` one."""
        return self.labels.get(col) or label(col)

    @classmethod
    def signed(cls, key: str, title: str, caption: str, frame: pd.DataFrame,
               sigs: Sequence[Mapping[str, Any] | str], **kw) -> ReportTable:
        """A table from ``frame`` and one signature per row (``ValueError`` on a count
        mismatch): display strings per row and the lines shown under it are derived here."""
        frame = frame.reset_index(drop=True)
        if len(sigs) != len(frame):
            raise ValueError(f"{key}: {len(sigs)} signatures for {len(frame)} rows")
        return cls(key, title, caption, frame, row_strings(sigs), signature_lines(sigs, frame), **kw)


@dataclass
class ReportFigure:
    """One figure rendered in memory."""

    key: str  # file stem under figures/
    title: str
    caption: str
    png: bytes
    svg: bytes
    lines: list[str]  # signatures shown with it
    number: str = ""
    data: ReportTable | None = None  # the numbers drawn, saved beside the tables


@dataclass
class AudioClip:
    """One rendered excerpt the report plays: ``file`` relative to the report folder, the
    encoded bytes and its duration in seconds (frames / rate)."""

    label: str
    file: str  # audio/<name>.mp3
    data: bytes
    duration_s: float  # seconds: frames / rate of the encoded excerpt


@dataclass
class ReportAudio:
    """The Listen section: audio clips with the table describing them."""

    key: str
    title: str
    caption: str
    clips: list[AudioClip]
    table: ReportTable
    number: str = ""

    @property
    def lines(self) -> list[str]:
        """The signatures shown with the section (its table's)."""
        return self.table.lines
