"""The command line (``simulplay``): a typer application whose commands parse their flags,
call one library function and write or print the result. ``simulplay.cli:main`` is the
console entry point."""

from simulplay.cli.app import app, main

__all__ = ["app", "main"]
