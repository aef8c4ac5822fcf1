"""``simulplay listening-test``: a blind A/B listening test of two conditions as a page that opens
from disk (docs/quality.md#listening-tests).

The manifest is replayed under request release with the measured service clock; each output
pair (the two conditions of one talk, system, backend and realization) is cut into excerpts
that say the same words under both (:mod:`simulplay.analysis.listening_excerpts`), and each
excerpt's listener audio is rendered by ``simulplay render``'s rule. ``excerpts`` of them are
drawn at random; with ``reference`` the excerpt's words are also synthesized as one request by
the manifest's backend (the hidden reference: the words read whole, with nothing streamed).

One seeded NumPy generator (``np.random.default_rng(seed)``) draws, in this order: the
excerpts, the stimulus ids, which side (A or B) each condition of a trial plays, the trials
shown twice (``repeats``, the second time with the sides swapped) and the order of all trials.
The key (``listening-key.json`` beside the page) records every draw with the signature; the
page holds the conditions only encoded, and shows them after the last rating.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import soundfile as sf

from simulplay.analysis.listening_excerpts import Requests, Span, shared_spans, text_ends, words_of
from simulplay.core.errors import InputError
from simulplay.core.progress import NO_PROGRESS, Progress, tracking
from simulplay.core.signature import base_signature, merge, settings_hash
from simulplay.core.timebase import to_ns
from simulplay.grouping import canonical_condition
from simulplay.manifest.validate import output_keys
from simulplay.sim.listener_audio import part_starts, render_output
from simulplay.sim.part_audio import LoadAudio, PartAudio, part_samples, require_audio
from simulplay.sim.replay import replay

#: The hidden reference's condition name (in the key and the exported ratings only): the words
#: read whole, the "offline" quality streaming is compared with.
REFERENCE = "offline"


@dataclass
class Stimulus:
    """One excerpt under one condition: its id in the page, int16 samples and rate (Hz)."""

    id: str
    excerpt: str
    condition: str
    samples: np.ndarray
    rate: int

    def flac(self) -> bytes:
        buf = io.BytesIO()
        sf.write(buf, self.samples, self.rate, format="FLAC", subtype="PCM_16")
        return bytes(buf.getbuffer())


@dataclass
class ListeningTest:
    """A drawn test: the key (JSON-ready), the stimuli, and the counts of what was left out."""

    key: dict[str, Any]
    stimuli: list[Stimulus]
    notes: list[str] = field(default_factory=list)


def parse_compare(text: str, conditions: Sequence[str], source: str) -> tuple[str, str]:
    """``--compare FROM,TO``: two different conditions of the manifest (canonical)."""
    from simulplay.grouping.pairs import parse_pair

    pair = parse_pair(text, source="--compare")
    for c in pair:
        if c not in conditions:
            raise InputError.at(f"--compare '{text}'", f"names '{c}', which is not a condition of {source}",
                                accepted=", ".join(conditions[:20]))
    if pair[0] == pair[1]:
        raise InputError.at(f"--compare '{text}'", "names one condition twice", accepted="two different conditions")
    return pair


def check_settings(excerpts: int, excerpt_s: float, repeats: int) -> None:
    """Counts and seconds in range (before any work)."""
    if excerpts < 1:
        raise InputError.at(f"--excerpts {excerpts}", "is below 1", accepted="1 or more excerpts")
    if not 0.5 <= excerpt_s <= 600:
        raise InputError.at(f"--excerpt-s {excerpt_s:g}", "is out of range", accepted="seconds, 0.5 to 600")
    if repeats < 0:
        raise InputError.at(f"--repeats {repeats}", "is below 0", accepted="0 or more trials shown twice")


def build_test(manifest: pd.DataFrame, load_audio: LoadAudio, *, compare: str, excerpts: int = 12,
               excerpt_s: float = 15.0, seed: int = 0, repeats: int = 2, reference: bool = False,
               backend_spec: str | None = None, upstream: Mapping[str, Any] | None = None,
               source: str = "manifest", progress: Progress = NO_PROGRESS) -> ListeningTest:
    """Draw the test (module docstring) from a validated, synthesized manifest; ``load_audio``
    reads the store's samples by key; ``backend_spec`` synthesizes the reference."""
    check_settings(excerpts, excerpt_s, repeats)
    require_audio(manifest, source, "for listening-test")
    manifest = manifest.assign(condition=manifest["condition"].map(canonical_condition))
    pair = parse_compare(compare, list(dict.fromkeys(manifest["condition"])), source)
    if reference and not backend_spec:
        raise InputError.at(source, "does not record the backend it was synthesized with", field="--reference",
                            accepted="a manifest `simulplay synth` wrote (its metadata names backend_spec)")
    chosen = manifest[manifest["condition"].isin(pair)].reset_index(drop=True)
    if reference and "backend" in manifest and manifest["backend"].nunique() > 1:
        raise InputError.at(source, "holds several backends; the reference is synthesized with one",
                            field="--reference", accepted="a manifest of one backend (or no --reference)")
    res = replay(chosen, release="request", upstream=upstream, source=source)
    keys = output_keys(res.summary)
    parts = part_samples(res.parts, chosen, None, source=source)
    pool, notes = _candidates(chosen, parts, keys, pair, excerpt_s)
    if len(pool) < excerpts:
        raise InputError.at(f"--excerpts {excerpts}", f"asks for more excerpts than {source} has: {len(pool)} of at "
                            f"most {excerpt_s:g} s say the same words under {pair[0]} and {pair[1]}",
                            accepted=f"--excerpts {max(len(pool), 1)} or fewer, or a longer --excerpt-s")
    rng = np.random.default_rng(seed)
    picked = [pool[i] for i in sorted(rng.choice(len(pool), excerpts, replace=False).tolist())]
    conds = [*pair, REFERENCE] if reference else list(pair)
    stimuli, excerpt_rows = _stimuli(picked, conds, parts, keys, load_audio, backend_spec, rng, source, progress)
    trials = _trials(excerpt_rows, pair, reference, repeats, rng)
    sig = merge(upstream, base_signature(table="listening-test", compare=",".join(pair), excerpts=excerpts,
                                         excerpt_s=excerpt_s, seed=seed, repeats=repeats,
                                         reference="whole-text" if reference else None, release="request",
                                         render="nearest-sample", format="flac-pcm16"))
    body = {"compare": list(pair), "conditions": conds, "seed": seed, "excerpt_s": excerpt_s,
            "n_candidates": len(pool), "excerpts": excerpt_rows, "trials": trials}
    key = {"test_id": settings_hash(body), "signature": sig, **body, "notes": notes}
    return ListeningTest(key, stimuli, notes)


