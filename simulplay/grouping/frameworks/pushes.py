"""A stream as a framework receives it: one text push per update, and groups as spans."""

from __future__ import annotations

import importlib
from bisect import bisect_right
from types import ModuleType

from simulplay.core.errors import InputError
from simulplay.grouping.registry import Group
from simulplay.traces.model import Stream


def framework_module(name: str, package: str, rule: str) -> ModuleType:
    """Import ``name`` (a splitter a framework delegates to), or say how to install it."""
    try:
        return importlib.import_module(name)
    except ImportError as e:
        raise InputError.at(f"--rule {rule}", f"needs the package {package} ({e})",
                            accepted="pip install 'simulplay[frameworks]'") from None


class Pushes:
    """Update ``i``'s text with the space that joins it to update ``i - 1`` (none for the
    first update or a glued one): the pushes concatenate to the stream's joined text."""

    def __init__(self, stream: Stream):
        self.texts = [("" if i == 0 or stream.glue[i] else " ") + t for i, t in enumerate(stream.texts)]
        self.starts: list[int] = []
        at = 0
        for t in self.texts:
            self.starts.append(at)
            at += len(t)
        self.joined = "".join(self.texts)
        self.times = stream.times

    def group(self, start: int, end: int, push: int, trigger: str) -> Group | None:
        """The group of characters ``start:end`` of the joined text, released by push
        ``push`` (dispatched at its availability); None when they are all whitespace."""
        text = self.joined[start:end]
        a = start + len(text) - len(text.lstrip())
        b = start + len(text.rstrip())
        if a >= b:
            return None
        first = bisect_right(self.starts, a) - 1
        last = bisect_right(self.starts, b - 1) - 1
        return Group(first, last, float(self.times[push]), trigger, (a, b))


def kept(groups: list[Group | None]) -> list[Group]:
    """The groups that hold text (a framework speaks no whitespace-only token)."""
    return [g for g in groups if g is not None]
