"""``live``: play traces in real time against a TTS server and check the simulator against it."""

from __future__ import annotations

from pathlib import Path

import typer

from simulplay.cli.options import COMMIT_HELP, commit_option, events_option, out_option, talks_from_option, talks_option


def live(
    trace: list[Path] = typer.Argument(..., help="Trace files (.jsonl, .csv, .parquet)."),
    rule: list[str] = typer.Option(..., "--rule", help="Grouping rule (repeatable): immediate, timer:w=4, …, or a "
                                   "closed-loop policy (backlog:below=1, pacer), run on the wall clock."),
    commit: list[str] | None = commit_option(COMMIT_HELP + " Requests leave at their commit times: hold's "
                                             "wake-ups are timers on the live clock."),
    backend: str = typer.Option("piper", "--backend", help="A local request backend (piper[:…], espeak, …), "
                                "served for the run on a free loopback port, or http:base_url=URL[,model=…] "
                                "for a running OpenAI-compatible server."),
    out: Path = out_option("Run folder (new or empty): live manifest, tables, run.json, server.log.", table=False),
    speed: float = typer.Option(1.0, "--speed", help="Divide every trace time by this factor (> 0)."),
    talks: list[str] = talks_option(),
    talks_from: Path | None = talks_from_option(),
    events: str = events_option(),
    concurrent: int | None = typer.Option(None, "--concurrent", min=1,
                                          help="Outputs played at a time (default: all at once)."),
    timeout: float = typer.Option(30.0, "--timeout", min=0.001, help="Seconds any wait may take (connect, "
                                  "response, each piece of audio) before the request counts as failed."),
    store: Path | None = typer.Option(None, "--store", help="Audio store for the received audio "
                                      "(default: OUT/store)."),
    predict: bool = typer.Option(False, "--predict", help="After the live part, synthesize the same requests one "
                                 "at a time with the same backend settings and compare what replay predicts from "
                                 "them with the live run: per output ΔL, and η with --a/--f (comparisons b, c)."),
    a: str | None = typer.Option(None, "--a", help="Translator A (a system name), for η with --predict."),
    f: str | None = typer.Option(None, "--f", help="Translator F (a system name), for η with --predict."),
    reference: str | None = typer.Option(None, "--reference", help="Reference rule for η (default: the first "
                                         "--rule)."),
    calibrate: bool = typer.Option(False, "--calibrate", help="With --predict: before the run, a short closed-loop "
                                   "load burst against the same server (one request in flight, then as many as "
                                   "outputs play at once) whose busy periods give the server's slowdown; comparison "
                                   "(c) is then printed with it too (calibration_load.parquet, load.parquet)."),
):
    """Send each output's requests to a TTS server in real time and play what arrives.

    Each output (talk × system × rule) is a session on a monotonic clock whose time 0 is
    the source start; the rule releases requests at their dispatch times (divided by
    --speed) and one request is in flight per output. A closed-loop policy (backlog,
    pacer) decides on the wall clock instead, at each arrival, request ready, part
    played and wake-up, from what the virtual player holds; the live manifest records
    its trigger and what it saw (queued_s, in_flight). A virtual player plays each part
    once it has arrived and the previous part has ended. Writes the live manifest
    (live.parquet, read by replay, eta and player like a synth manifest), the requests,
    player and timeline tables, the agreement of replay with the live player and
    run.json (client lateness p50/p99/max, verdict). --predict adds the isolated
    synthesis (isolated.parquet) and the prediction tables (prediction.parquet,
    prediction_eta.parquet): the serial replay of the isolated synthesis and, when all
    outputs played at once, the replay with one server shared by all, three ways: slowdown 1,
    the slowdown calibrated from the run's own busy periods (calibration.parquet) and, with
    --calibrate, the slowdown of a load burst measured before the run. Exit code 1 when requests failed
    (their outputs are incomplete), 130 on Ctrl-C after writing what was measured.

    With --commit, a revising trace (updates with retract) is played as each commit policy
    speaks it: every rule groups what the policy commits and its requests leave at their
    commit times (hold's wake-ups included); outputs are keyed POLICY+RULE, and one after
    the oracle final is marked non-causal in the live manifest's signatures.
    """
    from simulplay.core.paths import check_new_folder
    from simulplay.grouping import commit_rules, parse_rule, unique_rules
    from simulplay.live.predict import design_from_flags
    from simulplay.live.run import live_run
    from simulplay.traces.select import talk_ids

    rules = commit_rules(unique_rules([parse_rule(r) for r in rule]), commit)
    design = design_from_flags(a, f, reference, [r.canonical() for r in rules], predict)
    check_new_folder(out)
    res = live_run(trace, rules, backend, out, speed=speed, talks=talk_ids(talks, talks_from), events=events,
                   concurrent=concurrent, timeout=timeout,
                   store=store, predict=predict, design=design, calibrate=calibrate)
    finish_live(res)


