"""The server's slowdown, calibrated (docs/live.md, "The calibrated slowdown").

A serial server's time per request while busy is ``last byte − max(sent, the last byte
of the request served before it)``, the requests taken in the order the server answered
them (their last bytes; a FIFO server answers in the order they were sent). Against the
isolated synthesis's service time of the same text that is the factor by which the server
worked more slowly. Each request also has the number **in flight** when its service
began: the requests sent at or before that instant whose last byte came after it, itself
included.

* :func:`busy_periods`: per request, its busy service, the number in flight and whether a
  request sent before it had its first byte later (``overtaken``: a FIFO server has none);
* :func:`slowdown_table`: per number in flight with at least :data:`MIN_REQUESTS`
  requests, ``slowdown = Σ busy / Σ isolated`` (what the shared-server clock multiplies the
  isolated service by, :mod:`simulplay.sim.slowdown`); with none, one row: the factor over
  every request;
* :func:`burst`: before a live run, a short closed-loop burst of ``simulplay load`` against
  the same server, at one request in flight and at the run's peak, whose requests give the
  same table measured before the run (:func:`burst_table`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from simulplay.formats.calibration import CAL_COLUMNS
from simulplay.live.client import Endpoint

#: Numbers in flight with fewer requests than this are left out of the calibration.
MIN_REQUESTS = 10
#: The burst's seed (the order of its texts).
BURST_SEED = 0


def busy_periods(sent: np.ndarray, first_byte: np.ndarray, last_byte: np.ndarray) -> pd.DataFrame:
    """Per request, in the order given (seconds on one clock): ``start_s`` (max of its send
    and the last byte before its own), ``busy_s`` (last byte − start), ``in_flight`` and
    ``overtaken`` (its first byte came before that of a request sent earlier)."""
    sent, first_byte, last_byte = (np.asarray(x, float) for x in (sent, first_byte, last_byte))
    served = np.argsort(last_byte, kind="stable")
    start = np.empty(len(sent))
    start[served] = np.maximum(sent[served], np.r_[-np.inf, last_byte[served][:-1]])
    n = np.searchsorted(np.sort(sent), start, side="right") - np.searchsorted(np.sort(last_byte), start, side="right")
    by_send = np.argsort(sent, kind="stable")
    f = first_byte[by_send]
    overtaken = np.zeros(len(sent), bool)
    overtaken[by_send] = f < np.r_[-np.inf, np.maximum.accumulate(f)[:-1]] if len(f) else False
    return pd.DataFrame({"start_s": start, "busy_s": last_byte - start, "in_flight": n.astype(np.int64),
                         "overtaken": overtaken})


def slowdown_table(busy: pd.Series, isolated: pd.Series, in_flight: pd.Series) -> pd.DataFrame:
    """:data:`CAL_COLUMNS`: per number in flight with :data:`MIN_REQUESTS` requests or more,
    the sums of busy and isolated seconds and their ratio; with none, one row (in flight 1,
    every request): the ratio over all, the same at every number."""
    df = pd.DataFrame({"busy": np.asarray(busy, float), "iso": np.asarray(isolated, float),
                       "n": np.asarray(in_flight, np.int64)}).dropna()
    df = df[df["iso"] > 0]
    per = df.groupby("n").agg(requests=("busy", "size"), busy_s=("busy", "sum"), isolated_s=("iso", "sum"))
    per = per[per["requests"] >= MIN_REQUESTS]
    if per.empty and len(df):
        per = pd.DataFrame({"requests": [len(df)], "busy_s": [df["busy"].sum()], "isolated_s": [df["iso"].sum()]},
                           index=pd.Index([1], name="n"))
    per["slowdown"] = per["busy_s"] / per["isolated_s"]
    return per.rename_axis("in_flight").reset_index()[list(CAL_COLUMNS)]


def overall(busy: pd.Series, isolated: pd.Series) -> float:
    """Σ busy / Σ isolated over the requests with both (NaN without any)."""
    ok = pd.notna(busy) & pd.notna(isolated)
    total = float(np.asarray(isolated, float)[ok].sum())
    return float(np.asarray(busy, float)[ok].sum()) / total if total > 0 else float("nan")


def summary(table: pd.DataFrame, busy: pd.DataFrame, isolated: pd.Series) -> dict[str, Any]:
    """What ``run.json`` keeps of a calibration: the factor over every request, the points,
    the medians of busy and isolated service and the requests served out of order."""
    from simulplay.formats.calibration import flight_points

    return {"factor": overall(busy["busy_s"], isolated), "points": flight_points(table["in_flight"], table["slowdown"])
            if len(table) else "", "requests": int(busy["busy_s"].notna().sum()),
            "busy_p50_s": float(np.nanmedian(busy["busy_s"])) if len(busy) else None,
            "isolated_p50_s": float(np.nanmedian(isolated)) if len(isolated) else None,
            "overtaken": int(busy["overtaken"].sum())}


def burst_texts(texts: Sequence[str]) -> list[str]:
    """The run's distinct texts in a fixed shuffled order (:data:`BURST_SEED`)."""
    distinct = list(dict.fromkeys(t for t in texts if str(t).strip()))
    return [distinct[i] for i in np.random.default_rng(BURST_SEED).permutation(len(distinct))]


