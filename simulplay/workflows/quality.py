"""``simulplay quality``: how each output sounds, per request and per output, and what grouping
changes about it (docs/quality.md; the scorers in :mod:`simulplay.scorers`).

Each output of a synthesized manifest is replayed under request release with the measured
service clock, and scored on two kinds of audio:

* its **speech**: its played requests' samples back to back, in play order (what the listener
  hears without the idle silences, which depend on the clock rather than on the voice) — DNSMOS
  and the whole-output speaker embedding;
* its **listener audio** (:func:`~simulplay.sim.listener_audio.render_output`, exactly what
  ``simulplay render`` writes) — the joins at every request boundary.

Per request (``--metrics`` permitting): DNSMOS of the request's audio; ``similarity_output``,
the cosine of the request's GE2E embedding with its output's whole-speech embedding (the
voice's consistency across requests); ``similarity_reference``, with the whole speech of the
same talk, system, backend and realization under the reference condition; ``embedded``
(False: too short to embed, the similarities NaN, never 0). Per output: DNSMOS of its speech,
the mean similarities over its embedded requests with ``n_embedded`` / ``n_too_short``, and the
join summary (:func:`simulplay.scorers.joins.summarize`).

Every per-output score goes through the paired talk bootstrap of ``simulplay bootstrap``
(:func:`simulplay.analysis.quality_intervals.interval_table`), per panel (system, backend,
realization): each condition's equal-talk mean, and each condition's Δ against the reference
(``condition − reference``), with intervals and direction counts. A talk without a finite score
under every condition of its panel (every request too short to embed, a single-request output
without joins) is left out of that score's rows and counted in ``n_talks_left_out``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simulplay.analysis.bootstrap import Bootstrap
from simulplay.analysis.quality_intervals import SIMILARITY_COLUMNS, interval_table
from simulplay.analysis.table_bootstrap import PAIR_SIGN
from simulplay.core.errors import InputError
from simulplay.core.extras import MissingExtra, found, require_extra
from simulplay.core.progress import NO_PROGRESS, Progress, tracking
from simulplay.core.signature import merge
from simulplay.core.tables import write_table
from simulplay.grouping import canonical_condition
from simulplay.manifest.validate import output_keys
from simulplay.scorers import dnsmos, joins, similarity
from simulplay.sim.listener_audio import render_output
from simulplay.sim.part_audio import LoadAudio, PartAudio, part_samples, require_audio
from simulplay.sim.replay import replay

METRICS = ("dnsmos", "similarity", "joins")


@dataclass
class QualityResult:
    """The per-request, per-output and interval tables with one signature per row (the
    intervals: one per row too), the reference condition and the excluded outputs."""

    requests: pd.DataFrame
    outputs: pd.DataFrame
    deltas: pd.DataFrame
    request_signatures: list[dict[str, Any]]
    output_signatures: list[dict[str, Any]]
    delta_signatures: list[dict[str, Any]]
    reference: str
    excluded: list[str] = field(default_factory=list)
    joins: pd.DataFrame | None = None  # one row per join (``joins`` metric): output keys, seq_before, seq, JOIN_COLUMNS
    join_signatures: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class QualitySettings:
    """What a run scores (``simulplay run``/``demo``; the demo's: :data:`DEMO_QUALITY`).

    ``metrics``: of :data:`METRICS`. ``dnsmos_windows``: ``None`` scores DNSMOS on every
    request and on each output's whole speech; N scores only the first N windows of 9.01 s of
    each output's speech (no request). ``conditions``: empty for all; else DNSMOS and
    similarity score only these conditions' outputs (the reference among them), joins still
    every output."""

    metrics: tuple[str, ...] = METRICS
    dnsmos_windows: int | None = None
    conditions: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The settings as ``run.json`` records them."""
        return {"metrics": list(self.metrics), "dnsmos_windows": self.dnsmos_windows,
                "conditions": list(self.conditions)}


#: The demo's quality step (it adds ≤ 30 s to the demo's first run on 2 cores; docs/quality.md):
#: joins on every output, DNSMOS on the first 9.01 s window of each output's speech under the
#: reference and timer:w=4 (the Listen section's conditions), no similarity.
DEMO_QUALITY = QualitySettings(metrics=("dnsmos", "joins"), dnsmos_windows=1, conditions=("immediate", "timer:w=4"))


def describe(settings: QualitySettings) -> str:
    """One sentence: what ``settings`` score (printed with the table, shown in the report)."""
    scored = []
    if "dnsmos" in settings.metrics:
        where = ("every request and each output's whole speech" if settings.dnsmos_windows is None else
                 f"the first {settings.dnsmos_windows} window(s) of 9.01 s of each output's speech")
        scored.append(f"DNSMOS on {where}")
    if "similarity" in settings.metrics:
        scored.append("speaker similarity of every request")
    under = f" under {', '.join(settings.conditions)} only" if settings.conditions else ""
    parts = [" and ".join(scored) + under] if scored else []
    if "joins" in settings.metrics:
        parts.append("joins on every output")
    left = [m for m in METRICS if m not in settings.metrics]
    return "Scored: " + "; ".join(parts) + (f"; not scored: {', '.join(left)}" if left else "") + "."


def parse_metrics(names: str | Sequence[str], src: str | None = None) -> tuple[str, ...]:
    """``dnsmos,similarity,joins`` (``--metrics``), or a list of these names (an experiment
    file's ``quality.metrics``, ``src`` the file): any non-empty subset, any order, in
    :data:`METRICS` order."""
    listed = names.split(",") if isinstance(names, str) else names
    chosen = [n.strip() for n in listed if n.strip()]
    bad = [n for n in chosen if n not in METRICS]
    if bad or not chosen:
        message = f"names no metric {', '.join(bad)}".strip() if bad else "is empty"
        if src is None:
            raise InputError.at(f"--metrics '{names}'", message, accepted="a comma-separated subset of " +
                                ",".join(METRICS))
        raise InputError.at(src, f"{list(names)!r} {message}", field="quality.metrics", field_label="key",
                            accepted="a non-empty list of " + ", ".join(f'"{m}"' for m in METRICS))
    return tuple(m for m in METRICS if m in chosen)


def require_quality_extras(metrics: Sequence[str]) -> None:
    """Before any work: the quality extra for DNSMOS and similarity, and Resemblyzer (installed
    without its requirements, docs: Quality) for similarity; joins need neither."""
    if {"dnsmos", "similarity"} & set(metrics):
        require_extra("quality")
    if "similarity" in metrics and not (found("resemblyzer") and found("webrtcvad")):
        raise MissingExtra("quality", "pip install 'simulplay[quality]' && pip install --no-deps Resemblyzer==0.1.4")


def pick_reference(conditions: Sequence[str], reference: str | None, source: str) -> str:
    """The reference condition: the one given (as a RULE string or label), else ``immediate``
    when the manifest has it, else its first condition."""
    if reference is None:
        return "immediate" if "immediate" in conditions else conditions[0]
    ref = canonical_condition(reference)
    if ref not in conditions:
        raise InputError.at(f"--reference '{reference}'", f"is not a condition of {source}",
                            accepted=", ".join(conditions[:20]))
    return ref


def score_quality(manifest: pd.DataFrame, load_audio: LoadAudio, *, metrics: Sequence[str] = METRICS,
                  reference: str | None = None, boot: Bootstrap | None = None, allow_incomplete: bool = False,
                  upstream: Mapping[str, Any] | None = None, source: str = "manifest",
                  progress: Progress = NO_PROGRESS, dnsmos_windows: int | None = None,
                  conditions: Sequence[str] = ()) -> QualityResult:
    """Score every output of a validated, synthesized manifest (module docstring);
    ``load_audio`` reads the store's samples by key. ``dnsmos_windows`` and ``conditions``
    narrow what is scored (:class:`QualitySettings`)."""
    require_audio(manifest, source, "for quality")
    manifest = manifest.assign(condition=manifest["condition"].map(canonical_condition))
    known = list(dict.fromkeys(manifest["condition"]))
    ref = pick_reference(known, reference, source)
    limited = limited_conditions(conditions, known, ref, source)
    res = replay(manifest, release="request", allow_incomplete=allow_incomplete, upstream=upstream, source=source)
    keys = output_keys(res.summary)
    parts = part_samples(res.parts, manifest, None, source=source)
    texts = manifest.set_index([*keys, "seq"])["text"] if "text" in manifest else None
    by_output = dict(tuple(parts.groupby(keys, sort=False)))
    outputs = res.summary[keys].to_dict("records")
    order = sorted(range(len(outputs)), key=lambda i: outputs[i]["condition"] != ref)  # references first
    narrow = {"dnsmos_first_windows": dnsmos_windows if "dnsmos" in metrics else None,
              "scored_conditions": ",".join(limited) or None}
    sig = merge({"table": "quality", "metrics": ",".join(metrics), "reference": ref, "release": "request"},
                *(m.signature() for name, m in (("dnsmos", dnsmos), ("similarity", similarity)) if name in metrics),
                {k: v for k, v in narrow.items() if v is not None})
    audio, wholes = PartAudio(load_audio, source), {}
    req_rows, req_sigs, out_rows, join_rows, join_sigs = [], [], [None] * len(outputs), [], []
    with tracking(progress, len(outputs), "quality") as bar:
        for i in order:
            key = outputs[i]
            group = by_output.get(tuple(key[k] for k in keys), parts.iloc[:0])
            chosen = metrics if not limited or key["condition"] in limited else \
                [m for m in metrics if m not in ("dnsmos", "similarity")]
            rows, row, seconds, at_joins = _score_output(group, key, keys, audio, texts, chosen, wholes, ref, source,
                                                         dnsmos_windows)
            audio.clear()
            join_rows += at_joins
            join_sigs += [merge(res.signatures[i], sig)] * len(at_joins)
            req_rows += rows
            req_sigs += [merge(res.signatures[i], sig)] * len(rows)
            out_rows[i] = row
            bar.advance(audio_s=seconds)
    out_sigs = [merge(s, sig) for s in res.signatures]
    per_output = pd.DataFrame(out_rows)
    per_request = pd.DataFrame(req_rows, columns=_request_columns(keys, metrics, dnsmos_windows is None))
    panel_keys = [k for k in keys if k not in ("talk_id", "condition")]
    upstream_of = {}  # (panel, condition) → the replay's signature of its first output (rule, backend, clock …)
    for row, s in zip(out_rows, out_sigs):
        upstream_of.setdefault((tuple(row[k] for k in panel_keys), row["condition"]), s)
    deltas, delta_sigs = interval_table(per_output, keys, ref, boot or Bootstrap(), sig, limited, upstream_of)
    joined = pd.DataFrame(join_rows, columns=[*keys, "seq_before", "seq", *joins.JOIN_COLUMNS]) \
        if "joins" in metrics else None
    return QualityResult(per_request, per_output, deltas, req_sigs, out_sigs, delta_sigs, ref, list(res.excluded),
                         joined, join_sigs)


def limited_conditions(conditions: Sequence[str], known: list[str], ref: str, source: str,
                       file: str | None = None) -> list[str]:
    """``conditions`` canonical, each a condition of ``source`` (the manifest, or the rules of
    the experiment ``file``: its errors name the key ``quality.conditions``), the reference
    among them."""

    def err(what: str, subject: str, message: str, accepted: str) -> InputError:
        if file is None:
            return InputError.at(f"quality {what} '{subject}'", message, accepted=accepted)
        return InputError.at(file, f"{what} '{subject}' {message}", field="quality.conditions", field_label="key",
                             accepted=accepted)

    limited = list(dict.fromkeys(canonical_condition(c) for c in conditions))
    for c in limited:
        if c not in known:
            raise err("condition", c, f"is not a condition of {source}", ", ".join(known[:20]))
    if limited and ref not in limited:
        raise err("conditions", ",".join(limited), f"leave out the reference {ref}",
                  "conditions that include the reference")
    return limited


def _request_columns(keys: list[str], metrics: Sequence[str], dnsmos_per_request: bool = True) -> list[str]:
    cols = [*keys, "seq", "audio_s", "n_words"]
    if "dnsmos" in metrics and dnsmos_per_request:
        cols += [*dnsmos.SCORES, "dnsmos_windows"]
    if "similarity" in metrics:
        cols += ["embedded", *SIMILARITY_COLUMNS]
    return cols


def _score_output(group: pd.DataFrame, key: dict[str, Any], keys: list[str], audio: PartAudio,
                  texts: pd.Series | None, metrics: Sequence[str], wholes: dict, ref: str,
                  source: str, dnsmos_windows: int | None = None
                  ) -> tuple[list[dict], dict[str, Any], float, list[dict]]:
    """One output's request rows, its own row, its seconds of speech and its join rows
    (each with the requests on either side: ``seq_before``, ``seq``)."""
    played = group[group["play_s"].notna().to_numpy() & (group["sample_stop"] > group["sample_start"]).to_numpy()]
    pieces = [audio.part(r) for r in played.itertuples(index=False)]
    rate = int(played["sample_rate"].iloc[0]) if len(played) else 0
    words = [_words(texts, key, keys, s) for s in played["seq"].tolist()]
    speech = np.concatenate(pieces) if pieces else np.zeros(0, np.int16)
    seconds = len(speech) / rate if rate else 0.0
    rows = [{**key, "seq": int(s), "audio_s": len(p) / rate, "n_words": w}
            for s, p, w in zip(played["seq"].tolist(), pieces, words)]
    row: dict[str, Any] = {**key, "n_requests": len(played), "audio_s": seconds, "n_words": int(sum(words))}
    if "dnsmos" in metrics:
        if dnsmos_windows is None:
            for r, p in zip(rows, pieces):
                r.update(dnsmos.score(p, rate))
        row.update(dnsmos.score(speech, rate, dnsmos_windows) if len(speech)
                   else dict.fromkeys((*dnsmos.SCORES, "dnsmos_windows")))
    if "similarity" in metrics:
        row.update(_similarity(rows, pieces, speech, rate, key, wholes, ref))
    at_joins: list[dict] = []
    if "joins" in metrics:
        rendered = render_output(group, audio, label=str(key), source=source)
        table = joins.joins(rendered.samples, rendered.starts, rendered.counts, rendered.rate)
        row.update(joins.summarize(table, seconds, row["n_words"]))
        seqs = played["seq"].tolist()  # the parts render_output played, in play order
        at_joins = [{**key, "seq_before": int(seqs[j - 1]), "seq": int(seqs[j]), **r}
                    for j, r in zip(table["join"].tolist(), table.to_dict("records"))]
    return rows, row, seconds, at_joins


def _words(texts: pd.Series | None, key: dict[str, Any], keys: list[str], seq: int) -> int:
    if texts is None:
        return 0
    return len(str(texts.get((*[key[k] for k in keys], seq), "")).split())


def _similarity(rows: list[dict], pieces: list[np.ndarray], speech: np.ndarray, rate: int, key: dict[str, Any],
                wholes: dict, ref: str) -> dict[str, Any]:
    """Each request's similarities (into ``rows``) and the output's summary; the reference
    condition's whole-speech embedding is remembered in ``wholes`` for the others."""
    whole = similarity.embed(speech, rate) if len(speech) else None
    panel = tuple(v for k, v in key.items() if k != "condition")
    if key["condition"] == ref:
        wholes[panel] = whole
    reference = wholes.get(panel)
    for r, p in zip(rows, pieces):
        e = similarity.embed(p, rate)
        r.update({"embedded": e is not None, "similarity_output": similarity.cosine(e, whole),
                  "similarity_reference": similarity.cosine(e, reference)})
    embedded = [r for r in rows if r["embedded"]]

    def mean(col: str) -> float:
        v = [r[col] for r in embedded if np.isfinite(r[col])]
        return float(np.mean(v)) if v else float("nan")

    return {"n_embedded": len(embedded), "n_too_short": len(rows) - len(embedded),
            "similarity_output": mean("similarity_output"), "similarity_reference": mean("similarity_reference"),
            "similarity_whole_reference": similarity.cosine(whole, reference)}


def quality_paths(out: Path) -> tuple[Path, Path, Path]:
    """The three tables: per output (``OUT``), per request and intervals beside it
    (``OUT.requests``, ``OUT.intervals`` before the suffix)."""
    return out, out.with_name(f"{out.stem}.requests{out.suffix}"), out.with_name(f"{out.stem}.intervals{out.suffix}")


def joins_path(out: Path) -> Path:
    """The joins table beside the per-output table ``OUT`` (``OUT.joins``, same suffix):
    one row per join, written with the ``joins`` metric."""
    return out.with_name(f"{out.stem}.joins{out.suffix}")


#: The hidden record of what a run's quality tables were made from (``simulplay run``/``demo``).
QUALITY_RECORD = ".quality-inputs.json"


def reusable_quality(record: Path, key: Mapping[str, Any], paths: Sequence[Path],
                     reference: str) -> QualityResult | None:
    """The tables read back when ``record`` (:func:`simulplay.workflows.reuse.remember`) names
    ``key`` and every table is unchanged; else None."""
    from simulplay.core.tables import read_table, stored_signatures
    from simulplay.workflows.reuse import reusable

    if not reusable(record, key, record.parent, [p.name for p in paths]):
        return None
    frames = []
    for p in [*paths[:3], *(p for p in paths if p == joins_path(paths[0]))]:  # joins: when they were written
        df, meta = read_table(p)
        frames.append((df.drop(columns="signature", errors="ignore"), stored_signatures(meta, len(df)) or []))
    (outputs, out_sigs), (requests, req_sigs), (deltas, delta_sigs) = frames[:3]
    joined, join_sigs = frames[3] if len(frames) > 3 else (None, [])
    return QualityResult(requests, outputs, deltas, req_sigs, out_sigs, delta_sigs, reference, [], joined, join_sigs)


def write_quality(res: QualityResult, out: Path) -> list[Path]:
    """Write the per-output, per-request and interval tables (:func:`quality_paths`)."""
    p_out, p_req, p_int = quality_paths(out)
    write_table(res.outputs, p_out, res.output_signatures, kind="quality")
    write_table(res.requests, p_req, res.request_signatures or {"table": "quality"}, kind="quality-requests")
    write_table(res.deltas, p_int, res.delta_signatures or {"table": "quality-intervals"}, kind="quality-intervals",
                signature_column=True)
    if res.joins is None:
        return [p_out, p_req, p_int]
    write_table(res.joins, joins_path(out), res.join_signatures or {"table": "quality"}, kind="quality-joins")
    return [p_out, p_req, p_int, joins_path(out)]


__all__ = ["DEMO_QUALITY", "METRICS", "PAIR_SIGN", "QualityResult", "QualitySettings", "describe", "joins_path",
           "limited_conditions", "parse_metrics", "score_quality", "write_quality"]
