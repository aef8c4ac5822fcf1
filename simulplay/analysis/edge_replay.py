"""Edge-silence replay (docs/diagnostics.md#edge-silence-replay) given speech probabilities: trim each request's leading
and trailing non-speech at several thresholds, keep every request's readiness, replay
playback; and the share of an audio-duration reduction that is detected non-speech.

Per threshold the manifest's ``audio_s`` becomes the kept samples / sample rate and the
request-release replay of :func:`simulplay.sim.replay` runs unchanged: readiness comes
from dispatch and measured service, which trimming never touches. A request whose
waveform has no speech frame keeps nothing: it occupies the synthesizer but is not
played. Nothing here reads audio or runs a model: the sweep that computes (or reads
cached) probabilities is :mod:`simulplay.workflows.edges`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from simulplay.analysis.edges import keep_bounds, speech_samples
from simulplay.core.errors import IncompleteError, InputError
from simulplay.core.fields import Checker
from simulplay.core.signature import merge
from simulplay.core.specs import format_value
from simulplay.durationmodel.redecide import redecide
from simulplay.durationmodel.replay_again import has_closed_loop, labelled
from simulplay.grouping import canonical_condition
from simulplay.grouping.policy import decided_again, loop_signature
from simulplay.manifest.validate import output_keys
from simulplay.sim.replay import ReplayResult, replay
from simulplay.sim.variants import Measured
from simulplay.traces.model import Stream
from simulplay.vad import VadStats

AUDIO_COLUMNS = ("audio_key", "sample_rate", "n_samples")
EXTRA_COLUMNS = ("untrimmed_audio_s", "n_removed")


@dataclass
class EdgesResult:
    """Summary rows per (threshold, output), parts, per-request trims and what the VAD did.

    ``trims``: one row per (threshold, complete request): ``n_samples, sample_rate,
    keep_start, keep_end`` (original samples, end exclusive) and ``speech_samples``
    (samples in frames at or above the threshold, no guard).
    """

    summary: pd.DataFrame
    signatures: list[dict[str, Any]]
    parts: pd.DataFrame
    trims: pd.DataFrame
    stats: VadStats
    vad: dict[str, Any]
    excluded: list[str]


def trim_label(guard_ms: float) -> str:
    """The signature's ``trim`` value for a guard of ``guard_ms`` milliseconds: ``edges:guard=40ms``."""
    return f"edges:guard={format_value(float(guard_ms))}ms"


def audio_columns(manifest: pd.DataFrame, source: str) -> pd.DataFrame:
    """``audio_key, sample_rate, n_samples`` of the requests without error, checked."""
    check = Checker(source, manifest)
    check.require_columns(AUDIO_COLUMNS, "synthesized manifest (from `simulplay synth`)")
    ok = (manifest["error"] == "").to_numpy()
    rows = manifest[ok]
    check = Checker(source, rows, rows=np.flatnonzero(ok) + 1)
    audio = pd.DataFrame({"audio_key": check.strings("audio_key", allow_empty=True),
                          "sample_rate": check.integers("sample_rate", accepted="the sample rate in Hz"),
                          "n_samples": check.integers("n_samples", accepted="the sample count, ≥ 0")},
                         index=rows.index)
    n, rate, key = audio["n_samples"].to_numpy(), audio["sample_rate"].to_numpy(), audio["audio_key"].to_numpy()
    for i in np.flatnonzero(n < 0):
        check.add_at(int(i), f"{n[i]} is negative", "n_samples", "the sample count, ≥ 0")
    for i in np.flatnonzero((n > 0) & (rate <= 0)):
        check.add_at(int(i), f"{rate[i]} is not positive", "sample_rate", "the sample rate in Hz, > 0")
    for i in np.flatnonzero((n > 0) & (key == "")):
        check.add_at(int(i), "is empty for a request with samples", "audio_key", "the key of its audio in the store")
    check.raise_if_any()
    return audio


def trim_requests(audio: pd.DataFrame, probs: Mapping[str, np.ndarray], thresholds: Sequence[float],
                  guard_ms: float) -> pd.DataFrame:
    """One row per (threshold, request of ``audio``): the kept bounds and speech samples."""
    rows = []
    for t in thresholds:
        for idx, key, rate, n in zip(audio.index, audio["audio_key"], audio["sample_rate"], audio["n_samples"]):
            p = probs[key] if n > 0 else np.zeros(0, np.float32)
            start, end = keep_bounds(p, int(n), int(rate), t, guard_ms)
            rows.append((t, idx, int(n), int(rate), start, end, speech_samples(p, int(n), int(rate), t)))
    return pd.DataFrame(rows, columns=["threshold", "row", "n_samples", "sample_rate", "keep_start", "keep_end",
                                       "speech_samples"])


