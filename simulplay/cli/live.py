"""``live``: play traces in real time against a TTS server and check the simulator against it."""

from __future__ import annotations

from pathlib import Path

import typer

from simulplay.cli.options import out_option


def live(
    trace: list[Path] = typer.Argument(..., help="Trace files (.jsonl, .csv, .parquet)."),
    rule: list[str] = typer.Option(..., "--rule", help="Grouping rule (repeatable): immediate, timer:w=4, …"),
    backend: str = typer.Option("piper", "--backend", help="A local request backend (piper[:…], espeak, …), "
                                "served for the run on a free loopback port, or http:base_url=URL[,model=…] "
                                "for a running OpenAI-compatible server."),
    out: Path = out_option("Run folder (new or empty): live manifest, tables, run.json, server.log.", table=False),
    speed: float = typer.Option(1.0, "--speed", help="Divide every trace time by this factor (> 0)."),
    talks: list[str] = typer.Option([], "--talks", help="Only these talk ids (repeatable)."),
    concurrent: int | None = typer.Option(None, "--concurrent", min=1,
                                          help="Outputs played at a time (default: all at once)."),
    timeout: float = typer.Option(30.0, "--timeout", min=0.001, help="Seconds any wait may take (connect, "
                                  "response, each piece of audio) before the request counts as failed."),
    store: Path | None = typer.Option(None, "--store", help="Audio store for the received audio "
                                      "(default: OUT/store)."),
):
    """Send each output's requests to a TTS server in real time and play what arrives.

    Each output (talk × system × rule) is a session on a monotonic clock whose time 0 is
    the source start; the rule releases requests at their dispatch times (divided by
    --speed) and one request is in flight per output. A virtual player plays each part
    once it has arrived and the previous part has ended. Writes the live manifest
    (live.parquet, read by replay, eta and player like a synth manifest), the requests,
    player and timeline tables, the agreement of replay with the live player and
    run.json (client lateness p50/p99/max, verdict). Exit code 1 when requests failed
    (their outputs are incomplete), 130 on Ctrl-C after writing what was measured.
    """
    from simulplay.core.paths import check_new_folder
    from simulplay.grouping import parse_rule, unique_rules
    from simulplay.live.run import live_run

    rules = unique_rules([parse_rule(r) for r in rule])
    check_new_folder(out)
    res = live_run(trace, rules, backend, out, speed=speed, talks=talks, concurrent=concurrent, timeout=timeout,
                   store=store)
    s, late, agree = res.summary, res.summary["lateness"], res.summary["agreement"].get("request", {})
    typer.echo(f"{s['outputs']} outputs, {s['requests']} requests, {s['failed']} failed "
               f"({s['incomplete_outputs']} incomplete outputs); lateness p50 {late['send']['p50_ms']:.2f} ms, "
               f"p99 {late['send']['p99_ms']:.2f} ms, max {late['send']['max_ms']:.2f} ms: {late['verdict']}")
    if agree:
        typer.echo(f"replay vs live (request release): max |ΔL| {agree['max_abs_d_offset_ms']:.2f} ms, max "
                   f"|Δ first playback| {agree['max_abs_d_first_play_ms']:.2f} ms, {agree['within_goal']} of "
                   f"{agree['outputs']} outputs within 20 ms; written to {out}")
    raise typer.Exit(1 if res.n_failed else 0)
