"""What the API functions share: argument checks, each raising an
``simulplay.core.errors.InputError`` of one line that names the argument (as the command
line names its flag), and the tables (results, DataFrames or files) they take."""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from simulplay.api.results import (
    EtaOutput,
    ReplayOutput,
    Signatures,
    SignedTable,
    SweepOutput,
    fresh,
    signatures_of,
)
from simulplay.core.errors import InputError
from simulplay.core.signature import base_signature

PathLike = str | os.PathLike
TRACE_INPUT = "a trace (read_trace result or DataFrame), a trace file path (.parquet, .csv, .jsonl) or a list of paths"


def frame_of(value: Any, name: str) -> tuple[pd.DataFrame, Signatures | None, dict[str, Any]] | None:
    """A result's main table with its row signatures and shared signature (a
    ``SignedTable`` or ``ReplayOutput``), a plain DataFrame unsigned, or None
    for anything else (a path, which the caller reads)."""
    if isinstance(value, SignedTable):
        return fresh(value.table), value.signatures, value.signature
    if isinstance(value, ReplayOutput):
        return fresh(value.summary), value.signatures, value.signature
    if isinstance(value, pd.DataFrame):
        return fresh(value), None, {}
    if isinstance(value, (EtaOutput, SweepOutput)):
        raise InputError.at(name, f"is {kind_of(value)}", accepted=f"one of its tables, e.g. {name}.to_frame()")
    return None


def read_signed(path: Path) -> tuple[pd.DataFrame, list[dict[str, Any]] | None]:
    """A table file and its per-row structured signatures (None when it stores none)."""
    from simulplay.core.tables import read_table, stored_signatures

    df, meta = read_table(path)
    return df, stored_signatures(meta, len(df))


def kind_of(value: Any) -> str:
    """``an int``, ``a list``: what a wrong argument is, for messages."""
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def as_table(table: Any) -> tuple[pd.DataFrame, Signatures | None, str]:
    """A result, a DataFrame or a .parquet/.csv file (its stored signatures), and its name."""
    given = frame_of(table, "table")
    if given is not None:
        return given[0], given[1], "table"
    p = as_path(table, "table", "a result, a DataFrame or a table file (.parquet or .csv)")
    df, sigs = read_signed(p)
    return df, signatures_of(sigs), str(p)


def as_commits(commit: Any) -> list[str]:
    """Commit policy strings from one string, a list of them or None (none)."""
    if commit is None:
        return []
    return as_strings(commit, "commit", "a commit policy such as 'stable:k=2', or a list of them")


def as_streams(trace: Any, *, revising: bool = False) -> tuple[list, list[Path]]:
    """The streams of a trace DataFrame (validated) or of trace files, and the files
    (``revising``: streams with retractions allowed, for a commit policy)."""
    from simulplay.traces import read_traces, streams_from_frame
    from simulplay.traces.validate import validate_trace_frame

    given = frame_of(trace, "trace")
    if given is not None:
        return streams_from_frame(validate_trace_frame(given[0], "trace"), revising=revising), []
    paths = as_paths(trace, "trace", TRACE_INPUT)
    return streams_from_frame(read_traces(paths), revising=revising), paths


def as_talks(talks: Any, talks_from: Any) -> tuple[str, ...]:
    """The talk ids of ``talks`` (an id, several separated by commas, or a list of them) and
    of the file ``talks_from``, read as ``--talks``/``--talks-from`` are
    (:func:`simulplay.traces.select.talk_ids`); empty: every talk."""
    from simulplay.traces.select import talk_ids

    given = [] if talks is None else as_strings(talks, "talks", "a talk id, ids separated by commas, or a list")
    path = None if talks_from is None else as_path(talks_from, "talks_from", "a file of talk ids, one per line")
    return talk_ids(given, path, from_flag="talks_from")


def as_events(events: Any) -> str:
    """``events`` when it is ``"keep"`` or ``"drop"`` (as ``--events``)."""
    from simulplay.traces.events import check_events_mode

    return check_events_mode(as_text(events, "events", "keep or drop"), "events")


