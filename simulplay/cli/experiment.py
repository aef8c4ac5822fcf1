"""``run`` and ``demo``: an experiment file from synthesis to report, and the embedded demo."""

from __future__ import annotations

from pathlib import Path

import typer

from simulplay.cli.options import allow_incomplete_option, quiet_option, talks_from_option, talks_option


def run(
    experiment: Path = typer.Argument(..., help="EXPERIMENT.toml (its keys: docs/experiments.md)."),
    allow_incomplete: bool = allow_incomplete_option("Exclude outputs with failed requests and count them."),
    quiet: bool = quiet_option(),
    events: str | None = typer.Option(None, "--events", help="keep or drop: what non-speech event tags "
                                      "((Applaus), [Music], …) do; overrides the experiment's key events."),
    talks: list[str] = talks_option("Only these talk ids (repeatable; commas separate several); overrides the "
                                    "experiment's key talks."),
    talks_from: Path | None = talks_from_option(),
):
    """Run an experiment: synthesize (resumable) → replay → η, plus the sensitivity
    replays it lists, writing every table with its signature into its output folder.

    With realizations = N ≥ 2 it also prints and writes (eta_spread.csv/.md) the spread of
    η per rule across the realizations — max − min and standard deviation, seconds, per
    replay — and how far the same request's duration differs between realizations
    (duration_noise.csv), and talk by talk each talk's η per realization with its sample
    SD (eta_talk_spread.csv) and per rule the median and maximum per-talk SD and the talk
    with the largest range (eta_talk_sd.csv/.md, printed). With Piper's default settings a
    fresh realization draws new durations; under piper:durations=fixed and service=zero
    the spread is exactly 0. Conditions are synthesized in the experiment's order
    (counterbalanced by default: see `simulplay synth --help`). A panel of fewer than 10
    talks gets a note under each η table: read its direction counts first.

    Before any synthesis the output folder and the store must be writable (exit code 2
    otherwise) and a warning says when the store's file system has less free space than the
    audio the run will add; a full disk mid-run ends it in one line (exit code 1), keeping
    every finished request for the next run."""
    from simulplay.cli.console import progress_bar
    from simulplay.workflows.experiment import load_experiment
    from simulplay.workflows.pipeline import run_experiment

    exp = with_overrides(load_experiment(experiment), events, talks, talks_from)
    finish_run(run_experiment(exp, allow_incomplete=allow_incomplete, progress=progress_bar(quiet)), exp)


def with_overrides(exp, events: str | None, talks: list[str], talks_from: Path | None):
    """The experiment with ``--events`` and ``--talks``/``--talks-from`` in place of its keys, when given."""
    import dataclasses

    from simulplay.traces.events import check_events_mode
    from simulplay.traces.select import talk_ids

    picked = talk_ids(talks, talks_from)
    return dataclasses.replace(exp, events=check_events_mode(events) if events is not None else exp.events,
                               talks=picked or exp.talks)


