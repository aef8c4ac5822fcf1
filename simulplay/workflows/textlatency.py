"""``simulplay textlatency``: OmniSTEval's long-form text latency beside speech completion.

Inputs: the traces (source clock; ``--ca-trace``: the same streams on the computation-aware
clock), the references (one line per reference segment) and their segmentation (MuST-C
YAML: ``wav``, ``offset``, ``duration`` in seconds), and a playback summary. For each
system, every talk's stream becomes one OmniSTEval hypothesis line
(:func:`simulplay.analysis.textlatency.hypothesis_line`); OmniSTEval 0.1.10's own loaders
read it beside that system's talks' segments and references (written to a temporary
folder), its SoftSegmenter resegments the stream onto the segments, and
``evaluate_instances`` scores **each talk on its own** (OmniSTEval's corpus value would
weight segments; simulplay weights talks). A talk's scores equal those of
``omnisteval longform`` run on that talk alone.

LongYAAL scores a segment's words only while they come before the end of the talk's last
reference segment: words emitted at or after it are left out (``n_units_late``), and a
segment whose first word comes that late is left out altogether; LongAL and LongLAAL
keep them. Text flushed at the end of the source can therefore vanish from LongYAAL.

OmniSTEval's aligner maps its recordings over ``multiprocessing.Pool()``, which forks: in a
process with threads (a backend's, onnxruntime's) a forked worker can wait forever on a lock
copied mid-use. Each call lends it a pool from :mod:`simulplay.core.pools` instead (forkserver, one
worker per CPU; in this process when the work is small: bench/bench_aligner_pool.py); the
alignment itself, and so every score, is OmniSTEval's.
"""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import yaml

from simulplay.analysis.textlatency import (
    CA_SCORE_KEYS,
    SCORE_KEYS,
    UNITS,
    compare_table,
    hypothesis_line,
    per_output_table,
    unit_emissions,
)
from simulplay.core.errors import InputError
from simulplay.core.extras import require_extra
from simulplay.core.fields import Checker
from simulplay.core.keys import OUTPUT_KEYS, RUN_PANEL_KEYS
from simulplay.core.pools import pool, worker_count
from simulplay.core.signature import base_signature, merge
from simulplay.core.tables import check_readable, read_table, stored_signatures
from simulplay.traces import read_traces, streams_from_frame
from simulplay.traces.importers.jsonlines import log_fingerprint
from simulplay.traces.importers.segmentation import Segmentation, read_segmentation
from simulplay.traces.model import Stream

SUMMARY_NEEDS = (*OUTPUT_KEYS, "first_play_s", "offset_s", "source_s")
PERL_MODULES = ("Thread", "FindBin", "Time::HiRes")  # what Moses' tokenizer-v1.1.perl uses


@dataclass
class TextLatencyResult:
    per_output: pd.DataFrame
    per_output_signatures: list[dict[str, Any]]
    compare: pd.DataFrame
    compare_signatures: list[dict[str, Any]]
    ignored_talks: list[str] = field(default_factory=list)  # segmented talks without a stream
    excluded: list[str] = field(default_factory=list)  # talks left out of a comparison (no A or F output)


def check_settings(unit: str, lang: str | None) -> None:
    """The unit, and perl for Moses tokenization when ``lang`` asks for it (before any work)."""
    if unit not in UNITS:
        raise InputError.at(f"--unit '{unit}'", "unknown unit", accepted=" or ".join(UNITS))
    require_extra("textlatency")
    if lang is None or lang in ("zh", "ja"):  # OmniSTEval does not tokenize these
        return
    perl = shutil.which("perl")
    probe = subprocess.run([perl, *(f"-M{m}" for m in PERL_MODULES), "-e1"], capture_output=True) if perl else None
    if probe is None or probe.returncode != 0:
        raise InputError.at(f"--lang {lang}", "Moses tokenization runs perl with its standard modules "
                            f"({', '.join(PERL_MODULES)}), which are not installed",
                            accepted="perl (Debian: apt-get install perl), or no --lang (no tokenization)")


