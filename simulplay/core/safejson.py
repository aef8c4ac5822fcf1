"""JSON from user files, parsed within limits so that no input can end in a traceback.

:func:`loads` is ``json.loads`` with every way a hostile or damaged text can fail turned
into one :class:`JsonError` whose message is a short phrase for a located problem:

* bytes that are not UTF-8 (the byte offset is named);
* broken JSON (the parser's message and column);
* nesting deeper than :data:`MAX_DEPTH` levels (also what would exhaust Python's
  recursion limit: ``RecursionError``);
* integer literals longer than Python converts (4,300 digits by default,
  ``sys.get_int_max_str_digits()``);
* strings (keys included) holding a lone UTF-16 surrogate such as ``"\\ud800"``, which
  parse but cannot be encoded when the text is later written.

Numbers that overflow a float (``1e400``) parse as infinity, as Python's ``json`` does; the
field checks downstream refuse them as "not finite".
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from typing import Any

#: Deepest nesting accepted (objects and arrays); simulplay's own files need four levels.
MAX_DEPTH = 64

_SURROGATE = re.compile("[\ud800-\udfff]")
_ESCAPED_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")


class JsonError(ValueError):
    """Text that is not JSON simulplay can use; ``str(e)`` says why in a few words and
    ``accepted`` what would be accepted instead."""

    def __init__(self, message: str, accepted: str = "valid JSON in UTF-8"):
        super().__init__(message)
        self.accepted = accepted


def loads(data: str | bytes) -> Any:
    """Parse one JSON document (``bytes`` are decoded as UTF-8), or raise :class:`JsonError`."""
    raw = data if isinstance(data, bytes) else None
    if raw is not None:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise JsonError(f"is not UTF-8 text (byte {e.start})", "UTF-8 text") from None
    else:
        text = data
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise JsonError(f"broken JSON ({e.msg} at column {e.colno})") from None
    except RecursionError:
        raise JsonError(f"JSON nested deeper than {MAX_DEPTH} levels", too_deep()) from None
    except ValueError:  # int('…') beyond the digit limit
        raise JsonError(f"holds an integer longer than {sys.get_int_max_str_digits()} digits",
                        "numbers of ordinary size") from None
    if (text.count("[") + text.count("{")) > MAX_DEPTH and depth(obj) > MAX_DEPTH:
        raise JsonError(f"JSON nested deeper than {MAX_DEPTH} levels", too_deep())
    escaped = raw if raw is not None else text.encode("utf-8", "surrogatepass")
    if _ESCAPED_SURROGATE.search(escaped):
        bad = first_surrogate(obj)
        if bad is not None:
            raise JsonError(f"holds a lone surrogate {bad!r} (a character that cannot be encoded as UTF-8)",
                            "text of real characters (surrogate escapes only in valid pairs)")
    return obj


def too_deep() -> str:
    return f"at most {MAX_DEPTH} levels of nested objects and arrays"


def depth(obj: Any) -> int:
    """Nesting depth of parsed JSON (a scalar is 0, ``[]`` is 1), without recursion."""
    deepest = 0
    stack = [(obj, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        if level > MAX_DEPTH:  # deep enough to refuse; no need to look further
            return level
        stack.extend((c, level + 1) for c in children)
    return deepest


def first_surrogate(obj: Any) -> str | None:
    """The first string (key or value) in ``obj`` holding a lone surrogate, cut to 20 chars."""
    stack = [obj]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return item[:20]
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None


def json_objects(raw: bytes, check: Any) -> Iterator[tuple[int, dict]]:
    """Each JSON object of ``raw`` (one per line) with its 1-based line number; blank lines are
    skipped. Lines that are not UTF-8, not JSON (:func:`loads`: also
    nesting too deep, integers too long, lone surrogates) or not an object are recorded in
    ``check`` (a :class:`~simulplay.core.fields.Checker`)."""
    for lineno, line in enumerate(raw.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = loads(line)
        except JsonError as e:
            check.add(str(e), row=lineno, accepted=f"one JSON object per line; {e.accepted}")
            continue
        if not isinstance(obj, dict):
            check.add("is not a JSON object", row=lineno, accepted="one JSON object per line")
            continue
        yield lineno, obj
