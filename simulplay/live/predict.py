"""Comparisons (b) and (c): what the simulator predicts from an isolated ``synth`` of the
same trace, against what the live run lived (docs/live.md, "The simulator against the
live run").

After the live part (the served backend stopped, so nothing else runs), the run's requests
are synthesized again in process, one at a time, with the same backend settings (Piper
``durations=fixed``: the same audio), into ``isolated.parquet`` (its chunk table beside
it), whose dispatch and source times are divided by ``--speed`` as the live manifest's
are. Two predictions are replayed from it (request release):

* **isolated**: the serial clock, one server per output (what ``replay`` predicts);
* **shared**: the shared-server clock (:mod:`simulplay.sim.servers`) with K = 1 worker for
  every output of the run, which is what a serial server met when all outputs played at
  once. Only when they did (no ``--concurrent`` below the outputs' count): outputs started
  at different times are not one queue from time 0.

When the outputs shared the server, the shared prediction is made three ways
(:mod:`.calibrate`): with slowdown 1 (``shared``), with the slowdown calibrated from the
run's own busy periods (``shared_run``) and, with ``--calibrate``, with the slowdown of a
load burst measured before the run (``shared_load``).

Each is compared with the live virtual player (request release) per output, ΔL =
L(prediction) − L(live), and, given translators A and F and a reference rule, η from each
against η from the live player. Comparison (b) is the isolated prediction; (c) is the same
prediction's error when the outputs shared one serial server, beside the shared replay's.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simulplay.backends import BackendConfig
from simulplay.core.errors import IncompleteError, InputError, SimulplayWarning
from simulplay.core.keys import OUTPUT_KEYS
from simulplay.core.tables import read_table, write_table
from simulplay.formats.live import PREDICTION, PREDICTION_ETA, REQUESTS
from simulplay.grouping import Rule
from simulplay.manifest import validate_manifest
from simulplay.sim import replay
from simulplay.sim.servers import Servers
from simulplay.store.store import AudioStore
from simulplay.synthesis.run import synthesize_to_manifest
from simulplay.traces import read_traces, streams_from_frame
from simulplay.traces.select import prepare_streams

MODELS = ("isolated", "shared", "shared_run", "shared_load")
#: What each shared prediction's slowdown is, as printed.
SLOWDOWN_OF = {"shared": "slowdown 1", "shared_run": "calibrated from this run", "shared_load": "load curve"}


@dataclasses.dataclass(frozen=True)
class EtaDesign:
    """The η the predictions are compared on: translator ``a`` against ``f`` (system names),
    conditions against ``reference`` (a rule as written)."""

    a: str
    f: str
    reference: str


def design_from_flags(a: str | None, f: str | None, reference: str | None, rules: Sequence[str],
                      predict: bool) -> EtaDesign | None:
    """The η design ``--a``, ``--f`` and ``--reference`` ask for (default reference: the
    first rule); ``None`` without them. They need each other and ``--predict``."""
    if a is None and f is None and reference is None:
        return None
    if a is None or f is None or not predict:
        raise InputError.at("--a/--f/--reference", "compare η of the predictions with the live run",
                            accepted="--predict --a A --f F [--reference R]")
    return EtaDesign(a, f, reference or rules[0])


def check_design(design: EtaDesign, plan: pd.DataFrame) -> None:
    """Refuse, before any request, translators or a reference rule the run does not have."""
    from simulplay.grouping import canonical_condition

    systems, conditions = set(plan["system"]), set(plan["condition"].map(canonical_condition))
    for flag, name, known in (("--a", design.a, systems), ("--f", design.f, systems),
                              ("--reference", canonical_condition(design.reference), conditions)):
        if name not in known:
            raise InputError.at(f"{flag} {name}", "is not in the run", accepted=", ".join(sorted(known)))
    if design.a == design.f or len(conditions) < 2:
        raise InputError.at("--a/--f", "η needs two translators and two rules or more",
                            accepted="--a A --f F with two systems of the traces and two --rule or more")


def isolated_synth(traces: Sequence[Path], rules: Sequence[Rule], backend: BackendConfig, store: AudioStore,
                   out: Path, *, speed: float, talks: Sequence[str] = (), events: str = "keep"
                   ) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Synthesize the run's requests one at a time into ``out``, its dispatch and source times
    divided by ``speed`` (the live time base; written once); the manifest and the synthesis counts."""
    with warnings.catch_warnings():  # the live plan has warned about event tags already
        warnings.simplefilter("ignore", SimulplayWarning)
        streams, recorded = prepare_streams(streams_from_frame(read_traces(traces)), talks=talks, events=events)
    res = synthesize_to_manifest(streams, list(rules), backend, store, out, traces=traces,
                                 order="fixed", recorded=recorded, speed=speed)
    st = res.stats
    return res.manifest, {"synthesized": st.synthesized, "already_in_store": st.skipped, "failed": st.failed}


