"""Domain exceptions.

Every problem with user input becomes an :class:`InputError` that renders as one line
naming the file, the row (1-based data row, or line for JSONL) and the field, and says
what would be accepted. The CLI prints it and exits with code 2. An error with many
problems shows the first :data:`MAX_SHOWN` and a last line "… and N more problems", so a
message stays readable whatever the input (``problems`` keeps them all).

A fault of the machine met while a command works (a full disk, a read-only or vanished
file, an I/O error) is a :class:`FileFault`: one line with the path, what failed, why
(:func:`os_reason`) and what to do, exit code 1. The same fault found by a check before
the work (an output folder that cannot be written) is an :class:`InputError` made by
:func:`path_refused`: the command refuses at once, exit code 2.
"""

from __future__ import annotations

import errno
import re
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


#: Exit codes of the command line: bad input or an output refused before any work; a command
#: that started and could not finish (a fault of the machine, failed requests).
EXIT_INPUT, EXIT_FAULT = 2, 1

#: errno → (what the system said, what to do about it).
_REASONS: dict[int, tuple[str, str]] = {
    errno.ENOSPC: ("no space left on the device", "free space on that file system or use a folder on another one"),
    errno.EDQUOT: ("disk quota exceeded", "free space within your quota or use a folder on another file system"),
    errno.EROFS: ("read-only file system", "use a folder on a writable file system"),
    errno.EACCES: ("permission denied", "allow this user to write there or use another folder"),
    errno.EPERM: ("operation not permitted", "check the file's permissions and attributes (lsattr) or use "
                  "another folder"),
    errno.ENOENT: ("no such file or folder", "check the path; a file removed or moved while the command ran "
                   "must be put back"),
    errno.ENOTDIR: ("a part of the path is not a folder", "check the path"),
    errno.EISDIR: ("is a folder", "give a file path"),
    errno.EIO: ("input/output error", "check the disk (dmesg) and run the command again"),
    errno.EMFILE: ("too many open files", "raise the limit (ulimit -n) and run the command again"),
    errno.ENAMETOOLONG: ("file name too long", "use a shorter path"),
}


def os_errno(error: BaseException) -> int | None:
    """The errno of an operating-system error: ``error.errno``, or the ``[errno N]`` that
    pyarrow writes into its messages."""
    number = getattr(error, "errno", None)
    if isinstance(number, int):
        return number
    found = re.search(r"errno\W{0,3}(\d+)", str(error), re.IGNORECASE)
    return int(found.group(1)) if found else None


def os_reason(error: BaseException) -> tuple[str, str]:
    """(what the system said, what to do) for an operating-system error."""
    number = os_errno(error)
    if number in _REASONS:
        return _REASONS[number]
    said = getattr(error, "strerror", None) or " ".join(str(error).split()) or type(error).__name__
    return clip(said, 120), "check the path and the disk, then run the command again"


class FileFault(SimulplayError):
    """A file operation the machine refused while a command worked: ``path``, ``action``
    (``cannot write``, ``cannot read``), the reason and the fix (:func:`os_reason`) and,
    when given, what was ``kept`` ("7 of 60 requests done and kept; …"), on one line.
    Exit code 1 (:data:`EXIT_FAULT`)."""

    exit_code = EXIT_FAULT

    def __init__(self, path: str | Path | None, action: str, error: BaseException, kept: str = ""):
        self.path, self.action, self.error, self.kept = path, action, error, kept
        why, fix = os_reason(error)
        text = (f"{path}: " if path else "") + f"{action} ({why}); {fix}" + (f"; {kept}" if kept else "")
        super().__init__(text.replace("\n", "\\n").replace("\r", "\\r"))  # one line, whatever the path holds

    def keeping(self, kept: str) -> FileFault:
        """The same fault, saying what was kept."""
        return FileFault(self.path, self.action, self.error, kept)


def path_refused(path: str | Path, what: str, error: BaseException, *, field: str | None = None) -> InputError:
    """A check before the work found ``path`` unusable (``what``: "cannot be written"): an
    InputError (exit code 2) with the system's reason and what to do."""
    why, fix = os_reason(error)
    return InputError.at(path, f"{what} ({why}); {fix}", field=field)


class SimulplayWarning(UserWarning):
    """Something a user should know before a long run goes on (the store may fill up); the
    command line prints it as one line, ``simulplay: warning: …``."""


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
