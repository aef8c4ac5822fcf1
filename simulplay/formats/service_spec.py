"""The tables a user's service text names, read before the replay parses it.

Shared servers are written ``servers=K,…`` (``--service``, the Python API's ``service``, an
experiment file's ``analysis.variants``, alone or after ``service=``); their settings
``load_curve=TABLE`` (a load curve, :mod:`simulplay.formats.load`) and ``slowdown=TABLE`` (a
calibration table, :mod:`simulplay.formats.calibration`) name files, and so does
``--slowdown TABLE``. :mod:`simulplay.sim` parses texts and never opens a file: every place
where such a text enters reads its tables here first (:func:`read_spec_tables`,
:func:`read_slowdown`), each as the canonical points a signature's ``service`` label carries
(``curve=c:p50;…``, ``slowdown=n:f;…``), and hands the result to the parser; an error the
parser then finds quotes the text as the user wrote it (:func:`as_written`). A table's own
errors are one line naming the file, the row and the column.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

from simulplay.core.errors import InputError
from simulplay.formats.calibration import read_calibration
from simulplay.formats.load import read_load_curve

T = TypeVar("T")


def names_table(text: str) -> bool:
    """Whether a slowdown text names a table: not empty, not a factor, and not ``n:f;…``
    points (a text with ``:`` is points unless a file of that name exists)."""
    text = str(text).strip()
    try:
        float(text)
        return False
    except ValueError:
        return bool(text) and (":" not in text or Path(text).exists())


def read_slowdown(text: str) -> str:
    """A slowdown text with its table read: a calibration table's canonical points ``n:f;…``;
    a factor or points as they are."""
    return read_calibration(str(text).strip()) if names_table(text) else text


def read_spec_tables(text: str) -> str:
    """A service or variant text with the tables it names read: in a ``servers=K,…`` text
    (after ``service=`` too) ``load_curve=TABLE`` becomes ``curve=c:p50;…`` and
    ``slowdown=TABLE`` becomes ``slowdown=n:f;…``; every other text, and every other
    setting, as it is."""
    items = text.split(",")
    if items[0].strip().removeprefix("service=").partition("=")[0].strip() != "servers":
        return text
    out = []
    for item in items:
        key, eq, value = item.partition("=")
        if eq and key.strip() == "load_curve":
            item = f"curve={read_load_curve(value.strip())}"
        elif eq and key.strip() == "slowdown" and names_table(value):
            item = f"slowdown={read_slowdown(value)}"
        out.append(item)
    return ",".join(out)


@contextmanager
def as_written(written: str, read: str) -> Iterator[None]:
    """An :class:`InputError` raised inside quotes ``written`` where it quoted ``read``
    (:func:`read_spec_tables`' result for it): each setting whose table was read is shown
    as the user wrote it."""
    swaps = [(r, w) for w, r in zip(written.split(","), read.split(",")) if w != r]
    try:
        yield
    except InputError as e:
        if not swaps:
            raise

        def undo(s: str | None) -> str | None:
            for r, w in swaps:
                s = s.replace(r, w) if s else s
            return s

        raise InputError([replace(p, source=undo(p.source), message=undo(p.message))
                          for p in e.problems]) from e


def with_tables(text: str, parse: Callable[[str], T]) -> T:
    """``parse`` of ``text`` with its tables read (:func:`read_spec_tables`); errors quote
    ``text`` as written."""
    read = read_spec_tables(text)
    with as_written(text, read):
        return parse(read)