def predictions(manifest: pd.DataFrame, *, shared: bool, slowdowns: dict[str, str] | None = None
                ) -> dict[str, pd.DataFrame]:
    """Per model, the replay summary (request release) of the isolated manifest; ``shared``
    adds the K = 1 server shared by every output of the run, with slowdown 1 and with each
    of ``slowdowns`` (model name → the calibrated slowdown's points)."""
    m = validate_manifest(manifest, "isolated manifest")
    out = {"isolated": replay(m, allow_incomplete=True, source="isolated manifest").summary}
    if shared:
        out["shared"] = _one_server(m)
        for name, points in (slowdowns or {}).items():
            if points:
                out[name] = _one_server(m, points)
    return out


def _one_server(m: pd.DataFrame, flight: str = "") -> pd.DataFrame:
    """The shared-server replay with one worker for all outputs: share groups never mix
    conditions, so each output becomes a system of one condition, and is named back after."""
    labels = m["system"] + "\x1f" + m["condition"]
    back = dict(zip(labels, zip(m["system"], m["condition"])))
    s = replay(m.assign(system=labels, condition="one server"), service=Servers(1, "panel", flight=flight),
               allow_incomplete=True, source="isolated manifest").summary
    s["system"], s["condition"] = zip(*(back[x] for x in s["system"])) if len(s) else ((), ())
    return s


