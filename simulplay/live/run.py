"""``simulplay live``: a live run from traces to its files (docs/live.md).

Plan the requests (the rule's groups, split at the backend's input limit), serve the
backend (a local one as a child process; ``http:…`` as it is), run every output's session
on one asyncio loop, then write into the run folder:

* ``live.parquet`` + ``live.chunks.parquet``: the live manifest and chunk table
  (:mod:`.tables`), the audio in the store (``--store``, default ``DIR/store``);
* ``requests.parquet``: every recorded time and the lateness of every request;
* ``player.parquet`` and ``timeline.parquet``: the virtual player per output and per part;
* ``agreement.parquet`` and ``agreement_requests.parquet``: comparison (a) (:mod:`.compare`);
* with ``predict``: ``isolated.parquet`` (+ chunks), ``prediction.parquet`` and
  ``prediction_eta.parquet``: comparisons (b) and (c) (:mod:`.predict`); when the outputs
  shared the server, ``calibration.parquet`` (the slowdown from the run's busy periods)
  and, with ``calibrate``, ``calibration_load.parquet``, ``load.parquet`` and
  ``load.requests.parquet`` (a load burst against the same server before the run,
  :mod:`.calibrate`);
* ``run.json``: speed, server identity, lateness p50/p99/max and the verdict, failures,
  the agreement; ``server.log``: the served backend's log.

Failed requests are recorded and counted (exit code 1 from the command); Ctrl-C writes
every file from what was measured and ends with :class:`~simulplay.core.errors.Interrupted`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from simulplay.backends import BackendConfig, parse_backend
from simulplay.backends.http_client import HttpBackend, HttpSettings
from simulplay.core.atomic import write_bytes_atomic
from simulplay.core.errors import InputError, Interrupted
from simulplay.core.keys import OUTPUT_ID
from simulplay.core.signature import base_signature
from simulplay.core.tables import write_table
from simulplay.formats.live import AGREEMENT, AGREEMENT_REQUESTS, LIVE_MANIFEST, PLAYER, REQUESTS, TIMELINE
from simulplay.grouping import Rule, is_closed_loop, requests_frame, revising_allowed
from simulplay.live.client import Endpoint, Record, run_sessions
from simulplay.live.compare import agreement, agreement_summary
from simulplay.live.launcher import served
from simulplay.live.loops import loop_outputs, loop_rows, loop_sessions
from simulplay.live.predict import EtaDesign, check_design, compare_with_isolated
from simulplay.live.tables import chunk_rows, lateness, live_manifest, player_tables, request_rows
from simulplay.manifest.columns import chunk_path
from simulplay.store.store import AudioStore
from simulplay.synthesis.language import signature_fields, voice_check
from simulplay.traces import read_traces, streams_from_frame
from simulplay.traces.select import prepare_streams


@dataclass
class LiveResult:
    folder: Path
    player: pd.DataFrame
    agreement: pd.DataFrame
    summary: dict[str, Any]
    signature: dict[str, Any] = field(default_factory=dict)

    @property
    def n_failed(self) -> int:
        return int(self.summary["failed"])


@dataclass(frozen=True)
class LivePlan:
    """The requests of a live run's open-loop outputs (``frame``, in session order, times
    divided by the speed) and what its signature and ``run.json`` record of how the streams
    were prepared and of the text's language against the voice (``recorded``, ``language``)."""

    frame: pd.DataFrame
    recorded: dict[str, Any]
    language: dict[str, Any]


def plan_live(traces: Sequence[Path], rules: Sequence[Rule], *, speed: float, talks: Sequence[str] = (),
              splitter=None, events: str = "keep", config=None, loops: list | None = None) -> LivePlan:
    """The requests of every open-loop output in session order, times divided by ``speed``;
    ``talks`` picks talks (all when empty), ``events`` keeps or drops non-speech event tags;
    with the backend ``config``, the text's language is checked against its voice's (what
    the signature and ``run.json`` record of both is beside the requests). The
    closed-loop outputs (their requests made during the run) are appended to ``loops``
    (:func:`simulplay.live.loops.loop_outputs`)."""
    if not speed > 0:
        raise InputError.at(f"--speed {speed}", "must be > 0", accepted="a factor such as 1, 4 or 10")
    streams, recorded = prepare_streams(streams_from_frame(read_traces(traces), revising=revising_allowed(None, rules)),
                                        talks=talks, events=events)
    language = voice_check(streams, config) if config is not None else {}
    plan = requests_frame(streams, [r for r in rules if not is_closed_loop(r)], splitter)
    if loops is not None:
        loops += loop_outputs(streams, rules, speed=speed, splitter=splitter)
    plan["dispatch_s"] = plan["dispatch_s"] / speed
    plan["source_s"] = plan["source_s"] / speed
    return LivePlan(plan, {**recorded, **signature_fields(language)}, language)


