"""Help that reads well at any terminal width.

* Docstring paragraphs are reflowed: typer's rich help keeps every single line break of
  a docstring and then wraps again at the terminal width, which leaves half-empty lines;
  here the lines of a paragraph are joined, so rich wraps each paragraph once. A line
  that starts a list item (``* ``, ``- ``, ``• ``) keeps its break, and a paragraph that
  starts with ``\\b`` (click's marker) is kept exactly as written, e.g. for examples.
* Flags show no value type: typer 0.29 prints ``<bool>`` after every flag (``--quiet
  <bool>``), although a flag takes no value. A flag's metavar is set to the empty string,
  which typer shows as nothing.

The command classes are passed to typer (``app.command(name, cls=Command)``).
"""

from __future__ import annotations

import re
from typing import Any

from typer.core import TyperCommand, TyperGroup
from typer.exceptions import Abort

_ITEM = re.compile(r"\s*(?:[*•-]|\d+\.)\s")


def reflow(text: str | None) -> str | None:
    """Join the lines of each paragraph of a docstring (see the module docstring)."""
    if not text:
        return text
    import inspect

    paragraphs = inspect.cleandoc(text).split("\n\n")
    out = []
    for para in paragraphs:
        if para.startswith("\b"):
            out.append(para)
            continue
        lines: list[str] = []
        for line in para.split("\n"):
            if lines and not _ITEM.match(line):
                lines[-1] = f"{lines[-1].rstrip()} {line.strip()}"
            else:
                lines.append(line.rstrip())
        out.append("\n".join(lines))
    return "\n\n".join(out)


def _plain_flags(params: list[Any]) -> None:
    for p in params:
        if getattr(p, "is_flag", False) and p.metavar is None:
            p.metavar = ""


class _Conventions:
    """The help conventions of the module docstring, for a typer command or group."""

    help: str | None
    params: list[Any]

    def _tidy(self) -> None:
        self.help = reflow(self.help)
        _plain_flags(self.params)

    def get_help_option(self, ctx: Any) -> Any:
        """The --help option, shown without a value type."""
        from simulplay.cli.coerce import install

        option = super().get_help_option(ctx)  # type: ignore[misc]
        if option is not None:
            _plain_flags([option])
            install([option])
        return option


class Command(_Conventions, TyperCommand):
    """A typer command with reflowed help and flags shown without a value type, whose plain
    values are coerced without Pydantic (:mod:`simulplay.cli.coerce`)."""

    def __init__(self, *args: Any, **kwargs: Any):
        from simulplay.cli.coerce import install

        super().__init__(*args, **kwargs)
        self._tidy()
        install(self.params)


class Group(_Conventions, TyperGroup):
    """The application's group, with the same help conventions and coercion as :class:`Command`."""

    def __init__(self, *args: Any, **kwargs: Any):
        from simulplay.cli.coerce import install

        super().__init__(*args, **kwargs)
        self._tidy()
        install(self.params)

    def invoke(self, ctx: Any) -> Any:
        """A command's KeyboardInterrupt (Ctrl-C, and SIGTERM's ``Terminated``) leaves as
        ``Abort`` chained to it, as click does: typer's own main would turn it into a silent
        ``Exit(130)``, losing the one line that says what was kept, and SIGTERM's 143."""
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as e:
            raise Abort() from e
