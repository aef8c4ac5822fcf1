"""``simulplay load``: a TTS server's load curve (docs/many-listeners.md, "The load client").

Per level c of ``--concurrency``: one untimed warm burst (c requests at once, awaited), then
the timed requests, on the same asyncio client as ``simulplay live``
(:func:`simulplay.live.client.send`, an httpx client per load client or arrival stream,
:func:`~simulplay.live.client.http_clients`):

* closed loop (default): c clients, each sends a request, reads its streamed audio to the
  end and sends the next; a request is due when its client's previous one ended;
* open loop (``rate``): c arrival streams, each a Poisson process of ``rate`` requests per
  second (one seeded generator), every request sent at its arrival, however many are in
  flight; a request is due at its arrival.

A level ends after ``requests`` timed requests, or once ``duration_s`` seconds have passed
since its start (no new request after that; those in flight finish). Texts are used in
order, cycling, from the first at every level. A failed request is counted under its
status and never retried. The numbers are :mod:`.stats`'.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simulplay.backends import parse_backend
from simulplay.backends.http_client import HttpBackend, HttpSettings
from simulplay.core.errors import InputError
from simulplay.core.signature import base_signature
from simulplay.core.tables import read_table, write_table
from simulplay.formats.load import LOAD_COLUMNS
from simulplay.live.client import NAN, Endpoint, Record, clock, frozen_heap, http_clients, send, sleep_until
from simulplay.live.launcher import served
from simulplay.live.tables import LAG_P99_S
from simulplay.loadtest.stats import knees, level_row, request_frame

DEMO_RULES = ("immediate", "timer:w=2", "timer:w=4", "punct", "words")
MIX_SEED = 0  # the order of the default mix
OPEN_CONNECTIONS = 256  # open loop: connections per level, at most (plus one per stream)


@dataclass(frozen=True)
class LoadPlan:
    """What to measure: ``levels`` (concurrency), per level ``requests`` timed requests or
    ``duration_s`` seconds, closed loop or open loop at ``rate`` requests per second per
    stream (Poisson, ``seed``), ``timeout`` seconds on every wait."""

    levels: tuple[int, ...]
    requests: int | None = None
    duration_s: float | None = None
    rate: float | None = None
    seed: int = 0
    timeout: float = 30.0

    def __post_init__(self):
        if not self.levels or any(c < 1 for c in self.levels) or len(set(self.levels)) != len(self.levels):
            raise InputError.at("--concurrency", f"{','.join(map(str, self.levels))} is not a list of distinct "
                                "whole numbers ≥ 1", accepted="e.g. 1,2,4,8")
        if (self.requests is None) == (self.duration_s is None):
            raise InputError.at("--requests/--duration", "give exactly one", accepted="--requests N or --duration S")
        if self.rate is not None and not self.rate > 0:
            raise InputError.at(f"--rate {self.rate}", "must be > 0", accepted="requests per second per stream")

    @property
    def mode(self) -> str:
        return "closed" if self.rate is None else "open"


@dataclass
class LoadResult:
    """The load table, the requests table, the knees and the signature."""

    table: pd.DataFrame
    requests: pd.DataFrame
    knees: dict[str, int | None]
    signature: dict[str, Any]
    files: list[Path] = field(default_factory=list)


def default_texts() -> list[str]:
    """The demo's request mix: the texts of every request of the bundled sample traces under
    the demo's rules, in a fixed shuffled order."""
    from simulplay.grouping import parse_rule, requests_frame
    from simulplay.traces import read_traces, streams_from_frame

    path = Path(str(files("simulplay.sample_traces").joinpath("sample_traces.jsonl")))
    plan = requests_frame(streams_from_frame(read_traces([path])), [parse_rule(r) for r in DEMO_RULES])
    texts = plan["text"].astype(str).tolist()
    return [texts[i] for i in np.random.default_rng(MIX_SEED).permutation(len(texts))]


def read_texts(texts_file: Path | None, manifest: Path | None) -> tuple[list[str], str]:
    """The request texts and where they came from: one per non-empty line of ``texts_file``,
    the ``text`` column of ``manifest`` (a manifest or requests table), or the demo mix."""
    if texts_file is not None and manifest is not None:
        raise InputError.at("--texts/--requests-from", "give one of them", accepted="--texts FILE or --requests-from M")
    if texts_file is not None:
        texts = [t.strip() for t in Path(texts_file).read_text(encoding="utf-8").splitlines() if t.strip()]
        source = str(texts_file)
    elif manifest is not None:
        df, _ = read_table(manifest)
        if "text" not in df:
            raise InputError.at(manifest, "has no column 'text'", field="text",
                                accepted="a manifest or a requests table (simulplay group)")
        texts = [t for t in df["text"].astype(str) if t.strip()]
        source = str(manifest)
    else:
        texts, source = default_texts(), "demo"
    if not texts:
        raise InputError.at(source, "has no request text", accepted="at least one non-empty text")
    return texts, source