def text_latency(traces: Sequence[Path], references: Path, segmentation: Path, summary: Path, *, a: str, f: str,
                 ca_traces: Sequence[Path] = (), unit: str = "word", lang: str | None = None,
                 allow_incomplete: bool = False) -> TextLatencyResult:
    """Score every stream of the summary's outputs and put the scores beside its completion."""
    check_settings(unit, lang)
    seg = read_segmentation(segmentation)
    refs = _read_references(references, len(seg.segments))
    summary_df, summary_sigs = _read_summary(summary, a, f)
    cu = _streams(traces, "source")
    ca = _streams(ca_traces, "computation-aware") if ca_traces else None
    needed = list(dict.fromkeys(zip(summary_df["talk_id"], summary_df["system"])))
    _check_streams(needed, cu, ca, seg, summary, traces, ca_traces)
    scores = {}
    for system in dict.fromkeys(s for _, s in needed):
        talks = [t for t, s in needed if s == system]
        scores |= _score_system(system, talks, cu, ca, seg, refs, unit, lang)
    keys = [k for k in ("talk_id", "system") + RUN_PANEL_KEYS + ("condition",) if k in summary_df]
    per_output = per_output_table(scores, summary_df, keys)
    text_sig = _signature(traces, ca_traces, references, seg, unit, lang)
    per_sigs = [merge(s, text_sig) for s in summary_sigs]
    groups = [k for k in RUN_PANEL_KEYS if k in summary_df] + ["condition"]
    excluded = _pairs_or_refuse(summary_df, a, f, groups, allow_incomplete, summary)
    comp = compare_table(per_output, a, f, groups)
    first = {tuple(r[k] for k in groups): i for i, r in reversed(list(enumerate(per_output.to_dict("records"))))}
    comp_sigs = [merge(per_sigs[first[tuple(r[k] for k in groups)]], {"table": "text-latency-compare", "a": a, "f": f,
                                                                       "excluded": len(excluded) or None})
                 for r in comp.to_dict("records")]
    ignored = [t for t in seg.talks if t not in {t for t, _ in needed}]
    return TextLatencyResult(per_output, per_sigs, comp, comp_sigs, ignored, excluded)


def _read_references(path: Path, n_segments: int) -> list[str]:
    """One reference per line, stripped, read as OmniSTEval reads them (universal newlines)."""
    p = check_readable(path)
    try:
        with open(p, encoding="utf-8") as fh:
            lines = [line.strip() for line in fh]
    except UnicodeDecodeError as e:
        raise InputError.at(p, f"is not UTF-8 text (byte {e.start})", accepted="one reference per line") from e
    if len(lines) != n_segments:
        raise InputError.at(p, f"has {len(lines)} line(s), the segmentation {n_segments} segment(s)",
                            accepted="one reference line per segmentation entry, in its order")
    return lines


def _read_summary(path: Path, a: str, f: str) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    df, meta = read_table(path)
    check = Checker(str(path), df)
    check.require_columns(SUMMARY_NEEDS, "playback summary")
    out = pd.DataFrame({c: check.strings(c) for c in OUTPUT_KEYS
                        + tuple(k for k in RUN_PANEL_KEYS if k in df)})
    for c in ("first_play_s", "offset_s"):
        out[c] = check.numbers(c, allow_empty=True)
    out["source_s"] = check.numbers("source_s", positive=True)
    keys = [c for c in OUTPUT_KEYS + RUN_PANEL_KEYS if c in out]
    for i in np.flatnonzero(out.duplicated(keys).to_numpy())[:1]:
        check.add_at(int(i), "repeats an output", "talk_id", f"one row per output ({', '.join(keys)})")
    check.raise_if_any()
    for name, flag in ((a, "--a"), (f, "--f")):
        if name not in set(out["system"]):
            raise InputError.at(path, f"has no system '{name}'", field=flag,
                                accepted=", ".join(sorted(set(out["system"]))))
    sigs = stored_signatures(meta, len(df))
    if sigs is None:
        shown = df["signature"].tolist() if "signature" in df else [None] * len(df)
        sigs = [{"replay": s} if s else {} for s in shown]
    return out, sigs