def burst(endpoint: Endpoint, texts: Sequence[str], peak: int) -> tuple[pd.DataFrame, pd.DataFrame, float]:
    """The closed-loop burst: levels 1 and ``peak`` (one when ``peak`` is 1), each with
    :data:`MIN_REQUESTS` + 2 timed requests per client (the first and the last wave of a
    level meet fewer in flight); the load table, the requests table and the seconds it took."""
    from simulplay.loadtest.run import LoadPlan, measure

    levels = tuple(sorted({1, max(1, peak)}))
    t0 = time.perf_counter()
    tables, requests = [], []
    for c in levels:  # one plan per level: each its own number of requests
        plan = LoadPlan((c,), requests=MIN_REQUESTS + 2 * c)
        table, req = asyncio.run(measure(endpoint, burst_texts(texts), plan))
        tables.append(table)
        requests.append(req)
    return pd.concat(tables, ignore_index=True), pd.concat(requests, ignore_index=True), time.perf_counter() - t0


def burst_table(requests: pd.DataFrame, isolated: dict[str, float]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The burst's timed requests with their busy periods (per level: one clock) and the
    isolated service of their text (``isolated``: text → seconds); and their table."""
    timed = requests[~requests["warm"] & requests["ok"]].copy()
    parts = []
    for _, level in timed.groupby("concurrency", sort=True):
        b = busy_periods(level["sent_s"].to_numpy(), level["first_byte_s"].to_numpy(), level["last_byte_s"].to_numpy())
        parts.append(b.set_index(level.index))
    busy = pd.concat(parts) if parts else pd.DataFrame(columns=["start_s", "busy_s", "in_flight", "overtaken"])
    timed = timed.join(busy)
    timed["isolated_s"] = timed["text"].map(isolated)
    return timed, slowdown_table(timed["busy_s"], timed["isolated_s"], timed["in_flight"])


def isolated_by_key(requests: pd.DataFrame, manifest: pd.DataFrame) -> pd.Series:
    """The isolated service (s) of each live request, matched by output and seq."""
    keys = ["talk_id", "system", "condition", "seq"]
    iso = manifest[keys + ["service_s"]].astype({k: str for k in keys})
    got = requests[keys].astype({k: str for k in keys}).merge(iso, on=keys, how="left")
    return pd.Series(got["service_s"].to_numpy(float), index=requests.index)


def isolated_by_text(manifest: pd.DataFrame) -> dict[str, float]:
    """The isolated service (s) of each text: the median over its requests."""
    return manifest.groupby(manifest["text"].astype(str))["service_s"].median().to_dict()


def calibrate(out, requests: pd.DataFrame, manifest: pd.DataFrame, load: tuple | None,
              sig: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The run's own calibration (``calibration.parquet``) and, with ``load`` (the burst's
    load table, requests and seconds), the burst's (``calibration_load.parquet``; the load
    table ``load.parquet`` and its requests beside it); their summaries by name."""
    from simulplay.core.tables import write_table

    ok = requests[(requests["error"] == "") & requests["last_byte_s"].notna()]
    busy = busy_periods(ok["sent_s"].to_numpy(), ok["first_byte_s"].to_numpy(), ok["last_byte_s"].to_numpy())
    iso = isolated_by_key(ok, manifest).to_numpy()
    table = slowdown_table(busy["busy_s"], iso, busy["in_flight"])
    write_table(table, out / "calibration.parquet", {**sig, "table": "live-calibration", "source": "run"},
                kind="live-calibration")
    result = {"run": summary(table, busy, pd.Series(iso))}
    if load is not None:
        load_table, load_requests, cost = load
        timed, table = burst_table(load_requests, isolated_by_text(manifest))
        write_table(table, out / "calibration_load.parquet", {**sig, "table": "live-calibration", "source": "load"},
                    kind="live-calibration")
        write_table(load_table, out / "load.parquet", {**sig, "table": "load"}, kind="load-curve")
        write_table(load_requests, out / "load.requests.parquet", {**sig, "table": "load"}, kind="load-requests")
        result["load"] = {**summary(table, timed, timed["isolated_s"]), "cost_s": cost,
                          "levels": [int(c) for c in load_table["concurrency"]]}
    return result