def texts_sha256(texts: Sequence[str]) -> str:
    """SHA-256 of the texts in their order of use, joined by newlines (UTF-8)."""
    return hashlib.sha256("\n".join(texts).encode("utf-8")).hexdigest()


async def _closed(clients, endpoint: Endpoint, texts: Sequence[str], c: int, plan: LoadPlan) -> list[Record]:
    t0, records = clock(), []
    taken = 0

    async def one_client(k: int) -> None:
        nonlocal taken
        due = 0.0
        while (plan.requests is None or taken < plan.requests) and (
                plan.duration_s is None or clock() - t0 < plan.duration_s):
            rec = Record(k, taken, NAN, texts[taken % len(texts)], t0=t0, due_s=due)
            taken += 1
            records.append(rec)
            await send(clients[k], endpoint, rec)
            rec.pieces.clear()  # the audio is not kept; its arrival times and sample counts are
            due = rec.ended_s

    await asyncio.gather(*(one_client(k) for k in range(c)))
    return records


def arrivals(c: int, plan: LoadPlan, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Open loop: the arrival times (s since the level's start) and streams of a level, c
    Poisson streams of ``plan.rate`` per second merged, cut at ``requests`` or ``duration_s``."""
    n = plan.requests if plan.requests is not None else int(plan.rate * plan.duration_s * 2 + 20)
    times = np.cumsum(rng.exponential(1 / plan.rate, size=(c, n)), axis=1)
    streams = np.repeat(np.arange(c), n)
    order = np.argsort(times.ravel(), kind="stable")
    t, s = times.ravel()[order], streams[order]
    keep = slice(0, plan.requests) if plan.requests is not None else t < plan.duration_s
    return t[keep], s[keep]


async def _open(clients, endpoint: Endpoint, texts: Sequence[str], c: int, plan: LoadPlan,
                rng: np.random.Generator) -> list[Record]:
    times, streams = arrivals(c, plan, rng)
    t0 = clock() + 0.05
    records = [Record(int(s), i, float(a), texts[i % len(texts)], t0=t0, due_s=float(a))
               for i, (a, s) in enumerate(zip(times, streams))]

    async def one(rec: Record) -> None:
        await sleep_until(t0 + rec.dispatch_s)
        rec.released_s = rec.now()
        await send(clients[rec.output], endpoint, rec)
        rec.pieces.clear()

    await asyncio.gather(*(one(r) for r in records))
    return records


async def _warm(clients, endpoint: Endpoint, texts: Sequence[str], c: int) -> list[Record]:
    t0 = clock()
    records = [Record(k, -1 - k, NAN, texts[-1 - k % len(texts)], t0=t0, due_s=0.0) for k in range(c)]
    await asyncio.gather(*(send(clients[k], endpoint, r) for k, r in enumerate(records)))
    for r in records:
        r.pieces.clear()
    return records


async def measure(endpoint: Endpoint, texts: Sequence[str], plan: LoadPlan) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run every level; the load table and the requests table. Each of a level's c clients
    (closed loop) or arrival streams (open loop) sends through an httpx client of its own:
    one connection, or in the open loop ⌈256 / c⌉ (about 256 for the level)."""
    rng = np.random.default_rng(plan.seed)
    rows, frames = [], []
    for c in plan.levels:
        per_client = 1 if plan.rate is None else -(-OPEN_CONNECTIONS // c)
        async with http_clients(endpoint, c, per_client) as clients:
            warm = await _warm(clients, endpoint, texts, c)
            with frozen_heap():
                timed = await (_closed(clients, endpoint, texts, c, plan) if plan.rate is None
                               else _open(clients, endpoint, texts, c, plan, rng))
            flags = [True] * len(warm) + [False] * len(timed)
            req = request_frame([*warm, *timed], [c] * len(flags), flags)
            sent = [r for r in timed if not math.isnan(r.sent_s)]
            wall = max(r.ended_s for r in sent) - min(r.sent_s for r in sent) if sent else NAN
            rows.append(level_row(req, c, wall))
            frames.append(req)
    return pd.DataFrame(rows, columns=list(LOAD_COLUMNS)), pd.concat(frames, ignore_index=True)


@contextlib.contextmanager
def server_for(spec: str, log_path: Path, workers: int | None):
    """The server's settings: ``http:…`` as it is, a local backend served as a child process
    (``simulplay serve --workers K`` with ``workers``) for the run."""
    config = parse_backend(spec)
    if isinstance(config, HttpSettings):
        if workers is not None:
            raise InputError.at("--server-workers", "applies to a local backend served for the run",
                                accepted="no --server-workers with http:base_url=…")
        yield config
        return
    if getattr(config, "kind", "request") != "request":
        raise InputError.at("--backend", f"backend '{config.name}' is a {config.kind} backend",
                            accepted="a request backend (piper, espeak, …) or http:base_url=…")
    args = ("--quiet", "--workers", str(workers or 1))
    with served(config.spec(), log_path, args=args) as (url, _proc):
        yield HttpSettings(base_url=url)


def load_curve(backend: str, plan: LoadPlan, out: Path, *, texts: Sequence[str], text_source: str,
               server_workers: int | None = None, ttfa_target_s: float = 1.0, figure: bool = True) -> LoadResult:
    """Measure the load curve of ``backend`` and write the table ``out``, the requests table
    beside it (``<stem>.requests.parquet``) and, with ``figure``, ``<stem>.png``/``.svg``."""
    with server_for(backend, out.with_name(out.stem + ".server.log"), server_workers) as settings:
        http = HttpBackend(settings)
        http.load()
        identity = http.identity()
        endpoint = Endpoint(url=settings.base_url.rstrip("/") + "/audio/speech", model=http.model,
                            voice=settings.voice, response_format=settings.response_format,
                            sample_rate=settings.sample_rate, timeout=min(plan.timeout, settings.timeout),
                            api_key=http._key)
        table, requests = asyncio.run(measure(endpoint, texts, plan))
    timed = requests[~requests["warm"] & requests["sent_s"].notna()]
    p99 = float(np.percentile(timed["late_s"], 99)) if len(timed) else math.nan
    sig = base_signature(table="load", mode=plan.mode, levels=list(plan.levels), requests=plan.requests,
                         duration_s=plan.duration_s, rate=plan.rate, seed=plan.seed if plan.rate else None,
                         texts=len(texts), texts_sha256=texts_sha256(texts), text_source=text_source,
                         backend_spec=backend, server_workers=server_workers,
                         served=identity.get("served") if isinstance(identity.get("served"), dict) else None,
                         lateness="lagged" if p99 > LAG_P99_S else "on time")
    result = LoadResult(table, requests, knees(table, ttfa_target_s), sig)
    meta = {"identity": json.loads(json.dumps(identity, default=str)), "knees": result.knees,
            "ttfa_target_s": ttfa_target_s, "lateness_p99_ms": p99 * 1e3}
    result.files.append(write_table(table, out, sig, kind="load-curve", extra_meta=meta))
    result.files.append(write_table(requests, out.with_name(out.stem + ".requests.parquet"), sig, kind="load-requests"))
    if figure:
        from simulplay.report.load_figures import write_load_figure

        result.files.extend(write_load_figure(table, sig, out.with_name(out.stem), ttfa_target_s=ttfa_target_s,
                                                       knees=result.knees))
    return result


def run_load_command(backend: str, concurrency: str, out: Path, *, requests_from: Path | None, texts: Path | None,
                     requests: int | None, duration: float | None, rate: float | None, seed: int,
                     server_workers: int | None, ttfa_target: float, timeout: float, echo=print) -> int:
    """``simulplay load``: parse, check the outputs, measure, print the table; the exit code
    (1 when requests failed)."""
    from simulplay.core.tables import check_writable

    try:
        levels = tuple(int(c) for c in concurrency.split(","))
    except ValueError as e:
        raise InputError.at(f"--concurrency {concurrency}", "is not a list of whole numbers",
                            accepted="e.g. 1,2,4,8") from e
    if requests is None and duration is None:
        requests = 4 * max(levels)
    plan = LoadPlan(levels, requests, duration, rate, seed, timeout)
    check_writable(out)
    text_list, source = read_texts(texts, requests_from)
    res = load_curve(backend, plan, out, texts=text_list, text_source=source, server_workers=server_workers,
                     ttfa_target_s=ttfa_target)
    shown = res.table[["concurrency", "requests", "failed", "ttfa_p50_s", "ttfa_p95_s", "service_p50_s",
                       "rtf_p50", "underran", "audio_per_s", "lateness_p99_ms"]]
    echo(shown.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    echo(f"knee: p95 TTFA over {ttfa_target:g} s at concurrency {res.knees['ttfa'] or '—'}, first underrun at "
         f"{res.knees['underrun'] or '—'}; written: {', '.join(str(p) for p in res.files)}")
    return 1 if int(res.table["failed"].sum()) else 0