def _server(config: BackendConfig, folder: Path):
    """The base URL to send to: the given server, or a local backend served for the run."""
    if isinstance(config, HttpSettings):
        return contextlib.nullcontext((config, None))
    if getattr(config, "kind", "request") != "request":
        raise InputError.at("--backend", f"backend '{config.name}' is a {config.kind} backend",
                            accepted="a request backend (piper, espeak, …) or http:base_url=…")

    @contextlib.contextmanager
    def child():
        with served(config.spec(), folder / "server.log") as (url, proc):
            yield HttpSettings(base_url=url), proc
    return child()


def live_run(traces: Sequence[Path], rules: Sequence[Rule], backend: str, out: Path, *, speed: float = 1.0,
             talks: Sequence[str] = (), concurrent: int | None = None, timeout: float = 30.0,
             store: Path | None = None, predict: bool = False, design: EtaDesign | None = None,
             calibrate: bool = False, events: str = "keep") -> LiveResult:
    """Run every output live against ``backend`` and write the run folder ``out``; with
    ``predict``, then comparisons (b) and (c) against an isolated synthesis (:mod:`.predict`);
    ``calibrate`` (with ``predict``) measures a load burst against the server first."""
    local = parse_backend(backend)
    splitter = None if isinstance(local, HttpSettings) else local.create().splitter()
    loops: list = []
    planned = plan_live(traces, rules, speed=speed, talks=talks, splitter=splitter, events=events, config=local,
                        loops=loops)
    plan = planned.frame
    if design is not None:
        check_design(design, pd.concat([plan[["system", "condition"]],  # the closed-loop outputs too
                                        pd.DataFrame([k for k, _ in loops], columns=["system", "condition"])]))
    if calibrate and not predict:
        raise InputError.at("--calibrate", "calibrates the shared-server prediction", accepted="--predict --calibrate")
    load = None
    out.mkdir(parents=True, exist_ok=True)
    audio = AudioStore.open(store or out / "store")  # checked (and made) before any request
    interrupted: BaseException | None = None
    with _server(local, out) as (settings, _proc):
        client = HttpBackend(settings)
        client.load()
        model, identity = client.model, client.identity()
        endpoint = Endpoint(url=settings.base_url.rstrip("/") + "/audio/speech", model=model, voice=settings.voice,
                            response_format=settings.response_format, sample_rate=settings.sample_rate,
                            timeout=min(timeout, settings.timeout), api_key=client._key)
        plan["backend"], plan["realization"] = f"http:{model}", 0
        sessions = _records(plan)
        sessions += loop_sessions(loops, len(sessions))
        if calibrate:
            from simulplay.live.calibrate import burst

            load = burst(endpoint, plan["text"].tolist(), len(sessions) if concurrent is None
                         else min(concurrent, len(sessions)))
        try:
            asyncio.run(run_sessions(endpoint, sessions, concurrent))
        except KeyboardInterrupt as e:  # Ctrl-C or SIGTERM: what was measured is written below
            interrupted = e
    for rec in (r for s in sessions for r in s):
        if not rec.ok and not rec.error:
            rec.error = "not sent (interrupted)" if rec.sent_s != rec.sent_s else "interrupted"
    if loops:  # the closed-loop outputs' requests, as the policies sent them
        plan = pd.concat([plan, loop_rows(loops, backend=f"http:{model}")], ignore_index=True)
        sessions = [s for s in sessions if len(s)]  # an output interrupted before its first request has none
    result = write_run(plan, sessions, out, audio, identity=identity, speed=speed, concurrent=concurrent,
                       backend=backend, recorded=planned.recorded, language=planned.language)
    if predict and interrupted is None:
        result.summary["prediction"] = compare_with_isolated(
            out, result.player, traces, rules, local, audio, speed=speed, talks=talks, events=events,
            concurrent=concurrent, design=design, sig=result.signature, load=load)
        _write_summary(out, result.summary)
    if interrupted is not None:
        raise Interrupted(f"{result.summary['sent']} of {result.summary['requests']} requests sent; "
                          f"what was measured is in {out}", interrupted) from None
    return result


