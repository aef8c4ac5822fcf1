"""``explore``: a run folder or step-by-step tables as an interactive page that opens from disk."""

from __future__ import annotations

from pathlib import Path

import typer


def explore(
    inputs: list[Path] = typer.Argument(..., help="A run folder (`simulplay run`/`demo`), or the tables of "
                                        "step-by-step work, as `simulplay report` reads them."),
    out: Path | None = typer.Option(None, "--out", help="Explorer folder (default RUN_DIR/explore; step-by-step "
                                    "tables need it). A folder the command wrote before is replaced whole."),
    store: Path | None = typer.Option(None, "--store", help="Audio store of the manifest, for the lanes' audio "
                                      "(default: a run folder's own store; without one the page says audio is "
                                      "absent)."),
    trace: list[Path] = typer.Option([], "--trace", help="Trace file(s) for the text updates on the timeline, "
                                     "instead of those run.json or the manifest name; repeatable."),
    live: Path | None = typer.Option(None, "--live", help="A `simulplay live` run folder (or its timeline.parquet) "
                                     "shown as a live lane under each predicted lane of the same talk, system and "
                                     "condition: parts played, stalls, send lateness and ΔL = L predicted − L live "
                                     "(seconds) on hover. Its source durations must be the run's (same trace, "
                                     "--speed 1, or the live manifest's own replay). Default: the run folder's "
                                     "live/, or the live run whose live.parquet is the input."),
    joins: Path | None = typer.Option(None, "--joins", help="The joins table of `simulplay quality` (OUT.joins, or "
                                      "its OUT): each join of the primary replay's listener audio marked on its "
                                      "lane, the level step (dB) on hover."),
):
    """An interactive explorer of a run: open OUT/index.html in a browser (no server, no network).

    The panel view shows the η table (conditions × backends and realizations, with
    intervals and direction counts) and a talk × condition grid of per-talk η,
    coloured by sign and size; clicking a cell opens that talk. The timeline shows
    A and F under the reference and the chosen condition on one zoomable source-time
    axis: text updates, each request from dispatch through synthesis to readiness,
    playback segments and idle gaps, the limiting part, source end S and each
    output's end; hovering shows a request's text and times, which equal
    `simulplay replay --parts`. Each lane plays its listener audio, rendered in the
    page by `simulplay render`'s rule from the stored audio, with a playhead on the
    source clock; clicking a part plays from it. A selector switches between the
    replay variants the run computed (sensitivity replays, edge-silence thresholds)
    and the panels; every view shows its signature. A live run adds a live lane under
    each predicted one; a quality joins table marks the joins.
    """
    from simulplay.report.explore import build_explorer, default_out, write_explorer

    target = out if out is not None else default_out(inputs)
    ex = build_explorer(inputs, traces=trace, store=store, live=live, joins=joins)
    files = write_explorer(ex, target)
    audio = "" if ex.audio.store is not None else f"; audio absent: {ex.audio.why}"
    extra = "" if ex.live is None else f"; live lanes of {ex.live.matched} output(s) from {ex.live.live.folder}"
    extra += "" if ex.joins is None else f"; joins from {ex.joins.path}"
    typer.echo(f"wrote the explorer of {len(ex.talks.talks())} talk(s) and {len(ex.variants)} replay(s) "
               f"({len(files)} files) to {target}{audio}{extra}; open {target / 'index.html'}")