def as_requests_file(requests: Any, tmp: Path) -> Path:
    """A requests table as a file: the path given, or a table (a ``group`` result with
    its signatures, or a DataFrame) written as ``requests.parquet`` in ``tmp``."""
    given = frame_of(requests, "requests")
    if given is None:
        return as_path(requests, "requests", "a requests table (from group), a DataFrame or its file")
    from simulplay.core.tables import write_table
    from simulplay.grouping.requests_file import validate_requests

    df, sigs, _ = given
    validate_requests(df, "requests")  # errors name the argument, not the file written below
    path = tmp / "requests.parquet"
    write_table(df, path, list(sigs) if sigs else base_signature(table="requests"), kind="requests")
    return path


def as_rules(rule: Any) -> list:
    """Grouping rules from one RULE string or a list of them (each once)."""
    from simulplay.grouping import parse_rule, unique_rules

    texts = as_strings(rule, "rule", "a RULE string such as 'timer:w=4', or a list of them")
    if not texts:
        raise InputError.at("rule", "is empty", accepted="at least one RULE string")
    return unique_rules([parse_rule(t, source="rule") for t in texts])


def bootstrap_settings(*, draws: Any, seed: Any, quantile_method: Any, confidence: Any, bootstrap_rng: Any,
                       bootstrap: Any, talk_order: Any, tie_tolerance: Any = 1e-6):
    """``Bootstrap`` from the API's keywords, named as the command line's flags
    (``quantile_method``: ``--quantile-method``, ``bootstrap_rng``: ``--bootstrap-rng``,
    ``bootstrap``: ``--bootstrap``, the preset; None: the default or the preset's value);
    a wrong type or value is an InputError naming the keyword."""
    from simulplay.analysis.bootstrap import PRESETS, Bootstrap, PresetError

    for name, value, kind, accepted in (("draws", draws, int, "a whole number ≥ 1"),
                                        ("seed", seed, int, "a whole number ≥ 0"),
                                        ("confidence", confidence, (int, float), "a number in (0, 1)"),
                                        ("talk_order", talk_order, str, "sorted or given"),
                                        ("tie_tolerance", tie_tolerance, (int, float), "a number ≥ 0")):
        if isinstance(value, bool) or not isinstance(value, kind):
            raise InputError.at(name, f"is {kind_of(value)}", accepted=accepted)
    chosen = {}
    for name, key, value in (("quantile_method", "method", quantile_method), ("bootstrap_rng", "rng", bootstrap_rng)):
        if value is not None:
            chosen[key] = as_text(value, name, "text or None")
    preset = None if bootstrap is None else as_text(bootstrap, "bootstrap", f"a preset name ({', '.join(PRESETS)}) "
                                                    "or None")
    try:
        return Bootstrap.preset(preset, names={"rng": "bootstrap_rng", "method": "quantile_method"}, draws=draws,
                                seed=seed, confidence=confidence, talk_order=talk_order, tie_tolerance=tie_tolerance,
                                **chosen)
    except PresetError as e:
        raise InputError.at("bootstrap", str(e), accepted=f"one of {', '.join(PRESETS)}, without a different "
                            "bootstrap_rng or quantile_method") from e
    except ValueError as e:
        raise InputError.at("bootstrap settings", str(e), accepted="draws ≥ 1, seed ≥ 0, quantile_method a NumPy "
                            "quantile method or an order:… convention, 0 < confidence < 1, bootstrap_rng numpy or "
                            "python, talk_order sorted or given, tie_tolerance ≥ 0") from e


