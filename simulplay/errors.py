"""Domain exceptions.

Every problem with user input becomes an :class:`InputError` that renders as one line
naming the file, the row (1-based data row, or line for JSONL) and the field, and says
what would be accepted. The CLI prints it and exits with code 2.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


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
        text = f"{', '.join(where)}: {' '.join(self.message.split())}"
        if self.accepted:
            text += f" (expected {self.accepted})"
        return text


class InputError(SimulplayError):
    """Bad user input: one or more located problems, each rendered on one line."""

    def __init__(self, problems: list[Problem] | Problem):
        self.problems = [problems] if isinstance(problems, Problem) else list(problems)
        super().__init__("\n".join(p.render() for p in self.problems))

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
