"""Domain exceptions.

Every problem with user input becomes an :class:`InputError` that renders as one line
naming the file, the row (1-based data row, or line for JSONL) and the field, and says
what would be accepted. The CLI prints it and exits with code 2. An error with many
problems shows the first :data:`MAX_SHOWN` and a last line "… and N more problems", so a
message stays readable whatever the input (``problems`` keeps them all).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

#: Problems an :class:`InputError` shows; the rest are counted on one last line.
MAX_SHOWN = 10
#: Characters of a problem's message (and of what it accepts) shown; input quoted in a
#: message (a talk id, a cell) can be of any length.
MAX_MESSAGE = 600


def clip(text: object, limit: int = 40) -> str:
    """``str(text)`` cut to ``limit`` characters (``…`` marks the cut), for quoting input in
    messages: a 5,000-character cell must not become a 5,000-character error line."""
    s = str(text)
    return s if len(s) <= limit else s[: limit - 1] + "…"


class SimulplayError(Exception):
    """Base class of every error simulplay reports to a user without a traceback."""


@dataclass(frozen=True)
class Problem:
    """One located problem: where it is, what is wrong, what would be accepted."""

    source: str
    message: str
    row: int | str | None = None
    field: str | None = None
    row_label: str = "row"
    accepted: str | None = None
    field_label: str = "field"

    def render(self) -> str:
        where = [self.source]
        if self.row is not None:
            where.append(f"{self.row_label} {self.row}")
        if self.field is not None:
            where.append(f"{self.field_label} '{self.field}'")
        text = f"{', '.join(where)}: {clip(' '.join(self.message.split()), MAX_MESSAGE)}"
        if self.accepted:
            text += f" (expected {clip(self.accepted, MAX_MESSAGE)})"
        return text


class InputError(SimulplayError):
    """Bad user input: one or more located problems, each rendered on one line."""

    def __init__(self, problems: list[Problem] | Problem):
        self.problems = [problems] if isinstance(problems, Problem) else list(problems)
        super().__init__("\n".join(self.lines()))

    def lines(self) -> list[str]:
        """The first :data:`MAX_SHOWN` problems, one line each, and "… and N more problems"."""
        shown = [p.render() for p in self.problems[:MAX_SHOWN]]
        extra = len(self.problems) - MAX_SHOWN
        if extra > 0:
            sources = {p.source for p in self.problems}
            where = f"{next(iter(sources))}: " if len(sources) == 1 else ""
            shown.append(f"{where}… and {extra} more problem{'s' if extra > 1 else ''}")
        return shown

    @classmethod
    def at(
        cls,
        source: str | Path,
        message: str,
        *,
        row: int | str | None = None,
        field: str | None = None,
        accepted: str | None = None,
        row_label: str = "row",
        field_label: str = "field",
    ) -> InputError:
        return cls(Problem(str(source), message, row, field, row_label, accepted, field_label))


class IncompleteError(SimulplayError):
    """A comparison needs an output that failed or is missing (fail closed)."""


class RegistryError(SimulplayError):
    """An unknown or duplicate name in a registry (rules, backends, service models)."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread like Ctrl-C's KeyboardInterrupt (the command line
    installs the handler), so that one ``except KeyboardInterrupt`` handles both."""


def interrupt_exit_code(signal_exception: BaseException) -> int:
    """130 for SIGINT (Ctrl-C), 143 for SIGTERM: 128 + the signal number, as shells report."""
    return 143 if isinstance(signal_exception, Terminated) else 130


class Interrupted(SimulplayError):
    """A long run stopped by SIGINT or SIGTERM, saying what was done and kept
    (e.g. "35 of 577 requests done and kept; run the same command again to resume");
    ``exit_code`` is 130 or 143."""

    def __init__(self, what: str, cause: BaseException):
        super().__init__(f"interrupted: {what}")
        self.exit_code = interrupt_exit_code(cause)