def renamed(**old_to_new: str):
    """Keep a renamed keyword working for one release: ``@renamed(method="quantile_method")``
    passes ``method=`` on as ``quantile_method=`` with a ``DeprecationWarning``; both
    at once is an InputError."""
    def wrap(fn):
        @functools.wraps(fn)
        def inner(*args, **kwargs):
            for old, new in old_to_new.items():
                if old not in kwargs:
                    continue
                if new in kwargs:
                    raise InputError.at(old, f"is given with {new}", accepted=f"{new}= only ({old}= is its old name)")
                warnings.warn(f"simulplay.{fn.__name__}: {old}= is deprecated and goes in the next release; use "
                              f"{new}=, the name of the command line's --{new.replace('_', '-')}",
                              DeprecationWarning, stacklevel=2)
                kwargs[new] = kwargs.pop(old)
            return fn(*args, **kwargs)
        inner.renamed = dict(old_to_new)
        return inner
    return wrap


def as_pair(value: Any, name: str, parse) -> tuple[str, str]:
    """A pair ``"P1,P2"`` (or a tuple of two names) through the library's parser ``parse``."""
    if isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, str) for v in value):
        value = ",".join(value)
    return parse(as_text(value, name, "'P1,P2' or a tuple of two names"), name)


def as_sequence(value: Any, name: str) -> list:
    """A list or tuple (not text) as a list."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
        raise InputError.at(name, f"is {kind_of(value)}", accepted="a list")
    return list(value)


def as_strings(value: Any, name: str, accepted: str) -> list[str]:
    """One string, or a list or tuple of strings, as a list."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, Sequence) or not all(isinstance(v, str) for v in items):
        raise InputError.at(name, f"is {kind_of(value)}" + ("" if not isinstance(items, Sequence) else
                            " holding something else than text"), accepted=accepted)
    return list(items)


def as_text(value: Any, name: str, accepted: str = "text") -> str:
    """A string, as it is."""
    if not isinstance(value, str):
        raise InputError.at(name, f"is {kind_of(value)}", accepted=accepted)
    return value


def as_choice(value: Any, name: str, choices: Sequence[str]) -> str:
    """One of ``choices``."""
    if not isinstance(value, str) or value not in choices:
        raise InputError.at(f"{name} {value!r}", "is not known", accepted=", ".join(choices))
    return value


def as_count(value: Any, name: str, *, optional: bool = True) -> Any:
    """A whole number ≥ 1 (not a bool), or None when ``optional``."""
    if (value is not None or not optional) and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise InputError.at(name, f"is {value!r}", accepted="a whole number ≥ 1")
    return value


def as_whole(value: Any, name: str, least: int, kind: type = int) -> Any:
    """A number ≥ ``least`` (not a bool): a whole number, or any real number when ``kind``
    is float."""
    kinds = (int, float) if kind is float else int
    if isinstance(value, bool) or not isinstance(value, kinds) or value < least:
        raise InputError.at(name, f"is {value!r}",
                            accepted=f"{'a number' if kind is float else 'a whole number'} ≥ {least}")
    return value


def as_flag(value: Any, name: str) -> bool:
    """True or False."""
    if not isinstance(value, bool):
        raise InputError.at(name, f"is {kind_of(value)}", accepted="True or False")
    return value


def as_path(value: Any, name: str, accepted: str) -> Path:
    """A non-empty ``str`` or ``os.PathLike`` as a Path."""
    if not isinstance(value, (str, os.PathLike)) or not str(value):
        raise InputError.at(name, f"is {kind_of(value)}", accepted=accepted)
    return Path(value)


def as_paths(value: Any, name: str, accepted: str) -> list[Path]:
    """One path, or a non-empty list of paths, as Paths."""
    items = [value] if isinstance(value, (str, os.PathLike)) else value
    if not isinstance(items, Sequence) or not items:
        raise InputError.at(name, f"is {kind_of(value)}" if not isinstance(items, Sequence) else "is empty",
                            accepted=accepted)
    return [as_path(p, name, accepted) for p in items]


def slowdown_text(value: Any) -> str | None:
    """``--slowdown`` as the command line reads it: a factor (a number, not a bool) or a
    calibration table's path, as text; None as it is."""
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return repr(float(value))
    return str(as_path(value, "slowdown", "a factor (1.2) or a calibration table's file"))
