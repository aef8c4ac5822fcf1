"""Input-limit splitting: cut a group's text into requests a backend accepts.

The splitter never changes the joined string: pieces are cut at a single space (which
the join restores), and only when one word alone exceeds the limit is it cut inside the
word (the continuation is marked ``glue``). The length function is pluggable, so a
backend can count tokens instead of characters.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Splitter:
    """Split text so that ``length(piece) ≤ limit``; ``limit=None`` never splits."""

    limit: int | None = None
    length: Callable[[str], int] = field(default=len, compare=False, repr=False)
    unit: str = "chars"

    def __post_init__(self):
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"limit must be ≥ 1, got {self.limit}")

    def to_dict(self) -> dict[str, Any]:
        """``{"splitter": "none"}`` or ``{"splitter": "max-<unit>=<limit>"}``, for signatures."""
        return {"splitter": "none" if self.limit is None else f"max-{self.unit}={self.limit}"}

    def describe(self) -> str:
        """The splitter as one string (``none``, ``max-chars=250``)."""
        return self.to_dict()["splitter"]

    def split(self, text: str) -> list[tuple[str, bool]]:
        """Pieces with their glue flag (True: attaches to the previous piece without a space)."""
        if self.limit is None or self.length(text) <= self.limit:
            return [(text, False)]
        pieces: list[tuple[str, bool]] = []
        rest, glue = text, False
        while self.length(rest) > self.limit:
            cut = self._space_cut(rest)
            if cut is not None:
                pieces.append((rest[:cut], glue))
                rest, glue = rest[cut + 1:], False
            else:
                k = self._hard_cut(rest)
                pieces.append((rest[:k], glue))
                rest, glue = rest[k:], True
        pieces.append((rest, glue))
        return _no_blank_pieces(pieces)

    def _space_cut(self, text: str) -> int | None:
        """The last space ``i > 0`` with ``length(text[:i]) ≤ limit`` (binary search)."""
        spaces = [i for i, c in enumerate(text) if c == " " and i > 0]
        lo, hi, best = 0, len(spaces) - 1, None
        while lo <= hi:
            mid = (lo + hi) // 2
            if self.length(text[: spaces[mid]]) <= self.limit:
                best, lo = spaces[mid], mid + 1
            else:
                hi = mid - 1
        return best

    def _hard_cut(self, text: str) -> int:
        """The longest prefix within the limit (at least one character)."""
        k = bisect_right(range(1, len(text) + 1), self.limit, key=lambda m: self.length(text[:m]))
        return max(1, k)


def _no_blank_pieces(pieces: list[tuple[str, bool]]) -> list[tuple[str, bool]]:
    """Merge whitespace-only pieces (from runs of spaces or trailing space) into a
    neighbour: a request of spaces alone would cost a synthesis call for no text. The
    joined string is unchanged; a merged piece may exceed the limit by that whitespace."""
    out: list[tuple[str, bool]] = []
    prefix = ""  # blank pieces before the first piece with text
    for i, (text, glue) in enumerate(pieces):
        sep = "" if glue or i == 0 else " "
        if out and text.strip():
            out.append((text, glue))
        elif out:
            prev, prev_glue = out[-1]
            out[-1] = (prev + sep + text, prev_glue)
        else:
            prefix += sep + text
            if text.strip():
                out.append((prefix, False))
    return out or [(prefix, False)]
