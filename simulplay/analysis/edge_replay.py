"""Edge-silence replay (SPEC §4): trim each request's leading and trailing non-speech at
several Silero VAD thresholds, keep every request's readiness, replay playback.

Per threshold the manifest's ``audio_s`` becomes the kept samples / sample rate and the
request-release replay of :func:`simulplay.sim.replay` runs unchanged: readiness comes
from dispatch and measured service, which trimming never touches. A request whose
waveform has no speech frame keeps nothing: it occupies the synthesizer but is not
played. Probabilities come from :mod:`simulplay.analysis.vad` (computed once per audio
key and model, cached in the store).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from simulplay.analysis.edges import keep_bounds, speech_samples
from simulplay.analysis.vad import SileroVad, VadStats, speech_probabilities
from simulplay.errors import InputError
from simulplay.fields import Checker
from simulplay.signature import merge
from simulplay.sim.manifest import output_keys
from simulplay.sim.replay import drop_incomplete, replay
from simulplay.specs import format_value

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


def parse_thresholds(text: str, source: str = "--thresholds") -> tuple[float, ...]:
    """``0.3,0.5,0.7`` → sorted distinct thresholds, each in (0, 1]."""
    accepted = "comma-separated speech-probability thresholds in (0, 1], e.g. 0.3,0.5,0.7"
    out = []
    for part in text.split(","):
        try:
            value = float(part)
        except ValueError as e:
            raise InputError.at(f"{source} '{text}'", f"'{part.strip()}' is not a number", accepted=accepted) from e
        if not 0 < value <= 1:
            raise InputError.at(f"{source} '{text}'", f"{value:g} is not in (0, 1]", accepted=accepted)
        if value in out:
            raise InputError.at(f"{source} '{text}'", f"{value:g} is repeated", accepted=accepted)
        out.append(value)
    return tuple(sorted(out))


def check_guard(guard_ms: float, source: str = "--guard-ms") -> float:
    if not (np.isfinite(guard_ms) and guard_ms >= 0):
        raise InputError.at(f"{source} {guard_ms:g}", "is not a duration ≥ 0", accepted="milliseconds ≥ 0, e.g. 100")
    return float(guard_ms)


def trim_label(guard_ms: float) -> str:
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


def edge_replay(manifest: pd.DataFrame, store, thresholds: Sequence[float], *, guard_ms: float = 100.0,
                vad: SileroVad | None = None, allow_incomplete: bool = False,
                upstream: Mapping[str, Any] | None = None, source: str = "manifest",
                progress: bool = True) -> EdgesResult:
    """Replay a validated synthesized manifest once per threshold with trimmed durations."""
    vad = vad or SileroVad()
    thresholds = tuple(sorted(thresholds))
    kept_manifest, excluded = drop_incomplete(manifest, allow_incomplete, source)
    audio = audio_columns(kept_manifest, source)
    probs, stats = speech_probabilities(audio[["audio_key", "n_samples", "sample_rate"]].itertuples(index=False),
                                        store, vad, progress=progress)
    trims = trim_requests(audio, probs, thresholds, guard_ms)
    keys = output_keys(kept_manifest)
    extra = {"trim": trim_label(guard_ms), "vad": vad.label(), "excluded": len(excluded) if allow_incomplete else None}
    summaries, sigs, parts = [], [], []
    for t in thresholds:
        tr = trims[trims["threshold"] == t].set_index("row")
        m = kept_manifest.copy()
        kept = (tr["keep_end"] - tr["keep_start"]).to_numpy(np.int64)
        m.loc[tr.index, "audio_s"] = kept / tr["sample_rate"].clip(lower=1).to_numpy()
        m.loc[tr.index, "n_samples"] = kept  # replay takes durations from the sample counts
        rep = replay(m, allow_incomplete=allow_incomplete, upstream=upstream, source=source)
        summary = rep.summary.copy()
        summary.insert(0, "threshold", t)
        summary = summary.merge(_per_output(kept_manifest, tr, keys), on=keys, how="left", validate="one_to_one")
        summaries.append(summary)
        sigs += [merge(s, extra, {"threshold": t}) for s in rep.signatures]
        parts.append(rep.parts.assign(threshold=t)[["threshold", *rep.parts.columns]])
    trims = trims.join(kept_manifest[keys + ["seq"]], on="row").drop(columns="row")
    trims = trims[["threshold", *keys, "seq", "n_samples", "sample_rate", "keep_start", "keep_end", "speech_samples"]]
    return EdgesResult(pd.concat(summaries, ignore_index=True), sigs, pd.concat(parts, ignore_index=True),
                       trims.reset_index(drop=True), stats, dict(vad.identity), excluded)


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
    (the paper's Table 16 shape), per panel, system, pair and threshold.

    Per talk, with untrimmed durations D and non-speech N (samples in frames below the
    threshold, edges and interior pauses alike, no guard): ``reduction_s = D(REF) − D(COND)``,
    ``nonspeech_s = N(REF) − N(COND)``, ``speech_s`` the rest, ``edge_s`` the same
    difference of the audio the edge replay removes. Columns are means over talks (equal
    weight); ``share_pct = 100 · Σ nonspeech / Σ reduction`` over the talks (not a mean of
    per-talk shares).
    """
    from simulplay.errors import IncompleteError
    from simulplay.grouping import canonical_condition

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


