"""``sweep``: modelled η and L over a grid of a grouping rule's parameters, from a run folder,
with the best points confirmed by real synthesis."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from simulplay.cli.options import quiet_option

RULE_HELP = ("A rule family with a grid of its parameters, repeatable: NAME:key=VALUES,… with VALUES a value, a "
             "list 1,2,4, a range of integers a..b (step 1) or a..b:step (from a in steps up to b; b only when "
             "on a step: 0.5..7.9:0.5 ends at 7.5), e.g. "
             "'timer:w=0.5..8:0.5', 'words:n=2..16', 'punct:cap=1..4,min_words=3'. At most 10,000 points in all.")


def sweep(
    run_dir: Path = typer.Argument(..., help="A run folder from `simulplay run` or `simulplay demo`."),
    rule: list[str] = typer.Option(..., "--rule", help=RULE_HELP),
    out: Path | None = typer.Option(None, "--out", help="Folder for the sweep's tables and figures "
                                    "(default: RUN_DIR/sweep)."),
    confirm: int = typer.Option(0, "--confirm", min=0, help="Synthesize the K best unmeasured grid points for "
                                "real with the run's backend (into its store; resumable) and set them beside the "
                                "model."),
    by: str = typer.Option("L", "--by", help="What --confirm ranks by: L (the lowest modelled mean end offset of "
                           "A and F) or eta (the most negative modelled η)."),
    train: list[str] = typer.Option([], "--train", help="Fit the models on these conditions of the run only "
                                    "(repeatable; default: every condition it synthesized)."),
    service: str = typer.Option("fit", "--service", help="fit (default): modelled requests on the fitted clock "
                                "(LAD of service_s on audio_s and characters), measured ones on their measured "
                                "times; zero or scale=F: both sides replayed so (zero isolates the duration model)."),
    folds: int = typer.Option(5, "--folds", min=2, help="Folds of talks for the duration model's held-out error."),
    duration_terms: str = typer.Option("auto", "--duration-terms", help="What the duration model reads: auto "
                                       "(default: phonemes where the backend has a phonemizer, Piper; else text), "
                                       "text (characters, words, punctuation, sentence end) or phonemes."),
    servers: str | None = typer.Option(None, "--servers", help="The number of shared servers as a grid axis, in "
                                       "the grid's syntax: 4, a list 1,2,4 or a range 1..8. Every grid point is "
                                       "replayed with each share group's outputs queueing for K servers (the "
                                       "shared-server replay of `replay --servers`, over the fitted clock); the "
                                       "tables gain the column servers and sweep_servers.png plots η and L "
                                       "against it."),
    share: str = typer.Option("panel", "--share", help="With --servers: which outputs share the servers: panel "
                              "(every talk and system of a rule), talk, system or output."),
    load_curve: Path | None = typer.Option(None, "--load-curve", help="With --servers: a load table (columns "
                                           "concurrency and service_p50_s, seconds) giving the slowdown of a "
                                           "request that starts with c requests in service; default: none (1)."),
    slowdown: str | None = typer.Option(None, "--slowdown", help="With --servers: the calibrated slowdown, a factor "
                                        "or a calibration table (columns in_flight and slowdown; `simulplay live "
                                        "--predict` writes calibration.parquet): service × the factor at the "
                                        "number of requests in flight; default: 1."),
    commit: list[str] = typer.Option([], "--commit", help="A family of commit policies in the grid's syntax, "
                                     "repeatable: 'stable:k=1..4', 'hold:t=0.25..2:0.25', 'mask:k=0..6', 'final'. "
                                     "Every policy is crossed with every --rule point (conditions POLICY+RULE, "
                                     "on the run's revising traces); the table gains, per translator, what the "
                                     "listener got: spoken-then-retracted words (and per minute of source), WER "
                                     "and CER of the spoken text against the final hypothesis, exact (no model)."),
    quiet: bool = quiet_option(),
):
    """Model η and the end offset L at every point of a grid of a rule's parameters, from a
    run's own requests; every value is modelled and labelled so.

    A duration model (least squares, trimmed of outliers, on each request's phonemes as
    the backend reads them, one term per phoneme symbol plus its sentences, with Piper;
    on characters, words, punctuation and a sentence-final flag otherwise; times each
    stream's own rate, plus the run's own residuals on the same stretch of text) and the
    fitted service clock are fitted on the run's requests; every grid point is grouped
    from the run's traces, replayed and compared exactly as `replay` and `eta` do, against
    the run's reference (modelled too). The run's measured conditions are modelled as well
    and set beside their measurements (sweep_check: per talk and mean; the largest
    disagreement is printed, and one warning line when the model misses a measured η by
    more than its interval's half-width). Writes sweep.parquet/.csv/.md (one row per
    backend × realization × family × grid point: the parameters, modelled η with interval,
    parts and direction counts, modelled L of A and F with intervals, requests per system,
    measured/confirmed flags and measured values), sweep_check.*, sweep_models.csv and one
    figure per family (sweep_K_RULE.png/.svg). With --servers, one row per number of servers
    too, and sweep_servers.png/.svg. With --commit, one family per policy family × rule
    family, each point the rule after the policy (its committed text grouped and modelled),
    with the columns commit, spoken_then_retracted_a/_f, retracted_per_min_a/_f, wer_pct_a/_f
    and cer_pct_a/_f. Columns ending in _s are seconds.
    """
    from simulplay.cli.console import progress_bar
    from simulplay.workflows.sweep import sweep_run

    res = sweep_run(run_dir, rule, out=out, confirm=confirm, by=by, train=train, folds=folds, service=service,
                    terms=duration_terms, servers=servers, share=share, load_curve=load_curve,
                    slowdown=slowdown, progress=progress_bar(quiet), commits=commit)
    print_sweep(res)


def print_sweep(res, *, brief: bool = False) -> None:
    """The sweep's short table, the models, the self-check and where the files are
    (``brief``: without the models and the check table, as the demo prints it)."""
    from simulplay.cli.console import print_table
    from simulplay.core.signature import compact_signatures

    cols = [c for c in ("family", "rule", "servers", "retracted_per_min_a", "retracted_per_min_f", "modelled_eta_s",
                        "modelled_ci_low_s", "modelled_ci_high_s", "modelled_L_a_s", "modelled_L_f_s",
                        "measured_eta_s") if c in res.table]
    print_table(res.table[cols], compact_signatures(res.signatures)[:1],
                title="modelled sweep (a model of the run's requests, not a measurement): η and L, seconds")
    check = res.check
    if not brief:
        for m in res.result.models:
            typer.echo((m.label() + ": " if m.label() else "") + m.durations.describe())
        print_table(check.table.drop(columns=[c for c in ("backend", "realization") if c in check.table]),
                    compact_signatures(check.signatures)[:1], title="modelled vs measured")
    typer.echo(check.summary)
    for w in check.warnings:
        print(f"simulplay: warning: {w}", file=sys.stderr)
    if res.confirmed:
        typer.echo(f"confirmed by synthesis: {', '.join(res.confirmed)} (manifest {res.synth.path}; synthesized "
                   f"{res.synth.stats.synthesized}, already in store {res.synth.stats.skipped})")
    typer.echo(f"sweep written to {res.out.resolve()}")