def _streams(paths: Sequence[Path], clock: str) -> dict[tuple[str, str], Stream]:
    """Streams by (talk, system); a trace whose signature names the other clock is refused."""
    for p in paths:
        other = _trace_clock(Path(p))
        if other is not None and other != clock:
            flag = "--ca-trace" if clock == "computation-aware" else "TRACE"
            raise InputError.at(p, f"is on the {other} clock (its signature says so)", field=flag,
                                field_label="argument", accepted=f"a trace on the {clock} clock here")
    return {(s.talk_id, s.system): s for s in streams_from_frame(read_traces(paths))}


def _trace_clock(path: Path) -> str | None:
    if path.suffix.lower() != ".parquet" or not path.is_file():
        return None
    try:
        raw = (pq.read_schema(path).metadata or {}).get(b"simulplay")
    except Exception:  # noqa: BLE001 - the trace reader reports unreadable files
        return None
    sigs = json.loads(raw).get("signatures", []) if raw else []
    return sigs[0].get("clock") if sigs else None


def _check_streams(needed, cu, ca, seg: Segmentation, summary, traces, ca_traces) -> None:
    for talk, system in needed:
        if (talk, system) not in cu:
            raise InputError.at(", ".join(map(str, traces)), f"holds no stream (talk_id={talk}, system={system}) "
                                f"of the summary {summary}", accepted="the traces the summary was replayed from")
        if talk not in seg.talks:
            raise InputError.at(seg.path, f"has no segment of talk {talk} (a wav named {talk}.wav)", field="wav",
                                accepted="the reference segmentation of every talk of the summary")
        if ca is None:
            continue
        if (talk, system) not in ca:
            raise InputError.at(", ".join(map(str, ca_traces)), f"holds no stream (talk_id={talk}, system={system})",
                                field="--ca-trace", field_label="argument",
                                accepted="every stream of the summary on the computation-aware clock")
        if cu[(talk, system)].joined.split() != ca[(talk, system)].joined.split():
            raise InputError.at(", ".join(map(str, ca_traces)), f"stream (talk_id={talk}, system={system}) holds "
                                "other text than on the source clock", field="--ca-trace", field_label="argument",
                                accepted="the same stream on the computation-aware clock")


def _score_system(system: str, talks: list[str], cu, ca, seg: Segmentation, refs: list[str], unit: str,
                  lang: str | None) -> dict[tuple[str, str], dict[str, Any]]:
    """OmniSTEval on one system's talks (its own loaders, from files), scored talk by talk."""
    from omnisteval.io import load_resegmentation_inputs
    from omnisteval.resegment import resegment
    from omnisteval.scoring import evaluate_instances

    index = {s.entry: i for i, s in enumerate(seg.segments)}
    entries = [s for t in talks for s in seg.talks[t]]
    lines, cells = [], []
    for t in talks:
        units, cu_ms = unit_emissions(cu[(t, system)], unit)
        ref_units = sum(len(refs[index[s.entry]]) if unit == "char" else len(refs[index[s.entry]].split())
                        for s in seg.talks[t])
        cells.append(ref_units * len(units))
        ca_ms = unit_emissions(ca[(t, system)], unit)[1] if ca is not None else None
        lines.append(hypothesis_line(seg.talks[t][0].wav, units, cu_ms, ca_ms, unit))
    char = unit == "char"
    logger = logging.getLogger("omnisteval")
    level = logger.level
    with tempfile.TemporaryDirectory(prefix="simulplay-omnisteval-") as tmp:
        d = Path(tmp)
        (d / "ref.yaml").write_text(yaml.safe_dump([{"wav": s.wav, "offset": s.offset_s, "duration": s.duration_s}
                                                    for s in entries]), encoding="utf-8")
        (d / "ref.txt").write_text("".join(refs[index[s.entry]] + "\n" for s in entries), encoding="utf-8")
        (d / "hyp.jsonl").write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
        try:
            logger.setLevel(logging.ERROR)
            ref_words, hyp_words, segmentation, ref_sentences = load_resegmentation_inputs(
                str(d / "ref.yaml"), None, str(d / "ref.txt"), str(d / "hyp.jsonl"), hypothesis_format="jsonl",
                char_level=char, offset_delays=False, fix_emission_ca_flag=False, emission_cu_key="delays",
                emission_ca_key="elapsed")
            with _aligner_without_fork(cells):
                instances, dicts = resegment(ref_words, hyp_words, segmentation, ref_sentences, char_level=char,
                                             lang=lang)
            out = {}
            for doc, t in enumerate(talks):
                mine = [i for i, x in enumerate(dicts) if x["docid"] == doc]
                scores, _, _ = evaluate_instances([instances[i] for i in mine], is_longform=True,
                                                  compute_quality=False, compute_latency=True)
                out[(t, system)] = _talk_scores(scores, [dicts[i] for i in mine], ca is not None, t, system)
        finally:
            logger.setLevel(level)
    return out