def _requests(rows: pd.DataFrame, played: pd.DataFrame) -> Requests:
    """One output's requests (seq order) with the samples of its played ones in the listener audio."""
    rows = rows.sort_values("seq")
    text, ends = text_ends(rows["text"].astype(str).tolist(), rows["glue"].astype(bool).tolist()
                           if "glue" in rows else [False] * len(rows))
    first = np.full(len(rows), -1, np.int64)
    stop = np.full(len(rows), -1, np.int64)
    if len(played):
        counts = (played["sample_stop"] - played["sample_start"]).to_numpy(np.int64)
        rate = int(played["sample_rate"].iloc[0])
        starts = part_starts(to_ns(played["play_s"].to_numpy(float)), to_ns(played["end_s"].to_numpy(float)),
                             counts, rate)
        where = {s: i for i, s in enumerate(rows["seq"].tolist())}
        for seq, s, n in zip(played["seq"].tolist(), starts.tolist(), counts.tolist()):
            first[where[seq]], stop[where[seq]] = s, s + n
    return Requests(text, ends, first, stop)


def _played(group: pd.DataFrame) -> pd.DataFrame:
    return group[group["play_s"].notna().to_numpy() & (group["sample_stop"] > group["sample_start"]).to_numpy()]


def _candidates(manifest: pd.DataFrame, parts: pd.DataFrame, keys: list[str], pair: tuple[str, str],
                excerpt_s: float) -> tuple[list[dict[str, Any]], list[str]]:
    """Every excerpt of every output pair (in the manifest's output order) and notes on what was left out."""
    panel_keys = [k for k in keys if k != "condition"]
    by_output = dict(tuple(parts.groupby(keys, sort=False)))
    rows_of = dict(tuple(manifest.groupby(keys, sort=False)))
    pool, too_long, differ = [], 0, []
    for panel, _ in manifest.groupby(panel_keys, sort=False):
        panel = panel if isinstance(panel, tuple) else (panel,)
        outs = [_output_key(dict(zip(panel_keys, panel)), c, keys) for c in pair]
        if any(o not in rows_of for o in outs):
            continue
        played = [_played(by_output.get(o, parts.iloc[:0])) for o in outs]
        reqs = [_requests(rows_of[o], p) for o, p in zip(outs, played)]
        if reqs[0].text != reqs[1].text:
            differ.append(str(panel[0]))
            continue
        rate = int(played[0]["sample_rate"].iloc[0]) if len(played[0]) else 0
        if not rate:
            continue
        spans, n_long = shared_spans(reqs, rate, excerpt_s)
        too_long += n_long
        plain = {k: v.item() if isinstance(v, np.generic) else v for k, v in zip(panel_keys, panel)}
        pool += [{"panel": plain, "span": s, "text": reqs[0].text, "rate": rate}
                 for s in spans]
    notes = [f"{too_long} stretch(es) between shared request ends last longer than {excerpt_s:g} s: not used"] \
        if too_long else []
    if differ:
        notes.append(f"talk(s) {', '.join(differ[:10])}: the two conditions' texts differ, not used")
    return pool, notes


