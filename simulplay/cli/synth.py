"""``synth``: a TTS backend at work, synthesizing planned requests into the audio store
(serving a backend as an OpenAI-compatible speech API is ``serve``, :mod:`simulplay.cli.serve`)."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from simulplay.cli.options import commit_option, events_option, quiet_option, talks_from_option, talks_option
from simulplay.core.errors import InputError


def synth(
    trace: list[Path] = typer.Argument(None, help="Trace files (.parquet, .csv or .jsonl); with --rule. "
                                       "Not with --requests."),
    rule: list[str] = typer.Option([], "--rule", help="Grouping rule, repeatable (see `simulplay group`)."),
    requests: Path | None = typer.Option(None, "--requests", help="Synthesize exactly the requests of this "
                                         "table (.parquet or .csv: a `simulplay group` output, possibly edited, "
                                         "or one from another tool) instead of TRACE… --rule. Validated in full "
                                         "before any synthesis; requests beyond the input limit are split as "
                                         "for traces."),
    backend: str = typer.Option("piper", "--backend", help="TTS backend spec NAME[:KEY=VALUE,…] "
                                "(settings joined by commas, no spaces): piper (its default voice), "
                                "piper:voice=PATH, espeak:voice=de (eSpeak NG; also rate=175, pitch=50; Debian's "
                                "espeak-ng), xtts:model_dir=DIR, http:base_url=URL; every setting of a "
                                "backend is a KEY (Piper: docs/synthesis.md#piper; the others: docs/backends.md). "
                                "Piper's noise: noise_w_scale (0.8) draws "
                                "durations, noise_scale (0.667) the waveform; piper:durations=fixed sets "
                                "noise_w_scale=0 (the same sample counts every run, waveforms may differ), "
                                "piper:deterministic both 0 (the same samples); under either, identical requests "
                                "share audio across realizations (reuse=always)."),
    store: Path = typer.Option(..., "--store", help="Audio store folder (created; reused and resumed)."),
    out: Path = typer.Option(..., "--out", help="Request manifest (.parquet canonical, or .csv); the chunk "
                             "table goes beside it as <stem>.chunks.parquet."),
    realizations: int = typer.Option(1, "--realizations", min=1, help="Independent synthesis realizations."),
    order: str = typer.Option("counterbalanced", "--order", help="Synthesis order: counterbalanced (default), "
                              "fixed or paper. Realization by realization, talk by talk, then the conditions, then "
                              "the systems: with C conditions numbered c = 0…C−1 by first appearance, talk t "
                              "(0-based, first appearance) in realization r puts condition c at position (c − k) "
                              "mod C with order id k = (t + r) mod C, so no condition is always first; with S "
                              "systems numbered s = 0…S−1 in name order, system s goes to position (s − j) mod S "
                              "of each cell with j = (t + r) mod S, so with two systems A goes first in every "
                              "other talk and realization (in half the (talk, condition, realization) cells when "
                              "talks × realizations is even) and the same system is first in all of one talk's "
                              "conditions. fixed: k = j = 0 (conditions as listed, systems in name order: A "
                              "before F). paper: realization 0 fixed, later realizations counterbalanced (the "
                              "design of Truong & Le (2026)). Recorded per request: synth_order, order_id, "
                              "condition_pos, system_pos."),
    max_chars: int | None = typer.Option(None, "--max-chars", min=1,
                                         help="Input-limit splitter (default: the backend's own limit)."),
    reuse: str | None = typer.Option(None, "--reuse", help="never | same-realization | always "
                                     "(default: always for seed-reproducible backends, else same-realization)."),
    executor: str = typer.Option("serial", "--executor", help="serial | process:N (N local worker processes) | "
                                 "ray (a local Ray instance) | ray:auto or ray:HOST:PORT (join a cluster)."),
    workers: int | None = typer.Option(None, "--workers", min=1,
                                       help="Ray: at most this many actors (default: as many as fit)."),
    worker_cpus: float = typer.Option(1.0, "--worker-cpus", min=0, help="Ray: CPUs reserved per actor."),
    worker_gpus: float = typer.Option(0.0, "--worker-gpus", min=0, help="Ray: GPUs per actor (1 for a GPU backend)."),
    retries: int = typer.Option(2, "--retries", min=0,
                                help="Times a request is retried after its worker died (killed, OOM, lost node)."),
    contention_sample: int = typer.Option(8, "--contention-sample", min=0,
                                          help="Parallel runs: re-time this many requests serially afterwards and "
                                          "report the median parallel/serial service-time ratio (0: off)."),
    worker_stats: bool = typer.Option(False, "--worker-stats", help="Print per-worker throughput at the end."),
    commit: list[str] | None = commit_option(),
    quiet: bool = quiet_option(),
    talks: list[str] = talks_option(),
    talks_from: Path | None = talks_from_option(),
    events: str = events_option(),
):
    """Synthesize every request of the traces under each rule (or of a requests table,
    --requests) with a real TTS backend.

    One request at a time on a loaded, warmed-up backend; service time (seconds) covers
    text preparation, inference and transfer of samples, never loading, warm-up, logging
    or storage. Audio is stored once as FLAC, content-addressed; killing the command and
    running it again resumes. Exit code 1 when some requests failed: they are recorded
    in the manifest's error column and comparisons refuse their outputs. With
    --requests the manifest equals the one `synth TRACE… --rule …` writes for the same
    plan; its signature names the requests file and its SHA-256.

    Before any synthesis: --out's folder and the store must be writable (a test file is
    written and removed in each; exit code 2 otherwise), and a warning says when the store's
    file system has less free space than the audio this run will add (the requests' text as
    speech at the backend's typical FLAC bytes per second). A full disk or another fault of
    the machine mid-run ends it in one line naming the file and saying how many requests
    were kept (exit code 1); the store stays consistent and the same command resumes.

    Piper's noise and how to make durations reproducible: docs, Synthesis.
    """
    from simulplay.cli.console import progress_bar
    from simulplay.core.tables import check_distinct, check_writable
    from simulplay.grouping import commit_rules, parse_rule, unique_rules
    from simulplay.synthesis.executors import parse_executor
    from simulplay.synthesis.plan import check_order
    from simulplay.synthesis.run import synthesize_files
    from simulplay.traces.select import talk_ids

    trace = trace or []
    check_plan_source(trace, rule, requests, events)
    check_writable(out, (".parquet", ".csv"))
    check_distinct({"--out": out}, [*trace, *([requests] if requests else [])])
    rules = commit_rules(unique_rules([parse_rule(r) for r in rule]), commit)
    check_order(order)
    config = backend_with_reuse(backend, reuse)
    spec = parse_executor(executor, worker_cpus=worker_cpus, worker_gpus=worker_gpus, retries=retries,
                          workers=workers)
    res = synthesize_files(config, store, out, traces=trace, rules=rules, requests=requests,
                           talks=talk_ids(talks, talks_from), events=events, realizations=realizations, order=order,
                           max_chars=max_chars, progress=progress_bar(quiet), executor=spec,
                           contention_sample=contention_sample, commit=commit)
    report_synthesis(res, out, spec.label(), worker_stats)


def backend_with_reuse(backend: str, reuse: str | None):
    """The backend config of ``--backend`` with ``--reuse`` as its ``reuse`` setting
    (:func:`simulplay.backends.parse_backend_with_reuse`)."""
    from simulplay.backends import parse_backend_with_reuse

    return parse_backend_with_reuse(backend, reuse)


def check_plan_source(trace: list[Path], rule: list[str], requests: Path | None, events: str = "keep") -> None:
    """`synth` plans from TRACE… --rule or from --requests, never both, never neither; ``--events``
    acts on traces, so it is refused beside --requests (whose texts are synthesized as they are)."""
    if requests and (trace or rule):
        given = " and ".join(x for x, on in (("TRACE", trace), ("--rule", rule)) if on)
        raise InputError.at("--requests", f"is given with {given}",
                            accepted="either --requests REQUESTS or TRACE… --rule RULE…, not both")
    if requests and events != "keep":
        raise InputError.at(f"--events {events}", "is given with --requests, whose texts are synthesized as they are",
                            accepted="--events with TRACE… --rule RULE… (drop the tags when grouping: `simulplay "
                                     "group --events drop`)")
    if not requests and not (trace and rule):
        missing = " and ".join(x for x, on in (("TRACE", trace), ("--rule", rule)) if not on)
        raise InputError.at("synth", f"no plan: {missing} missing",
                            accepted="TRACE… with --rule RULE…, or --requests REQUESTS")


def report_synthesis(res, out: Path, executor: str, per_worker: bool) -> None:
    """Counts, the parallel summary, and exit code 1 when requests failed."""
    st = res.stats
    damaged = f" (of them {st.damaged} found damaged in the store and synthesized again)" if st.damaged else ""
    typer.echo(f"{len(res.manifest)} requests → {out}: synthesized {st.synthesized}{damaged}, already in store "
               f"{st.skipped}, failed {st.failed}; reused rows {int(res.manifest['reused'].sum())}")
    print_clock(st.clock)
    print_parallel_summary(st, executor, per_worker)
    failed = res.manifest["error"] != ""
    if failed.any():
        print(f"simulplay: {int(failed.sum())} request(s) failed; see the manifest's error column "
              f"(first: {res.manifest.loc[failed, 'error'].iloc[0]})", file=sys.stderr)
        raise typer.Exit(1)


def print_clock(check) -> None:
    """The clock verdict with the numbers behind it; a contended run also warns on stderr,
    in one line that names `simulplay retime`."""
    if check is None:
        return
    typer.echo(f"{check.verdict} ({check.details()})")
    if check.is_contended:
        print(f"simulplay: warning: service times were measured on a busy CPU ({check.details()}); re-time them "
              "on a quiet machine: simulplay retime MANIFEST --store DIR --all --out MANIFEST2", file=sys.stderr)


def print_parallel_summary(st, executor: str, per_worker: bool) -> None:
    """Retries, worker deaths, service-time inflation and (on request) per-worker throughput."""
    if executor == "serial":
        return
    line = f"executor {executor}: {st.retries} retried request(s), {st.worker_deaths} worker death(s)"
    if st.contention_ratio is not None:
        line += (f"; median service time parallel/serial {st.contention_ratio:.3f} on {st.contention_sample} "
                 "re-timed requests (parallel workers on shared cores inflate service times)")
    typer.echo(line)
    if per_worker and st.per_worker:
        from simulplay.cli.console import print_table
        from simulplay.core.signature import base_signature
        from simulplay.synthesis.stats import worker_rates

        print_table(worker_rates(st), base_signature(table="workers", executor=executor),
                    title="per-worker throughput")