def replay_trimmed(manifest: pd.DataFrame, audio: pd.DataFrame, probs: Mapping[str, np.ndarray],
                   thresholds: Sequence[float], *, guard_ms: float, vad_label: str, excluded: list[str],
                   allow_incomplete: bool = False, upstream: Mapping[str, Any] | None = None,
                   source: str = "manifest", silent_parts: str = "skip",
                   streams: Sequence[Stream] | None = None,
                   ) -> tuple[pd.DataFrame, list[dict[str, Any]], pd.DataFrame, pd.DataFrame]:
    """Replay the complete requests of ``manifest`` once per threshold with trimmed durations.

    ``audio``: :func:`audio_columns` of ``manifest``; ``probs``: speech probabilities per
    audio key; ``guard_ms``: milliseconds kept around speech; ``excluded``: the outputs left
    out as incomplete (counted in the signatures when ``allow_incomplete``). Returns the
    summary (one row per threshold and output), its signatures, the parts and the trims
    (one row per threshold and request: kept sample bounds and speech samples).

    With ``streams`` (the run's traces), each closed-loop output is decided again per
    threshold on the trimmed durations (:func:`simulplay.durationmodel.redecide.redecide`
    on the measured clock: a text the run synthesized takes its trimmed duration, another
    one the duration model fitted on the trimmed open-loop requests, labelled); without,
    closed-loop outputs keep their recorded groups, labelled so. ``untrimmed_audio_s`` and
    ``n_removed`` count the recorded requests."""
    thresholds = tuple(sorted(thresholds))
    trims = trim_requests(audio, probs, thresholds, guard_ms)
    keys = output_keys(manifest)
    extra = {"trim": trim_label(guard_ms), "vad": vad_label, "excluded": len(excluded) if allow_incomplete else None}
    summaries, sigs, parts = [], [], []
    for t in thresholds:
        tr = trims[trims["threshold"] == t].set_index("row")
        m = manifest.copy()
        kept = (tr["keep_end"] - tr["keep_start"]).to_numpy(np.int64)
        m.loc[tr.index, "audio_s"] = kept / tr["sample_rate"].clip(lower=1).to_numpy()
        m.loc[tr.index, "n_samples"] = kept  # replay takes durations from the sample counts
        rep = _replay(m, streams, allow_incomplete=allow_incomplete, upstream=upstream, source=source,
                      silent_parts=silent_parts)
        summary = rep.summary.copy()
        summary.insert(0, "threshold", t)
        summary = summary.merge(_per_output(manifest, tr, keys), on=keys, how="left", validate="one_to_one")
        summaries.append(summary)
        sigs += [merge(s, extra, {"threshold": t}, {} if decided_again(s.get("loop")) else
                       loop_signature(str(s.get("rule", "")), True)) for s in rep.signatures]
        parts.append(rep.parts.assign(threshold=t)[["threshold", *rep.parts.columns]])
    trims = trims.join(manifest[keys + ["seq"]], on="row").drop(columns="row")
    trims = trims[["threshold", *keys, "seq", "n_samples", "sample_rate", "keep_start", "keep_end", "speech_samples"]]
    return (pd.concat(summaries, ignore_index=True), sigs, pd.concat(parts, ignore_index=True),
            trims.reset_index(drop=True))


def _replay(m: pd.DataFrame, streams: Sequence[Stream] | None, **kwargs) -> ReplayResult:
    """The replay of a trimmed manifest, its closed-loop outputs decided again on ``streams``."""
    if not streams or not has_closed_loop(m):
        return replay(m, **kwargs)
    decided = redecide(m, streams, Measured(), silent=kwargs["silent_parts"], source=kwargs["source"])
    return labelled(replay(decided.manifest, service=decided.service, **kwargs), decided)


