"""``store verify`` and ``store gc``: checking an audio store and removing leftovers of killed runs."""

from __future__ import annotations

from pathlib import Path

import typer

from simulplay.cli.helptext import Command, Group

app = typer.Typer(cls=Group, no_args_is_help=True,
                  help="Check an audio store (`verify`) or remove what killed runs left in it (`gc`).")

STORE_ARG = typer.Argument(..., help="Audio store folder (the --store of `simulplay synth`).")


@app.command("verify", cls=Command)
def verify(store: Path = STORE_ARG):
    """Check every record of the store and the audio it names; change nothing.

    A record must be readable JSON with its audio key, sample count, rate, service time and
    chunks; its FLAC must exist, decode to mono samples whose SHA-256 is the audio key, and
    hold the record's sample count at its rate (Hz). Also counted: temporary files
    (.NAME.*.tmp, writes cut by a kill), lock files no running process holds, failed
    requests and audio files no record refers to (kept, not a fault). Prints the counts and
    each damaged request (talk, system, condition, realization, seq); exit code 1 when any
    request is damaged or a killed run left files behind, 0 when the store is sound.
    """
    from simulplay.store.check import verify_store

    report = verify_store(store)
    typer.echo(report.summary())
    print_damaged(report)
    if not report.sound:
        raise typer.Exit(1)


@app.command("gc", cls=Command)
def gc(store: Path = STORE_ARG):
    """Remove temporary files and stale lock files that killed runs left in the store.

    Refused (exit code 2) while a `synth`, `run` or `edges` works on the store: they hold
    its session lock, which gc takes exclusively. Records and audio are never removed (a
    rerun of `synth` replaces damaged audio). Prints what was removed.
    """
    from simulplay.store.check import gc_store

    report = gc_store(store)
    typer.echo(f"store {report.root}: removed {len(report.temporary)} temporary files ({report.temporary_bytes} "
               f"bytes) and {len(report.stale_locks)} stale lock files")


def print_damaged(report) -> None:
    """Each damaged request (the first ten, then a count) and what to run about it."""
    from simulplay.store.check import SHOWN

    for line in report.damaged[:SHOWN]:
        typer.echo(f"damaged: {line}")
    if len(report.damaged) > SHOWN:
        typer.echo(f"damaged: … and {len(report.damaged) - SHOWN} more")
    if report.damaged:
        typer.echo("run the same `simulplay synth` command again: it synthesizes damaged requests anew")
    if report.temporary or report.stale_locks:
        typer.echo(f"`simulplay store gc {report.root}` removes the {len(report.temporary)} temporary and "
                   f"{len(report.stale_locks)} stale lock files")