def _records(plan: pd.DataFrame) -> list[list[Record]]:
    codes = plan.groupby(list(OUTPUT_ID), sort=False).ngroup().to_numpy()
    sessions: list[list[Record]] = [[] for _ in range(codes.max() + 1 if len(codes) else 0)]
    for code, row in zip(codes, plan.to_dict("records")):
        sessions[code].append(Record(int(code), int(row["seq"]), float(row["dispatch_s"]), row["text"]))
    return sessions


def write_run(plan: pd.DataFrame, sessions: list[list[Record]], out: Path, store: AudioStore, *,
              identity: dict[str, Any], speed: float, concurrent: int | None, backend: str,
              recorded: dict[str, Any] | None = None, language: dict[str, Any] | None = None) -> LiveResult:
    """Write every file of the run folder from the records (``recorded``, ``language``: the
    plan's, :class:`LivePlan`)."""
    codes = plan.groupby(list(OUTPUT_ID), sort=False).ngroup().to_numpy()
    order = plan.assign(_o=codes).sort_values(["_o", "seq"], kind="stable").drop(columns="_o")
    records = [r for s in sessions for r in s]
    manifest = live_manifest(order, records, lambda r: store.put_audio(r.audio(), r.sample_rate), socket.gethostname())
    chunks = chunk_rows(order, records)
    requests = request_rows(order, records)
    outputs = order.drop_duplicates(list(OUTPUT_ID))[[*OUTPUT_ID, "source_s"]]
    player, timeline = player_tables(outputs, sessions)
    agree, agree_requests = agreement(manifest, chunks, player, requests)
    late = lateness(requests)
    failed = requests[requests["error"] != ""]
    sig = base_signature(table="live", speed=speed, concurrent=concurrent, backend_spec=backend,
                         served=identity.get("served") if isinstance(identity.get("served"), dict) else None,
                         lateness=late["verdict"], **(recorded or {}))
    summary = {"speed": speed, "concurrent": concurrent, "outputs": len(sessions), "requests": len(records),
               "sent": int(requests["sent_s"].notna().sum()), "failed": len(failed),
               "failures": failed["error"].str.slice(0, 80).value_counts().to_dict(),
               "incomplete_outputs": int((~player[player["release"] == "request"]["complete"]).sum()),
               "lateness": late, "agreement": agreement_summary(agree, agree_requests),
               "time_base": f"trace seconds / {speed:g} since each output's time 0", "identity": identity,
               "store": str(store.root.resolve()),
               **({"language": language} if language else {})}
    meta = {"signature": sig, "identity": identity, "live": {k: summary[k] for k in ("speed", "lateness")}}
    write_table(manifest, out / LIVE_MANIFEST, [{**sig, "rule": c, **_oracle(c)} for c in manifest["condition"]],
                kind="manifest", extra_meta=meta)
    write_table(chunks, chunk_path(out / LIVE_MANIFEST), sig, kind="chunks")
    for name, table in ((REQUESTS, requests), (PLAYER, player), (TIMELINE, timeline), (AGREEMENT, agree),
                        (AGREEMENT_REQUESTS, agree_requests)):
        write_table(table, out / name, sig, kind=f"live-{name.removesuffix('.parquet')}")
    _write_summary(out, summary)
    return LiveResult(out, player, agree, summary, sig)


def _oracle(condition: str) -> dict[str, str]:
    """``oracle: non-causal`` for a condition after a non-causal commit policy (``final``)."""
    from simulplay.grouping.registry import split_commit

    policy, _ = split_commit(str(condition))
    return {"oracle": "non-causal"} if policy is not None and not policy.causal else {}


def _write_summary(out: Path, summary: dict[str, Any]) -> None:
    write_bytes_atomic(out / "run.json", (json.dumps(summary, indent=2, default=str) + os.linesep).encode())