def prediction_table(live: pd.DataFrame, predicted: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Per output: L and first playback, live and per model, and ΔL = L(model) − L(live),
    seconds. ``live``: the virtual player's outputs (request release)."""
    keys = list(OUTPUT_KEYS)
    here = live[live["release"] == "request"].astype({k: str for k in keys})
    table = here[keys + ["complete", "offset_s", "first_play_s"]].rename(
        columns={"offset_s": "L_live_s", "first_play_s": "first_play_live_s"})
    for name, summary in predicted.items():
        got = summary.astype({k: str for k in keys})[keys + ["offset_s", "first_play_s"]].rename(
            columns={"offset_s": f"L_{name}_s", "first_play_s": f"first_play_{name}_s"})
        table = table.merge(got, on=keys, how="left")
        table[f"dL_{name}_s"] = table[f"L_{name}_s"] - table["L_live_s"]
    return table.reset_index(drop=True)


def prediction_eta(live: pd.DataFrame, predicted: dict[str, pd.DataFrame],
                   design: EtaDesign | None) -> tuple[pd.DataFrame, str]:
    """η per condition from the live player and from each model, and each model's η minus
    the live η (seconds); empty with the reason when η cannot be computed."""
    from simulplay.analysis.bootstrap import Bootstrap
    from simulplay.analysis.eta import compute_eta

    if design is None:
        return pd.DataFrame(), "no η: give --a, --f (and --reference) to compare η"
    cols = [*OUTPUT_KEYS, "audio_s", "idle_s", "offset_s", "source_s"]
    here = live[live["release"] == "request"]
    summaries = {"live": here[here["complete"]][cols], **{k: v[cols] for k, v in predicted.items()}}
    table = None
    for name, summary in summaries.items():
        try:
            res = compute_eta(summary.astype({k: str for k in OUTPUT_KEYS}), a=design.a, f=design.f,
                              reference=design.reference, boot=Bootstrap(draws=1000))
        except IncompleteError as e:
            return pd.DataFrame(), f"no η: {e}"
        got = res.table[["condition", "n_talks", "eta_s"]].rename(columns={"eta_s": f"eta_{name}_s"})
        table = got if table is None else table.merge(got[["condition", f"eta_{name}_s"]], on="condition")
    for name in predicted:
        table[f"d_eta_{name}_s"] = table[f"eta_{name}_s"] - table["eta_live_s"]
    return table, ""


def prediction_summary(table: pd.DataFrame, eta: pd.DataFrame, note: str, *, outputs_at_once: int,
                       synth: dict[str, Any]) -> dict[str, Any]:
    """Comparisons (b) and (c) in ms: |ΔL| p50/p95/max per model over the complete
    outputs, the largest |Δη|, how many outputs played at once, and the isolated synthesis."""
    ok = table[table["complete"]]
    out: dict[str, Any] = {"outputs": len(ok), "outputs_at_once": outputs_at_once, "synth": synth}
    for name in (m for m in MODELS if f"dL_{m}_s" in table):
        d = ok[f"dL_{name}_s"].dropna().to_numpy(float) * 1e3
        row = {"n": len(d), "mean_dL_ms": float(d.mean()) if len(d) else None}
        for q, p in (("p50", 50), ("p95", 95)):
            row[f"{q}_abs_dL_ms"] = float(np.percentile(np.abs(d), p)) if len(d) else None
        row["max_abs_dL_ms"] = float(np.abs(d).max()) if len(d) else None
        if not eta.empty:
            row["max_abs_d_eta_ms"] = float(eta[f"d_eta_{name}_s"].abs().max() * 1e3)
        out[name] = row
    if note:
        out["eta_note"] = note
    return out


def write_prediction(out: Path, table: pd.DataFrame, eta: pd.DataFrame, sig: dict[str, Any]) -> None:
    """``prediction.parquet`` (per output) and, with η, ``prediction_eta.parquet``."""
    write_table(table, out / PREDICTION, sig, kind="live-prediction")
    if not eta.empty:
        write_table(eta, out / PREDICTION_ETA, sig, kind="live-prediction-eta")


def compare_with_isolated(out: Path, live: pd.DataFrame, traces: Sequence[Path], rules: Sequence[Rule],
                          backend: BackendConfig, store: AudioStore, *, speed: float, talks: Sequence[str] = (),
                          events: str = "keep", concurrent: int | None = None, design: EtaDesign | None = None,
                          sig: dict[str, Any] | None = None, load: tuple | None = None) -> dict[str, Any]:
    """Synthesize the run in isolation, replay the predictions (the shared ones calibrated
    from the run's ``requests.parquet`` and from the ``load`` burst: :mod:`.calibrate`),
    write the tables, and return the summary ``run.json`` keeps under ``prediction``."""
    from simulplay.live.calibrate import calibrate

    manifest, synth = isolated_synth(traces, rules, backend, store, out / "isolated.parquet", speed=speed,
                                     talks=talks, events=events)
    n_outputs = int((live["release"] == "request").sum())
    at_once = n_outputs if concurrent is None else min(concurrent, n_outputs)
    shared = at_once == n_outputs and n_outputs > 1
    cal = calibrate(out, read_table(out / REQUESTS)[0], manifest, load, sig or {}) if shared else {}
    predicted = predictions(manifest, shared=shared, slowdowns={f"shared_{k}": c["points"] for k, c in cal.items()})
    table = prediction_table(live, predicted)
    eta, note = prediction_eta(live, predicted, design)
    write_prediction(out, table, eta, {**(sig or {}), "table": "live-prediction"})
    summary = prediction_summary(table, eta, note, outputs_at_once=at_once, synth=synth)
    return summary | ({"calibration": cal} if cal else {})