_ALIGNER = threading.Lock()  # one lender at a time: the loan is a module attribute of OmniSTEval
#: Below this many alignment cells (reference units × hypothesis units, summed over talks; about
#: 1 µs each) the talks are aligned in this process: starting workers costs about 0.1 s.
SERIAL_CELLS = 500_000


@contextmanager
def _aligner_without_fork(cells: list[int]) -> Iterator[None]:
    """For one call, OmniSTEval 0.1.10's ``Pool()`` (in ``omnisteval.alignment.align_words``)
    is a pool of :mod:`simulplay.core.pools`, in place of a fork pool: one worker per talk and CPU,
    or none when the ``cells`` of the talks' alignments sum to fewer than :data:`SERIAL_CELLS`."""
    from omnisteval import alignment

    workers = 1 if sum(cells) < SERIAL_CELLS else worker_count(len(cells))
    with _ALIGNER:
        before = alignment.Pool
        alignment.Pool = lambda: pool(workers)
        try:
            yield
        finally:
            alignment.Pool = before


def _talk_scores(scores: dict, dicts: list[dict], with_ca: bool, talk: str, system: str) -> dict[str, Any]:
    wanted = SCORE_KEYS | (CA_SCORE_KEYS if with_ca else {})
    missing = [k for k in wanted if k not in scores]
    if missing:  # OmniSTEval logs a failed latency block and leaves its keys out
        raise InputError.at(f"OmniSTEval on talk {talk}, system {system}", f"gave no {', '.join(missing)}",
                            accepted="segments and a stream that OmniSTEval can score")
    out: dict[str, Any] = {col: float(scores[k]) for k, col in wanted.items()}
    out["n_segments"] = len(dicts)
    out["n_empty_segments"] = sum(1 for x in dicts if not x["prediction"])
    out["n_units"] = sum(len(x.get("emission_cu", [])) for x in dicts)
    for clock, col in (("emission_cu", "n_units_late"), ("emission_ca", "n_units_late_ca")):
        if any(clock in x for x in dicts):
            out[col] = sum(int(np.sum(np.asarray(x.get(clock, []), float) >= x.get("time_to_recording_end", np.inf)))
                           for x in dicts)
    return out


def _pairs_or_refuse(summary: pd.DataFrame, a: str, f: str, groups: list[str], allow_incomplete: bool,
                     source: Path) -> list[str]:
    """Talks of a condition with an output of only one of A and F: refused unless allowed."""
    missing = []
    for key, g in summary.groupby(groups, sort=False):
        have = g.groupby("talk_id")["system"].agg(set)
        for talk, systems in have.items():
            if not {a, f} <= systems:
                missing.append(f"(talk_id={talk}, {', '.join(map(str, key if isinstance(key, tuple) else (key,)))})")
    if missing and not allow_incomplete:
        raise InputError.at(source, f"lacks the output of {a} or {f} for {len(missing)} talk(s): {missing[0]}",
                            accepted=f"outputs of both {a} and {f} for every talk (or --allow-incomplete to leave "
                            "such talks out of the comparison and count them)")
    return missing


def _signature(traces, ca_traces, references: Path, seg: Segmentation, unit: str, lang: str | None) -> dict[str, Any]:
    return base_signature(
        table="text-latency", text_latency=f"omnisteval-{metadata.version('omnisteval')}/longform", unit=unit,
        tokenizer=f"moses:{lang}" if lang and lang not in ("zh", "ja") else "none",
        references=f"{Path(references).name}@{log_fingerprint(Path(references))}",
        segmentation=f"{seg.path.name}@{seg.sha256}",
        trace=[f"{Path(p).name}@{log_fingerprint(Path(p))}" for p in traces],
        ca_trace=[f"{Path(p).name}@{log_fingerprint(Path(p))}" for p in ca_traces] or None)
