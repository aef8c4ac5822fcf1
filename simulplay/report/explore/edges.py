"""Edge-trimmed replays for the explorer, one variant per VAD threshold of a run's sweep.

The sweep (``simulplay run`` with ``analysis.edges``) saved ``edges_summary.parquet``
(one row per threshold and output, its VAD identity in the metadata) and cached every
waveform's speech probabilities in the store (``STORE/vad/<model id>/<key>.npy``). The
explorer reads those probabilities from the cache, never runs the model, and replays
with :func:`simulplay.analysis.edge_replay.replay_trimmed` at the analysis' guard of
100 ms, deciding closed-loop outputs again on the run's traces as the run did; the result
must reproduce the saved summary, or the threshold is left out with a note. Readiness does
not change under trimming, so each request's clock is the primary replay's.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd

from simulplay.analysis.edge_replay import EdgesResult, audio_columns, replay_trimmed
from simulplay.core.errors import InputError
from simulplay.core.keys import OUTPUT_ID, present
from simulplay.core.signature import settings_hash
from simulplay.core.tables import stored_signatures
from simulplay.formats.kinds import keys_as_text
from simulplay.report.explore.variants import (
    Variant,
    allows_incomplete,
    manifest_signature,
    per_talk_points,
    recorded_only,
    run_streams,
)
from simulplay.report.queue import silent_reading, summary_mismatch
from simulplay.report.read_run import RunData
from simulplay.sim.replay import ReplayResult
from simulplay.vad.cache import ProbabilityCache

GUARD_MS = 100.0  # the guard `simulplay run` trims with (workflows.edges default)


def edge_variants(run: RunData, manifest: pd.DataFrame, primary: Variant, store: Path | None,
                  given: EdgesResult | None = None) -> tuple[list[Variant], list[str]]:
    """One variant per threshold of a run folder's edge sweep, or notes saying why none;
    ``given``: the sweep's own result, when the caller has it (``simulplay run``)."""
    table = run.optional.get("eta_edges")
    saved = run.folder / "edges_summary.parquet"
    if table is None or run.stepwise or (given is None and not saved.is_file()):
        return [], []
    if given is not None:
        summary, sigs, parts, trims = given.summary, list(given.signatures), given.parts, given.trims
        frame = summary
    else:
        frame, meta = run.read_table(saved)
        frame = keys_as_text(frame)
        sigs = stored_signatures(meta, len(frame)) or [""] * len(frame)
        got = _replay_from_cache(run, manifest, store, meta.get("vad"), frame)
        if isinstance(got, str):
            return [], [got]
        summary, parts, trims = got
    out, notes = [], []
    for t in sorted(float(t) for t in frame["threshold"].unique()):
        mine = frame["threshold"].to_numpy(float) == t
        replayed = summary[summary["threshold"] == t].drop(columns="threshold").reset_index(drop=True)
        miss = None if given is not None else summary_mismatch(replayed, frame[mine], ("offset_s", "audio_s", "idle_s"))
        if miss:
            notes.append(f"Edge-trimmed replay at threshold {t:g}: left out, replaying does not reproduce "
                         f"{saved.name} for {miss}.")
            continue
        mine_parts = parts[parts["threshold"] == t].drop(columns="threshold").reset_index(drop=True)
        v = _variant(run, t, replayed, frame[mine], [sigs[i] for i in np.flatnonzero(mine)], mine_parts, primary,
                     table.frame, table.signatures, manifest)
        v.samples = _kept_samples(v.parts, trims[trims["threshold"] == t])
        out.append(v)
    return out, notes


def _replay_from_cache(run: RunData, manifest: pd.DataFrame, store: Path | None, identity: Any,
                       frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame] | str:
    """The sweep replayed from the store's cached probabilities: (summary, parts, trims),
    or the note saying why it cannot be."""
    if store is None or not isinstance(identity, dict) or "variant" not in identity:
        return "Edge-trimmed replays: left out, " + ("the audio store is not there (its VAD cache holds the speech "
                                                     "probabilities)" if store is None else
                                                     "edges_summary.parquet records no VAD identity") + "."
    cache = ProbabilityCache(store, SimpleNamespace(model_id=f"silero-{identity['variant']}-{settings_hash(identity)}"))
    source = str(run.manifest.path)
    audio = audio_columns(manifest, source)
    probs = {}
    for key, n, rate in audio[["audio_key", "n_samples", "sample_rate"]].itertuples(index=False):
        if key and key not in probs:
            got = cache.get(key, int(n), int(rate))
            if got is None:
                return (f"Edge-trimmed replays: left out, the speech probabilities of audio {key} are not in the "
                        f"store's cache ({cache.folder}); `simulplay run` caches them.")
            probs[key] = got
    thresholds = sorted(float(t) for t in frame["threshold"].unique())
    summary, _, parts, trims = replay_trimmed(manifest, audio, probs, thresholds, guard_ms=GUARD_MS, vad_label="",
                                              excluded=[], allow_incomplete=allows_incomplete(run),
                                              upstream=manifest_signature(run), source=source,
                                              silent_parts=silent_reading(run.summary.signatures),
                                              streams=run_streams(run))
    return summary, parts, trims


def _kept_samples(parts: pd.DataFrame, trims: pd.DataFrame) -> pd.DataFrame:
    """Each trimmed part's kept samples of its request's audio (``keep_start:keep_end``)."""
    keys = present((*OUTPUT_ID, "seq"), parts)
    kept = parts[keys].merge(trims[keys + ["keep_start", "keep_end"]], on=keys, how="left", validate="one_to_one")
    return pd.DataFrame({"sample_start": kept["keep_start"].fillna(0).to_numpy(np.int64),
                         "sample_stop": kept["keep_end"].fillna(0).to_numpy(np.int64)})


def _variant(run: RunData, t: float, replayed: pd.DataFrame, saved: pd.DataFrame, saved_sigs: list,
             parts: pd.DataFrame, primary: Variant, eta: pd.DataFrame, eta_sigs: list,
             manifest: pd.DataFrame) -> Variant:
    """The variant of threshold ``t``: its η and per-talk points of every output; its timeline
    without the closed-loop outputs decided again on the trimmed durations (their requests are
    not the recorded ones, whose trims the lanes draw; a note says so)."""
    keys = present(OUTPUT_ID, replayed)
    order = replayed[keys].merge(saved[keys].assign(_i=np.arange(len(saved))), on=keys, how="left")["_i"]
    sigs = [saved_sigs[int(i)] for i in order]
    rows = np.flatnonzero(eta["threshold"].to_numpy(float) == t) if "threshold" in eta else np.zeros(0, int)
    if not len(rows):
        raise InputError.at(run.optional["eta_edges"].path, f"has no row for threshold {t:g}",
                            accepted="the η table of the edge sweep saved with edges_summary.parquet")
    eta_t = eta.iloc[rows].drop(columns="threshold").reset_index(drop=True)
    eta_t_sigs = [eta_sigs[i] for i in rows]
    per_talk, pt_sigs = per_talk_points(replayed, run, eta_t, eta_t_sigs)
    drawn, _, _, notes = recorded_only(ReplayResult(replayed, parts, sigs, []), manifest, f"edges-{t:g}")
    return Variant(f"edges-{t:g}", f"edge silence trimmed at VAD threshold {t:g} (guard {GUARD_MS:g} ms)",
                   drawn.summary, list(drawn.signatures), drawn.parts, primary.clock, eta_t, eta_t_sigs, per_talk,
                   pt_sigs, silent=primary.silent, notes=notes)