def _per_output(manifest: pd.DataFrame, tr: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Untrimmed audio (seconds) and requests removed entirely, per output."""
    rate = tr["sample_rate"].clip(lower=1)
    per_row = pd.DataFrame({"untrimmed_audio_s": tr["n_samples"] / rate,
                            "n_removed": ((tr["n_samples"] > 0) & (tr["keep_end"] == tr["keep_start"])).astype(int)},
                           index=tr.index)
    joined = manifest[keys].join(per_row, how="inner")
    return joined.groupby(keys, sort=False)[list(EXTRA_COLUMNS)].sum().reset_index()


SHARE_COLUMNS = ("system", "reference", "condition", "threshold", "n_talks", "reduction_s", "nonspeech_s",
                 "speech_s", "share_pct", "edge_s")


def nonspeech_share(res: EdgesResult, pairs: Sequence[tuple[str, str]], *, allow_incomplete: bool = False,
                    source: str = "manifest") -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """How much of the audio-duration reduction from REF to COND is detected non-speech
    (Truong & Le (2026), Table 16 shape), per panel, system, pair and threshold.

    Per talk, with untrimmed durations D and non-speech N (samples in frames below the
    threshold, edges and interior pauses alike, no guard): ``reduction_s = D(REF) − D(COND)``,
    ``nonspeech_s = N(REF) − N(COND)``, ``speech_s`` the rest, ``edge_s`` the same
    difference of the audio the edge replay removes. Columns are means over talks (equal
    weight); ``share_pct = 100 · Σ nonspeech / Σ reduction`` over the talks (not a mean of
    per-talk shares).
    """
    keys = [k for k in output_keys(res.trims) if k in res.trims]
    tr = res.trims.assign(condition=res.trims["condition"].map(canonical_condition))
    rate = tr["sample_rate"].clip(lower=1)
    tr = tr.assign(total=tr["n_samples"] / rate, speech=tr["speech_samples"] / rate,
                   kept=(tr["keep_end"] - tr["keep_start"]) / rate)
    per = tr.groupby([*keys, "threshold"], sort=False)[["total", "speech", "kept"]].sum().reset_index()
    per["nonspeech"], per["edge"] = per["total"] - per["speech"], per["total"] - per["kept"]
    conds = list(dict.fromkeys(per["condition"]))
    pairs = [(canonical_condition(p), canonical_condition(q)) for p, q in pairs]
    for pair in pairs:
        for c in pair:
            if c not in conds:
                raise InputError.at(source, f"no condition '{c}'", field="--pair", accepted=", ".join(conds))
    summary_keys = res.summary[[*keys, "threshold"]].assign(
        condition=res.summary["condition"].map(canonical_condition))
    sig_of = {tuple(r): s for r, s in zip(summary_keys.itertuples(index=False), res.signatures)}
    group_keys = [k for k in keys if k not in ("talk_id", "condition")] + ["threshold"]
    found, missing = [], []
    for gk, g in per.groupby(group_keys, sort=False):
        where = dict(zip(group_keys, gk))
        for ref, cond in pairs:
            a, b = g[g["condition"] == ref].set_index("talk_id"), g[g["condition"] == cond].set_index("talk_id")
            for t in sorted(set(a.index) ^ set(b.index)):
                label = ", ".join(f"{k}={v}" for k, v in where.items())
                missing.append(f"({label}, talk_id={t}, condition={cond if t in a.index else ref})")
            both = [t for t in a.index if t in b.index]
            if both:
                found.append((where, ref, cond, a.loc[both], b.loc[both]))
    if missing and not allow_incomplete:
        shown = "; ".join(missing[:5]) + (f"; … {len(missing) - 5} more" if len(missing) > 5 else "")
        raise IncompleteError(f"{source}: {len(missing)} output(s) missing for a --pair: {shown} "
                              "(pass --allow-incomplete to exclude those talks and count them)")
    rows, sigs = [], []
    for where, ref, cond, a, b in found:
        d = a[["total", "nonspeech", "edge"]] - b[["total", "nonspeech", "edge"]]
        total = d["total"].sum()
        rows.append({**where, "reference": ref, "condition": cond, "n_talks": len(d),
                     "reduction_s": d["total"].mean(), "nonspeech_s": d["nonspeech"].mean(),
                     "speech_s": (d["total"] - d["nonspeech"]).mean(),
                     "share_pct": 100 * d["nonspeech"].sum() / total if total != 0 else np.nan,
                     "edge_s": d["edge"].mean()})
        first = {**where, "talk_id": a.index[0], "condition": ref}
        up = sig_of[tuple(first[k] for k in (*keys, "threshold"))]
        sigs.append(merge(up, {k: v for k, v in where.items() if k != "system"},
                          {"table": "nonspeech-share", "rule": cond, "reference": ref,
                           "excluded": len(missing) if allow_incomplete else None}))
    panel = [k for k in group_keys if k not in ("system", "threshold")]
    return pd.DataFrame(rows, columns=[*panel, *SHARE_COLUMNS]), sigs
