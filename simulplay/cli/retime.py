"""``retime``: measure a manifest's service times again on a warm backend, with the clock check."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import typer

from simulplay.cli.options import quiet_option
from simulplay.cli.synth import print_clock


def retime(
    manifest: Path = typer.Argument(..., help="The .parquet request manifest `simulplay synth` or `run` wrote (its "
                                    "metadata names the backend and holds the clock check)."),
    store: Path = typer.Option(..., "--store", help="The audio store the manifest was synthesized into."),
    out: Path = typer.Option(..., "--out", help="The re-timed manifest (.parquet or .csv); its chunk table goes "
                             "beside it as <stem>.chunks.parquet and the comparison as <stem>.retime.csv."),
    sample: int = typer.Option(20, "--sample", min=1, help="Re-time this many distinct requests, spread evenly "
                               "over the manifest (the others keep their times)."),
    all_requests: bool = typer.Option(False, "--all", help="Re-time every request (a manifest to replay)."),
    backend: str | None = typer.Option(None, "--backend", help="Backend spec (default: the one recorded in the "
                                       "manifest); it must have the manifest's identity apart from the device."),
    quiet: bool = quiet_option(),
):
    """Measure a manifest's service times again: serially, on a warm backend, with the clock
    check running — on a machine you know is quiet.

    The stored audio is kept (new samples are discarded); only the clocks change
    (service_s, cpu_s, wait_s, load1, contended, the chunks' ready offsets). The
    comparison gives per output the median and the worst ratio new/old service time.
    Replay and η on either manifest can then be compared.
    """
    from simulplay.cli.console import progress_bar
    from simulplay.core.tables import check_distinct, check_writable
    from simulplay.store.store import AudioStore
    from simulplay.workflows.retime import retime_manifest

    check_writable(out, (".parquet", ".csv"))
    check_distinct({"--out": out}, [manifest])
    res = retime_manifest(manifest, AudioStore.open(store, create=False), out,
                          sample=None if all_requests else sample, backend=backend, progress=progress_bar(quiet))
    report_retime(res)


def report_retime(res) -> None:
    """What was re-timed, the ratios, and both clock verdicts."""
    ratios = res.manifest.loc[res.manifest["retimed"], "service_s"] / \
        res.manifest.loc[res.manifest["retimed"], "original_service_s"]
    worst = ratios.iloc[int(abs(ratios.map(math.log)).to_numpy().argmax())] if len(ratios) else float("nan")
    typer.echo(f"re-timed {res.retimed} request(s) → {res.path}: service time new/old median {ratios.median():.3f}, "
               f"worst {worst:.3f} (per output: {res.path.with_name(res.path.stem + '.retime.csv')})")
    typer.echo(f"original clock: {res.original_clock}; re-timing {res.retime_clock.verdict} "
               f"({res.retime_clock.details()})")
    print_clock(res.clock)
    if res.failed:
        print(f"simulplay: {len(res.failed)} request(s) failed when re-timed and keep their old times "
              f"(first: {res.failed[0]})", file=sys.stderr)
        raise typer.Exit(1)
