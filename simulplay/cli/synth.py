"""``synth`` and ``serve``: TTS backends at work — synthesizing planned requests into the
audio store, or serving a backend as an OpenAI-compatible speech API."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from simulplay.cli.options import quiet_option
from simulplay.errors import InputError


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
                                "piper:voice=PATH, xtts:model_dir=DIR, http:base_url=URL; every setting of a "
                                "backend is a KEY (README: Synthesis)."),
    store: Path = typer.Option(..., "--store", help="Audio store folder (created; reused and resumed)."),
    out: Path = typer.Option(..., "--out", help="Request manifest (.parquet canonical, or .csv); the chunk "
                             "table goes beside it as <stem>.chunks.parquet."),
    realizations: int = typer.Option(1, "--realizations", min=1, help="Independent synthesis realizations."),
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
    quiet: bool = quiet_option(),
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
    """
    from simulplay.backends import parse_backend
    from simulplay.cli.console import progress_bar
    from simulplay.grouping import parse_rule, unique_rules
    from simulplay.synthesis.executors import parse_executor
    from simulplay.synthesis.run import synthesize_files
    from simulplay.tables import check_distinct, check_writable

    trace = trace or []
    check_plan_source(trace, rule, requests)
    check_writable(out, (".parquet", ".csv"))
    check_distinct({"--out": out}, [*trace, *([requests] if requests else [])])
    rules = unique_rules([parse_rule(r) for r in rule])
    config = parse_backend(backend if reuse is None else f"{backend}{',' if ':' in backend else ':'}reuse={reuse}")
    spec = parse_executor(executor, worker_cpus=worker_cpus, worker_gpus=worker_gpus, retries=retries,
                          workers=workers)
    res = synthesize_files(config, store, out, traces=trace, rules=rules, requests=requests,
                           realizations=realizations, max_chars=max_chars, progress=progress_bar(quiet),
                           executor=spec, contention_sample=contention_sample)
    report_synthesis(res, out, spec.label(), worker_stats)


def check_plan_source(trace: list[Path], rule: list[str], requests: Path | None) -> None:
    """`synth` plans from TRACE… --rule or from --requests, never both, never neither."""
    if requests and (trace or rule):
        given = " and ".join(x for x, on in (("TRACE", trace), ("--rule", rule)) if on)
        raise InputError.at("--requests", f"is given with {given}",
                            accepted="either --requests REQUESTS or TRACE… --rule RULE…, not both")
    if not requests and not (trace and rule):
        missing = " and ".join(x for x, on in (("TRACE", trace), ("--rule", rule)) if not on)
        raise InputError.at("synth", f"no plan: {missing} missing",
                            accepted="TRACE… with --rule RULE…, or --requests REQUESTS")


def report_synthesis(res, out: Path, executor: str, per_worker: bool) -> None:
    """Counts, the parallel summary, and exit code 1 when requests failed."""
    st = res.stats
    typer.echo(f"{len(res.manifest)} requests → {out}: synthesized {st.synthesized}, already in store "
               f"{st.skipped}, failed {st.failed}; reused rows {int(res.manifest['reused'].sum())}")
    print_parallel_summary(st, executor, per_worker)
    failed = res.manifest["error"] != ""
    if failed.any():
        print(f"simulplay: {int(failed.sum())} request(s) failed; see the manifest's error column "
              f"(first: {res.manifest.loc[failed, 'error'].iloc[0]})", file=sys.stderr)
        raise typer.Exit(1)


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
        from simulplay.signature import base_signature
        from simulplay.synthesis.stats import worker_rates

        print_table(worker_rates(st), base_signature(table="workers", executor=executor),
                    title="per-worker throughput")


def serve(
    backend: str = typer.Option("piper", "--backend", help="Request backend to serve: piper[:…], "
                                "xtts:model_dir=PATH[,…] (every setting is a parameter)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on."),
    port: int = typer.Option(8000, "--port", min=0, max=65535, help="Port (0: any free port, printed)."),
    model: str | None = typer.Option(None, "--model", help="Model id clients must send "
                                     "(default: the backend's label, e.g. piper:en_US-joe-medium)."),
    api_key_env: str | None = typer.Option(None, "--api-key-env", help="Name of an environment variable "
                                           "holding the API key clients must send (Authorization: Bearer)."),
    quiet: bool = typer.Option(False, "--quiet", help="No request log on stderr."),
):
    """Serve a TTS backend as an OpenAI-compatible speech API (POST /v1/audio/speech).

    The backend loads and warms up before the server listens. Requests are synthesized one
    at a time; each chunk the backend yields is sent as it is produced (chunked transfer):
    response_format pcm (16-bit little-endian mono; the rate in the X-Sample-Rate header)
    or wav. GET /v1/simulplay/identity returns the backend identity that the http client
    backend records. Synthesize against it with
    --backend http:base_url=http://HOST:PORT/v1,model=MODEL. Stop with Ctrl-C.
    """
    from simulplay.backends import parse_backend
    from simulplay.workflows.serve import log_stderr, make_server, serve_until_interrupted

    server = make_server(parse_backend(backend).create(), host, port, model=model, api_key_env=api_key_env,
                         log=None if quiet else log_stderr)
    typer.echo(f"serving model '{server.model}' (voice '{server.voice}') at {server.url}", nl=True)
    sys.stdout.flush()
    serve_until_interrupted(server)
