"""``load``: a TTS server's load curve (TTFA, service, RTF and underruns against concurrency)."""

from __future__ import annotations

from pathlib import Path

import typer

from simulplay.cli.options import out_option


def load(
    backend: str = typer.Option("piper", "--backend", help="A local request backend (piper[:…], espeak, …), "
                                "served for the run on a free loopback port, or http:base_url=URL "
                                "for a running OpenAI-compatible server (more settings: `simulplay live`)."),
    concurrency: str = typer.Option("1,2,4,8", "--concurrency", help="Levels: clients (closed loop) or "
                                    "arrival streams (--rate), comma-separated, e.g. 1,2,4,8."),
    out: Path = out_option("The load table (a load curve `replay --load-curve` reads); the requests table, "
                           "the figure (PNG, SVG) and the server's log are written beside it."),
    requests_from: Path | None = typer.Option(None, "--requests-from", help="Request texts: the text column "
                                              "of a manifest or requests table (default: the demo's request mix)."),
    texts: Path | None = typer.Option(None, "--texts", help="Request texts: one per line of this file."),
    requests: int | None = typer.Option(None, "--requests", min=1, help="Timed requests per level "
                                        "(default 4 per client, unless --duration)."),
    duration: float | None = typer.Option(None, "--duration", min=0.001, help="Seconds per level: no new "
                                          "request after that (those in flight finish)."),
    rate: float | None = typer.Option(None, "--rate", help="Open loop: each of the level's streams sends "
                                      "Poisson arrivals at this many requests per second (default: closed loop)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the --rate arrivals."),
    server_workers: int | None = typer.Option(None, "--server-workers", min=1, help="K of the served "
                                              "backend's `simulplay serve --workers K` (a local backend only)."),
    ttfa_target: float = typer.Option(1.0, "--ttfa-target", min=0.0, help="Seconds: the knee is the first "
                                      "level whose p95 TTFA exceeds it."),
    timeout: float = typer.Option(30.0, "--timeout", min=0.001, help="Seconds any wait may take before the "
                                  "request counts as failed (it is never retried)."),
):
    """Measure a TTS server under load: per level, one untimed warm burst, then N clients that
    each send a request, read its streamed audio to the end and send the next (or --rate
    open-loop arrivals). Per level: TTFA (first audible, −40 dBFS / 10 ms) and first byte
    p50/p95/p99, service (sent → last byte) p50/p95, RTF p50/p95, requests that underran,
    audio per second, failures by status and the client's lateness. Exit code 1 when requests
    failed (each is counted, none retried). docs/many-listeners.md.
    """
    from simulplay.loadtest.run import run_load_command

    raise typer.Exit(run_load_command(backend, concurrency, out, requests_from=requests_from, texts=texts,
                                      requests=requests, duration=duration, rate=rate, seed=seed,
                                      server_workers=server_workers, ttfa_target=ttfa_target, timeout=timeout,
                                      echo=typer.echo))