def finish_live(res) -> None:
    """Print what a live run did and compared, and exit (1 when requests failed)."""
    for line in summary_lines(res.summary):
        typer.echo(line)
    typer.echo(f"written to {res.folder}")
    raise typer.Exit(1 if res.n_failed else 0)


def summary_lines(s: dict) -> list[str]:
    """What a live run prints: counts and lateness, then comparisons (a) to (c) (ms)."""
    late, agree = s["lateness"], s["agreement"].get("request", {})
    lines = [f"{s['outputs']} outputs, {s['requests']} requests, {s['failed']} failed "
             f"({s['incomplete_outputs']} incomplete outputs); lateness p50 {late['send']['p50_ms']:.2f} ms, "
             f"p99 {late['send']['p99_ms']:.2f} ms, max {late['send']['max_ms']:.2f} ms: {late['verdict']}"]
    if agree:
        lines.append(f"(a) replay of the live manifest vs live (request release): max |ΔL| "
                     f"{agree['max_abs_d_offset_ms']:.2f} ms, max |Δ first playback| "
                     f"{agree['max_abs_d_first_play_ms']:.2f} ms, {agree['within_goal']} of {agree['outputs']} "
                     "outputs within 20 ms")
    pred = s.get("prediction")
    if pred:
        lines += prediction_lines(pred)
    return lines


def shared_ways(p: dict) -> list[tuple[str, str]]:
    """The shared predictions of a summary and their printed labels: slowdown 1, calibrated
    from the run, the load curve measured before it (with its cost)."""
    cal = p.get("calibration", {})

    def points(text: str) -> str:
        return " ".join(f"{n}:{float(f):.2f}" for n, f in (x.split(":") for x in text.split(";")))

    ways = [("shared", "slowdown 1")]
    if "shared_run" in p:
        ways.append(("shared_run", f"calibrated slowdown from this run ({cal['run']['factor']:.3f} over all; "
                                   f"per number in flight {points(cal['run']['points'])})"))
    if "shared_load" in p:
        ways.append(("shared_load", f"load curve measured before the run ({cal['load']['cost_s']:.1f} s; "
                                    f"{cal['load']['factor']:.3f} over all; per number in flight "
                                    f"{points(cal['load']['points'])})"))
    return ways


def prediction_lines(p: dict) -> list[str]:
    """Comparisons (b) and (c) as printed lines (ms)."""
    def stats(row: dict) -> str:
        if not row.get("n"):
            return "no complete output"
        eta = f", max |Δη| {row['max_abs_d_eta_ms']:.1f} ms" if "max_abs_d_eta_ms" in row else ""
        return (f"ΔL p50 {row['p50_abs_dL_ms']:.1f} / p95 {row['p95_abs_dL_ms']:.1f} / max "
                f"{row['max_abs_dL_ms']:.1f} ms (mean signed {row['mean_dL_ms']:+.1f} ms){eta}")

    n, at_once, iso = p["outputs"], p["outputs_at_once"], p["isolated"]
    lines = [f"(b) isolated synthesis (one server per output) vs live, {n} outputs, {at_once} at a time: {stats(iso)}"]
    if "shared" in p:
        lines.append(f"(c) {at_once} outputs at once against one serial server: the one-server-per-output model "
                     f"errs by {iso['mean_dL_ms']:+.1f} ms per output on average (max |ΔL| "
                     f"{iso['max_abs_dL_ms']:.1f} ms); the shared-server replay (K=1) vs live:")
        lines += [f"    {label}: {stats(p[name])}" for name, label in shared_ways(p)]
    else:
        lines.append("(c) not measured: the outputs did not all play at once (--concurrent)")
    if "eta_note" in p:
        lines.append(f"    {p['eta_note']}")
    return lines