def _stimuli(picked: list[dict], conds: list[str], parts: pd.DataFrame, keys: list[str], load_audio: LoadAudio,
             backend_spec: str | None, rng: np.random.Generator, source: str,
             progress: Progress) -> tuple[list[Stimulus], list[dict[str, Any]]]:
    """The picked excerpts' audio under every condition, and the key's excerpt rows."""
    by_output = dict(tuple(parts.groupby(keys, sort=False)))
    ids = [f"s{i + 1:02d}" for i in rng.permutation(len(picked) * len(conds)).tolist()]
    audio, synth = PartAudio(load_audio, source), _ReferenceSynth(backend_spec) if REFERENCE in conds else None
    stimuli, rows, rendered = [], [], {}
    try:
        with tracking(progress, len(picked), "listening-test") as bar:
            for i, c in enumerate(picked):
                span: Span = c["span"]
                ex = f"e{i + 1:02d}"
                row = {"excerpt": ex, **c["panel"], "words": words_of(c["text"], span), "stimuli": {}}
                for j, cond in enumerate(conds):
                    sid = ids[i * len(conds) + j]
                    if cond == REFERENCE:
                        samples, rate = synth.say(row["words"])
                        row["stimuli"][cond] = {"id": sid, "duration_s": len(samples) / rate}
                    else:
                        out = _output_key(c["panel"], cond, keys)
                        if out not in rendered:
                            rendered[out] = render_output(by_output[out], audio, label=str(out), source=source)
                        a, b = span.samples[j]
                        samples, rate = rendered[out].samples[a:b], rendered[out].rate
                        row["stimuli"][cond] = {"id": sid, "start_s": a / rate, "end_s": b / rate,
                                                "duration_s": (b - a) / rate}
                    stimuli.append(Stimulus(sid, ex, cond, samples, rate))
                rows.append(row)
                bar.advance(audio_s=span.seconds(c["rate"]))
    finally:
        if synth is not None:
            synth.close()
    return stimuli, rows


def _output_key(panel: dict[str, Any], condition: str, keys: list[str]) -> tuple:
    return tuple(condition if k == "condition" else panel[k] for k in keys)


def _trials(excerpts: list[dict[str, Any]], pair: tuple[str, str], reference: bool, repeats: int,
            rng: np.random.Generator) -> list[dict[str, Any]]:
    """Every excerpt's pairs with drawn sides, the repeats (sides swapped), in drawn order."""
    pairs = [pair] + ([(pair[0], REFERENCE), (pair[1], REFERENCE)] if reference else [])
    base = []
    for ex in excerpts:
        for p in pairs:
            a, b = (p[1], p[0]) if rng.random() < 0.5 else p
            base.append({"excerpt": ex["excerpt"], "a": ex["stimuli"][a]["id"], "b": ex["stimuli"][b]["id"],
                         "condition_a": a, "condition_b": b})
    again = sorted(rng.choice(len(base), min(repeats, len(base)), replace=False).tolist())
    shown = base + [{**base[i], "a": base[i]["b"], "b": base[i]["a"], "condition_a": base[i]["condition_b"],
                     "condition_b": base[i]["condition_a"]} for i in again]
    order = rng.permutation(len(shown)).tolist()
    seen: set[tuple[str, frozenset]] = set()
    trials = []
    for n, i in enumerate(order):
        t = shown[i]
        which = (t["excerpt"], frozenset((t["condition_a"], t["condition_b"])))
        trials.append({"trial": n + 1, **t, "repeat": int(which in seen)})
        seen.add(which)
    return trials


class _ReferenceSynth:
    """The manifest's backend, loaded on first use: a text as one request (int16, its rate)."""

    def __init__(self, spec: str | None):
        self.spec, self.backend = spec, None

    def say(self, text: str) -> tuple[np.ndarray, int]:
        from simulplay.backends import parse_backend

        if self.backend is None:
            self.backend = parse_backend(str(self.spec), source="--reference: the manifest's backend_spec").create()
            self.backend.load()
        chunks = list(self.backend.stream(text))
        samples = np.concatenate(chunks).astype(np.int16) if chunks else np.zeros(0, np.int16)
        return samples, int(self.backend.sample_rate)

    def close(self) -> None:
        if self.backend is not None:
            self.backend.close()


def write_test(test: ListeningTest, out: str | Path) -> list[Path]:
    """Write the page, its data and the key into the new folder ``out`` (whole or not at all)."""
    from simulplay.core.paths import check_new_folder, new_folder
    from simulplay.report.listening import write_page

    target = check_new_folder(out)
    with new_folder(target) as tmp:
        names = [p.relative_to(tmp) for p in write_page(tmp, test.key, [(s.id, s.flac()) for s in test.stimuli])]
    return [target / n for n in names]