def demo(
    out_dir: Path = typer.Option(Path("simulplay-demo"), "--out-dir", help="Folder for the demo's store and outputs."),
    realizations: int = typer.Option(1, "--realizations", min=1, help="Independent synthesis realizations; with 2 "
                                     "or more the demo prints how much their η disagree under the η table."),
    piper: str = typer.Option("", "--piper", help="More Piper settings, e.g. durations=fixed (noise_w_scale=0: the "
                              "same durations every run), deterministic (both noises 0: the same samples), "
                              "intra_op_threads=2."),
    backends: str = typer.Option("piper", "--backends", help="The engines the design runs on, joined by commas: "
                                 "piper (default), espeak (eSpeak NG's en-us voice; Debian's espeak-ng). With two, "
                                 "every η table has a panel per backend and the cross-backend interaction "
                                 "η(B1) − η(B2) is printed and written (eta.interaction.csv, report Table 7)."),
    quiet: bool = quiet_option(),
    live: bool = typer.Option(False, "--live", help="Instead: play the demo's three talks, both translators, "
                              "under immediate and timer:w=4 live at speed 1 (about 2 minutes) against a served "
                              "Piper (durations=fixed), then compare the simulator with it: (a) to (c) of "
                              "`simulplay live --predict --calibrate`, into OUT_DIR/live."),
    frameworks: bool = typer.Option(False, "--frameworks", help="Instead: the demo's design under the voice "
                                    "frameworks' grouping (livekit with min_sentence_len 5, 10, 20, 40; livekit-pacer "
                                    "with min_audio_buffer 1, 5, 8; pipecat; realtimetts) against immediate and the "
                                    "paper's rules, into OUT_DIR/frameworks (the demo's store is reused), and print η, "
                                    "mean L, first playback, idle time and joins per minute for each, then the "
                                    "modelled sweep of both knobs (zero service time) beside the measured points "
                                    "(docs: Framework grouping)."),
    revisions: bool = typer.Option(False, "--revisions", help="Instead: a re-translating translator (it revises "
                                   "what it emitted) against eager under the commit policies eager, stable:k=2, "
                                   "hold:t=1, mask:k=3 and final (a non-causal oracle), each then punct, into "
                                   "OUT_DIR/revisions (the demo's store is reused), and print what the listener "
                                   "got under each, mean L and η (docs: Re-translation)."),
):
    """The embedded demo: the bundled sample traces (3 talks, translators `eager` and
    `batched`) synthesized with Piper's en_US-joe-medium voice on the CPU under immediate,
    timer:w=2, timer:w=4, punct and words; replayed (also with chunk release, zero
    service, the modelled clock service=fit and edge silence removed at VAD thresholds
    0.3/0.5/0.7); a modelled sweep of 12 grouping settings (`simulplay sweep`) with its best
    point synthesized for real; how the outputs sound (joins at every request boundary of
    every output, DNSMOS on the first 9.01 s of each output's speech under immediate and
    timer:w=4; `simulplay quality` scores everything, docs: Quality) with intervals; η with
    intervals printed and a report written. A second run reuses the store. onnxruntime uses
    min(4, CPU cores) intra-op threads here.

    Piper draws fresh noise in every run (onnxruntime seeds it once per process), so η
    moves from run to run: noise_w_scale (0.8) draws each phoneme's duration, noise_scale
    (0.667) the waveform's fine detail. --piper durations=fixed keeps every request's sample
    count from run to run, --piper deterministic every sample (docs: Synthesis, Piper's noise).

    --backends piper,espeak runs the same design on Piper and on eSpeak NG (its en-us voice,
    a formant synthesizer with another duration structure) and adds the cross-backend
    interaction η(Piper) − η(eSpeak NG) per rule with its paired talk-bootstrap interval.

    --live plays the demo for real instead (docs: Live runs): twelve outputs at once in
    real time against Piper served on loopback, and the simulator checked against them.

    --revisions runs a re-translating translator instead (docs: Re-translation): what the
    listener gets under five commit policies, side by side, with mean L and η."""
    from simulplay.cli.console import progress_bar
    from simulplay.workflows.experiment import demo_experiment, parse_demo_backends
    from simulplay.workflows.pipeline import run_experiment

    if frameworks or revisions:
        return (print_frameworks if frameworks else print_revisions)(out_dir, piper=piper, quiet=quiet)
    if live:
        from simulplay.cli.live import finish_live
        from simulplay.live.demo import demo_live

        finish_live(demo_live(out_dir, piper=piper))
    exp = demo_experiment(out_dir, realizations=realizations, piper=piper, source="--piper",
                          backends=parse_demo_backends(backends))
    typer.echo(f"demo folder: {exp.out}")
    finish_run(run_experiment(exp, progress=progress_bar(quiet)), exp, ONE_REALIZATION_HINT)