@dataclass
class EdgesRun:
    """An edge-silence sweep with its η table (Table 10 shape) and non-speech shares (Table 16)."""

    result: EdgesResult
    eta: Any = None  # EtaResult, when a, f and reference were given
    share: pd.DataFrame | None = None
    share_signatures: list[dict[str, Any]] | None = None


def run_edges(manifest: pd.DataFrame, store, thresholds: Sequence[float], *, guard_ms: float = 100.0,
              vad: SileroVad | None = None, a: str | None = None, f: str | None = None,
              reference: str | None = None, boot=None, pairs: Sequence[tuple[str, str]] | None = None,
              allow_incomplete: bool = False, upstream: Mapping[str, Any] | None = None,
              source: str = "manifest", progress: bool = True) -> EdgesRun:
    """Sweep, then η per threshold (when ``a``, ``f``, ``reference``) and the non-speech share
    for ``pairs`` (``None``: no share table; empty: ``reference`` against every other condition)."""
    from simulplay.analysis.eta import compute_eta
    from simulplay.grouping import canonical_condition

    _check_names(manifest, a, f, [reference] + [c for p in pairs or () for c in p], source)
    res = edge_replay(manifest, store, thresholds, guard_ms=guard_ms, vad=vad, allow_incomplete=allow_incomplete,
                      upstream=upstream, source=source, progress=progress)
    run = EdgesRun(res)
    if a is not None and f is not None and reference is not None:
        run.eta = compute_eta(res.summary, a=a, f=f, reference=reference, boot=boot,
                              allow_incomplete=allow_incomplete, upstream=res.signatures, source=source)
    if pairs is not None:
        if not pairs and reference is not None:
            ref = canonical_condition(reference)
            others = dict.fromkeys(canonical_condition(c) for c in res.summary["condition"])
            pairs = [(ref, c) for c in others if c != ref]
        run.share, run.share_signatures = nonspeech_share(res, pairs, allow_incomplete=allow_incomplete,
                                                          source=source)
    return run


def _check_names(manifest: pd.DataFrame, a: str | None, f: str | None, conditions: Sequence[str | None],
                 source: str) -> None:
    """Systems and conditions named on the command line exist, before any inference runs."""
    from simulplay.grouping import canonical_condition

    systems = list(dict.fromkeys(manifest["system"]))
    for flag, name in (("--a", a), ("--f", f)):
        if name is not None and name not in systems:
            raise InputError.at(source, f"no system '{name}'", field=flag, accepted=", ".join(systems))
    known = list(dict.fromkeys(manifest["condition"].map(canonical_condition)))
    for c in conditions:
        if c is not None and canonical_condition(c) not in known:
            raise InputError.at(source, f"no condition '{c}'", field="--reference/--pair", accepted=", ".join(known))
