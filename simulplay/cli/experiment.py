"""``run`` and ``demo``: an experiment file from synthesis to report, and the embedded demo."""

from __future__ import annotations

from pathlib import Path

import typer

from simulplay.cli.options import allow_incomplete_option, quiet_option


def run(
    experiment: Path = typer.Argument(..., help="EXPERIMENT.toml (see the README for its keys)."),
    allow_incomplete: bool = allow_incomplete_option("Exclude outputs with failed requests and count them."),
    quiet: bool = quiet_option(),
):
    """Run an experiment: synthesize (resumable) → replay → η, plus the sensitivity
    replays it lists, writing every table with its signature into its output folder."""
    from simulplay.cli.console import progress_bar
    from simulplay.workflows.experiment import load_experiment
    from simulplay.workflows.pipeline import run_experiment

    exp = load_experiment(experiment)
    finish_run(run_experiment(exp, allow_incomplete=allow_incomplete, progress=progress_bar(quiet)), exp)


def demo(
    out_dir: Path = typer.Option(Path("simulplay-demo"), "--out-dir", help="Folder for the demo's store and outputs."),
    quiet: bool = quiet_option(),
):
    """The embedded demo: the bundled sample traces (3 talks, translators `eager` and
    `batched`) synthesized with Piper's en_US-joe-medium voice on the CPU under immediate,
    timer:w=2, timer:w=4, punct and words; replayed (also with chunk release, zero
    service, the modelled clock service=fit and edge silence removed at VAD thresholds
    0.3/0.5/0.7); η with intervals
    printed and a report written. A second run reuses the store. onnxruntime uses
    min(4, CPU cores) intra-op threads here."""
    from simulplay.cli.console import progress_bar
    from simulplay.workflows.experiment import demo_experiment
    from simulplay.workflows.pipeline import run_experiment

    exp = demo_experiment(out_dir)
    typer.echo(f"demo folder: {exp.out}")
    finish_run(run_experiment(exp, progress=progress_bar(quiet)), exp)


def finish_run(res, exp) -> None:
    """What the run did and its tables: η, contrasts, sensitivity replays, edges, diagnostics."""
    from simulplay.cli.console import print_table
    from simulplay.cli.diagnostics import print_diagnostics
    from simulplay.cli.synth import print_parallel_summary

    st = res.synth.stats
    typer.echo(f"{len(res.synth.manifest)} requests: synthesized {st.synthesized}, already in store {st.skipped}, "
               f"failed {st.failed} ({res.timings['synthesis_s']:.1f} s); analysis {res.timings['analysis_s']:.1f} s")
    print_parallel_summary(st, exp.executor, False)
    print_table(res.eta.table, res.eta.table_signatures, title=f"η: {exp.a} vs {exp.f}, reference {exp.reference}",
                notes=res.eta.notes)
    if res.realizations is not None:
        print_table(res.realizations.summary, res.realizations.summary_signatures,
                    title="η across realizations, talk by talk: sample SD of each talk's η (s), the widest talk")
    if len(res.eta.contrasts):
        print_table(res.eta.contrasts, res.eta.contrast_signatures, title="Buffered-policy contrasts δ(P1) − δ(P2)",
                    notes=res.eta.contrast_notes)
    for name, (_, eta_v) in res.variants.items():
        print_table(eta_v.table[["condition", "eta_s", "ci_low_s", "ci_high_s", "n_negative", "n_positive"]],
                    eta_v.table_signatures, title=f"sensitivity replay {name}" + (
                        " (a modelled clock, not a measurement)" if name == "service=fit" else ""),
                    notes=_short(eta_v.table))
    if res.edges is not None:
        print_table(res.edges.eta.table[["threshold", "condition", "eta_s", "ci_low_s", "ci_high_s", "n_negative",
                                         "n_positive"]], res.edges.eta.table_signatures,
                    title="edge-silence replay (η per VAD threshold)", notes=_short(res.edges.eta.table))
    if res.content is not None:
        print_diagnostics(res.content)
    typer.echo(f"outputs in {exp.out.resolve()} (audio store {exp.store.resolve()})")
    typer.echo(f"report: {(exp.out / 'report' / 'report.html').resolve()}")


def _short(table) -> list[str]:
    """The brief small-panel note of a sensitivity table (its columns hold the counts)."""
    from simulplay.analysis.small_panels import small_panel_notes

    return small_panel_notes(table, brief=True)