def print_frameworks(out_dir: Path, *, piper: str, quiet: bool) -> None:
    """``demo --frameworks``: run the demo's design under the framework rules and print their table."""
    from simulplay.cli.console import print_table, progress_bar
    from simulplay.workflows.frameworks import frameworks_experiment, frameworks_table, knob_sweep, knob_table
    from simulplay.workflows.pipeline import run_experiment

    exp = frameworks_experiment(out_dir, piper=piper)
    typer.echo(f"frameworks folder: {exp.out}")
    res = run_experiment(exp, progress=progress_bar(quiet))
    print_table(frameworks_table(res.eta.table, res.replay.summary), res.eta.table_signatures,
                title=f"Framework grouping: η ({exp.a} vs {exp.f}, reference {exp.reference}) and playback, seconds")
    knobs = knob_sweep(exp, progress_bar(quiet))
    print_table(knob_table(knobs.table, knobs.check.table), knobs.signatures,
                title="The frameworks' knobs, zero service time: modelled η and mean L, measured where the run "
                      f"synthesized the point (seconds; {knobs.out})")


def print_revisions(out_dir: Path, *, piper: str, quiet: bool) -> None:
    """``demo --revisions``: run the commit policies on the re-translating translator and print them side by side."""
    from simulplay.cli.console import print_table, progress_bar
    from simulplay.core.signature import base_signature
    from simulplay.workflows.pipeline import run_experiment
    from simulplay.workflows.revisions import revisions_experiment, revisions_table

    exp = revisions_experiment(out_dir, piper=piper)
    typer.echo(f"revisions folder: {exp.out}")
    res = run_experiment(exp, progress=progress_bar(quiet))
    finish_run(res, exp)
    table = revisions_table(res.spoken, res.replay.summary, res.eta.table,
                            a=exp.a, reference=exp.reference)
    print_table(table, base_signature(table="revisions-demo", reference=exp.reference),
                title=f"Commit policies side by side: what the listener of {exp.a} got, mean L and η (seconds; "
                      "final is a non-causal oracle)")


#: Printed under the demo's η table when it ran one realization.
ONE_REALIZATION_HINT = ("η of one realization; `simulplay demo --realizations 2` shows how much two realizations "
                        "disagree (Piper's noise floor)")


def finish_run(res, exp, one_realization_hint: str = "") -> None:
    """What the run did and its tables: η, contrasts, sensitivity replays, edges, diagnostics."""
    from simulplay.analysis.small_panels import small_panel_notes
    from simulplay.cli.console import print_table
    from simulplay.cli.diagnostics import print_diagnostics
    from simulplay.cli.synth import print_clock, print_parallel_summary

    st = res.synth.stats
    typer.echo(f"{len(res.synth.manifest)} requests: synthesized {st.synthesized}, already in store {st.skipped}, "
               f"failed {st.failed} ({res.timings['synthesis_s']:.1f} s); analysis {res.timings['analysis_s']:.1f} s")
    print_clock(st.clock)
    for one in res.syntheses:  # a run of several engines: each backend's clock
        typer.echo(f"  {one.manifest['backend'].iloc[0]}: {one.stats.clock.verdict} ({one.stats.clock.details()})")
    print_parallel_summary(st, exp.executor.label(), False)
    print_table(res.eta.table, res.eta.table_signatures, title=f"η: {exp.a} vs {exp.f}, reference {exp.reference}",
                notes=res.eta.notes)
    if res.eta.interactions:
        from simulplay.analysis.interaction import combine_interactions

        both = combine_interactions(res.eta.interactions)
        print_table(both.table, both.signatures, title="Cross-backend interaction η(B1) − η(B2)")
    print_noise(res.noise, one_realization_hint)
    if len(res.eta.contrasts):
        print_table(res.eta.contrasts, res.eta.contrast_signatures, title="Buffered-policy contrasts δ(P1) − δ(P2)",
                    notes=res.eta.contrast_notes)
    for name, (_, eta_v) in res.variants.items():
        print_table(eta_v.table[eta_columns(eta_v.table)], eta_v.table_signatures,
                    title=f"sensitivity replay {name}" + (
                        " (a modelled clock, not a measurement)" if name == "service=fit" else ""),
                    notes=small_panel_notes(eta_v.table, brief=True) + _loop_notes(eta_v.notes))
    if res.edges is not None:
        print_table(res.edges.eta.table[eta_columns(res.edges.eta.table, "threshold")],
                    res.edges.eta.table_signatures, title="edge-silence replay (η per VAD threshold)",
                    notes=small_panel_notes(res.edges.eta.table, brief=True) + _loop_notes(res.edges.eta.notes))
    if res.content is not None:
        print_diagnostics(res.content)
    if res.quality is not None:
        print_quality(res, exp)
    if res.sweep is not None:
        from simulplay.cli.sweep import print_sweep

        print_sweep(res.sweep, brief=True)
    if res.reused:
        from simulplay.workflows.reuse import names

        typer.echo(f"reused {names(res.reused)} as they were: their inputs (tables, manifests, settings, "
                   "version) are unchanged")
    typer.echo(f"outputs in {exp.out.resolve()} (audio store {exp.store.resolve()})")
    typer.echo(f"report: {(exp.out / 'report' / 'report.html').resolve()}")
    typer.echo(f"explorer: {(exp.out / 'explore' / 'index.html').resolve()}")


