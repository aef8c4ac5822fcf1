"""What the API functions return: frozen result objects that hold every table of a step
with its signatures and side results beside it, as jiwer's ``WordOutput`` holds its counts
next to the rates (nothing rides in ``DataFrame.attrs``).

Each table has a fresh ``RangeIndex``; its ``signatures`` hold one structured signature
(a dict) per row, in row order, and ``signature`` the settings every row shares. A result
passed on to the next step (``group`` → ``synthesize`` → ``replay`` → ``eta``) brings its
signatures along; a plain DataFrame is taken as unsigned. ``rows(keep)`` filters a result
and its signatures together.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from simulplay.core.keys import OUTPUT_KEYS, PANEL_KEYS

Signatures = tuple[dict[str, Any], ...]


@dataclasses.dataclass(frozen=True)
class SignedTable:
    """One table with what produced it ([`read_trace`][simulplay.api.read_trace],
    [`group`][simulplay.api.group], [`bootstrap`][simulplay.api.bootstrap] and the tables of a
    [`Run`][simulplay.api.Run]).

    Attributes:
        table: the rows (times in seconds, every ``_s`` column in seconds).
        signatures: one structured signature per row, or None where the rows are not
            signed (a file without stored signatures).
        signature: the settings the whole table shares.
        paths: the files it was read from or written to.
        notes: notes that go with the table (a small panel's, or why something is missing).
    """

    table: pd.DataFrame
    signatures: Signatures | None = None
    signature: dict[str, Any] = dataclasses.field(default_factory=dict)
    paths: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def to_frame(self) -> pd.DataFrame:
        """A copy of ``table``."""
        return self.table.copy()

    def rows(self, keep: Any) -> SignedTable:
        """The rows that ``keep`` selects (a boolean mask or index labels, as ``.loc``
        takes them), with their signatures."""
        table, sigs = keep_rows(self.table, self.signatures, keep)
        return dataclasses.replace(self, table=table, signatures=sigs)


@dataclasses.dataclass(frozen=True)
class ManifestOutput(SignedTable):
    """The request manifest [`synthesize`][simulplay.api.synthesize] returns: ``table`` has one
    row per request (``dispatch_s``, ``service_s``, ``audio_s``, ``source_s`` in seconds,
    ``n_samples`` at ``sample_rate`` Hz, ``error``); ``signature`` is the run's and
    ``paths`` the manifest file written (empty when ``out`` was None).

    Attributes:
        stats: requests ``synthesized``, ``already_in_store``, ``failed`` and ``damaged``;
            ``retries`` and ``worker_deaths`` of a parallel executor; ``contention_ratio``,
            its median parallel/serial service-time ratio (None when not measured).
        clock: the clock check (None where the backend measured no service time).
        chunks: the chunk table written beside the manifest (None when ``out`` was None).
    """

    stats: dict[str, Any] = dataclasses.field(default_factory=dict)
    clock: dict[str, Any] | None = None
    chunks: str | None = None


@dataclasses.dataclass(frozen=True)
class ReplayOutput:
    """A replay ([`replay`][simulplay.api.replay]): the playback summary and the parts played.

    Attributes:
        summary: one row per output: ``n_parts``, ``first_play_s`` and ``end_s``
            (seconds from source start), ``audio_s`` (D), ``idle_s`` (I), ``offset_s``
            (L = end − source, s), ``source_s``, ``limiting_seq``.
        signatures: one per summary row.
        parts: one row per played part (``ready_s``, ``play_s``, ``end_s``, seconds).
        part_signatures: one per part.
        signature: the settings every summary row shares.
        excluded: the outputs left out (``allow_incomplete``).
    """

    summary: pd.DataFrame
    signatures: Signatures
    parts: pd.DataFrame
    part_signatures: Signatures
    signature: dict[str, Any]
    excluded: tuple[str, ...] = ()

    def to_frame(self) -> pd.DataFrame:
        """A copy of ``summary``."""
        return self.summary.copy()

    def rows(self, keep: Any) -> ReplayOutput:
        """The summary rows that ``keep`` selects (a boolean mask or index labels), their
        signatures, and the parts of the outputs kept."""
        summary, sigs = keep_rows(self.summary, self.signatures, keep)
        keys = [k for k in (*PANEL_KEYS, *OUTPUT_KEYS) if k in summary and k in self.parts]
        kept = pd.MultiIndex.from_frame(self.parts[keys]).isin(pd.MultiIndex.from_frame(summary[keys]))
        parts, part_sigs = keep_rows(self.parts, self.part_signatures, kept)
        return dataclasses.replace(self, summary=summary, signatures=sigs, parts=parts, part_signatures=part_sigs)


@dataclasses.dataclass(frozen=True)
class EtaOutput:
    """η and the tables behind it ([`eta`][simulplay.api.eta]); every value in seconds.

    Attributes:
        eta: one row per panel and condition other than the reference: ``n_talks``,
            ``delta_ref_s``, ``delta_s``, ``eta_s``, ``ci_low_s``, ``ci_high_s``,
            ``n_negative``, ``n_positive``, ``duration_part_s``, ``idle_part_s``.
        signatures: one per η row.
        per_talk: δ(reference), δ, η and its parts per panel, talk and condition.
        per_talk_signatures: one per per-talk row.
        contrasts: δ(P1) − δ(P2) per contrast pair (no rows without ``contrast``).
        contrast_signatures: one per contrast row.
        interaction: η(B1) − η(B2) per backend pair and condition (None without
            ``interaction``).
        interaction_signatures: one per interaction row (None with it).
        interaction_per_talk: the interaction per talk (None without ``interaction``).
        interaction_per_talk_signatures: one per row of it (None with it).
        signature: the settings every η row shares.
        notes: the small-panel notes of the η table (fewer than 10 talks).
        contrast_notes: those of the contrast table.
        excluded: the outputs whose talks were left out (``allow_incomplete``).
    """

    eta: pd.DataFrame
    signatures: Signatures
    per_talk: pd.DataFrame
    per_talk_signatures: Signatures
    contrasts: pd.DataFrame
    contrast_signatures: Signatures
    interaction: pd.DataFrame | None
    interaction_signatures: Signatures | None
    interaction_per_talk: pd.DataFrame | None
    interaction_per_talk_signatures: Signatures | None
    signature: dict[str, Any]
    notes: tuple[str, ...] = ()
    contrast_notes: tuple[str, ...] = ()
    excluded: tuple[str, ...] = ()

    def to_frame(self) -> pd.DataFrame:
        """A copy of the η table, ``eta``."""
        return self.eta.copy()


@dataclasses.dataclass(frozen=True)
class SweepOutput:
    """A modelled sweep ([`sweep`][simulplay.api.sweep]) and its self-check; every
    ``modelled_`` value is a model's, not a measurement; times in seconds.

    Attributes:
        table: the rows of ``sweep.parquet`` (its ``signature`` column left out): one per
            panel × family × grid point.
        signatures: one per sweep row.
        signature: the settings every sweep row shares.
        check: modelled vs measured per panel and measured condition
            (``sweep_check.parquet``).
        check_signatures: one per check row.
        check_per_talk: the check per talk.
        check_per_talk_signatures: one per row of it.
        models: the fitted models (``sweep_models.csv``).
        model_signatures: one per model row.
        notes: the self-check's summary and its warnings (each also issued as a Python
            warning).
        confirmed: the rules this call synthesized.
        path: the ``sweep.parquet`` written.
    """

    table: pd.DataFrame
    signatures: Signatures
    signature: dict[str, Any]
    check: pd.DataFrame
    check_signatures: Signatures
    check_per_talk: pd.DataFrame
    check_per_talk_signatures: Signatures
    models: pd.DataFrame
    model_signatures: Signatures
    notes: tuple[str, ...]
    confirmed: tuple[str, ...]
    path: str

    def to_frame(self) -> pd.DataFrame:
        """A copy of the sweep table, ``table``."""
        return self.table.copy()


def signatures_of(signatures: Sequence[Any] | None) -> Signatures | None:
    """Row signatures as a tuple of dicts (None stays None; a display string stays one)."""
    if signatures is None:
        return None
    return tuple(dict(s) if isinstance(s, Mapping) else s for s in signatures)


def shared_signature(signatures: Sequence[Any] | None) -> dict[str, Any]:
    """The keys and values every (structured) row signature holds."""
    if not signatures or not all(isinstance(s, Mapping) for s in signatures):
        return {}
    first = signatures[0]
    return {k: v for k, v in first.items() if all(k in s and s[k] == v for s in signatures[1:])}


def fresh(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with a fresh RangeIndex."""
    return df.reset_index(drop=True)


def keep_rows(df: pd.DataFrame, signatures: Sequence[Any] | None, keep: Any) -> tuple[pd.DataFrame, Signatures | None]:
    """The rows of ``df`` (a RangeIndex) that ``keep`` selects, and their signatures."""
    kept = df.loc[keep]
    sigs = None if signatures is None else tuple(signatures[i] for i in kept.index)
    return fresh(kept), sigs