def print_quality(res, exp) -> None:
    """The quality table: per condition ΔOVRL, Δsimilarity and Δ joins per minute against the
    reference (what the run scored, and the seconds it took, said under it)."""
    from simulplay.analysis.quality_table import quality_summary
    from simulplay.cli.console import print_table
    from simulplay.workflows.quality import describe

    table, sigs = quality_summary(res.quality.deltas, res.quality.reference, res.quality.delta_signatures)
    table = table.drop(columns=[c for c in ("backend", "realization") if c in table and table[c].nunique() == 1])
    print_table(table, sigs, title=f"Quality: Δ = condition − {res.quality.reference} (DNSMOS OVRL, similarity, "
                "joins per minute of speech), paired talk bootstrap")
    typer.echo(f"{describe(exp.quality)} Quality scoring took {res.timings.get('quality_s', 0.0):.1f} s; every "
               f"score per output in {exp.out / 'quality.parquet'}, intervals of every score in "
               f"{exp.out / 'quality.intervals.csv'}.")


def eta_columns(table, *keys: str) -> list[str]:
    """The short η columns a replay table is printed with: ``keys``, then the backend and the
    realization when they take more than one value (else rows would look duplicated), then
    condition, η and its interval (seconds) and the direction counts."""
    panels = [k for k in ("backend", "realization") if k in table and k not in keys and table[k].nunique() > 1]
    return [*keys, *panels, "condition", "eta_s", "ci_low_s", "ci_high_s", "n_negative", "n_zero", "n_positive"]


def print_noise(check, one_realization_hint: str) -> None:
    """Under the η table: how much η moves between realizations (the synthesis noise floor)."""
    from simulplay.cli.console import print_table
    from simulplay.core.signature import compact_signatures

    if check is None or check.spread.empty:
        if one_realization_hint:
            typer.echo(one_realization_hint)
        return
    replays = check.spread["replay"].tolist()
    shown = [s for r in dict.fromkeys(replays)  # one signature line per replay, rules marked (per row)
             for s in compact_signatures([x for x, y in zip(check.spread_signatures, replays) if y == r])]
    print_table(check.spread, shown, title="η across realizations (synthesis noise): "
                "eta_range_s is how much the realizations disagree, in seconds")
    if check.talks is not None:
        print_table(check.talks.summary, check.talks.summary_signatures,
                    title="η across realizations, talk by talk: sample SD of each talk's η (s), the widest talk")
    print_table(check.durations, check.duration_signatures, title="Same text, another realization: durations")
    for note in check.notes:
        typer.echo(f"note: {note}")


def _loop_notes(notes) -> list[str]:
    """The closed-loop notes of an η result (recorded groups under another clock)."""
    return [n for n in notes if n.startswith("closed loop: ")]
