"""``simulplay explore``: a run (or step-by-step tables) as a folder that opens in a browser
from disk, with no server and no network.

The folder::

    index.html                 the page (its text from data is set as text, never as markup)
    js/*.js, explore.css       the page's own code and style (no library, nothing fetched)
    data/panel.js              η tables, per-talk η, notes, signatures, the talks' files
    data/sweep.js              the run's modelled sweep (sweep/sweep.parquet), only when it has one
    data/talks/<talk>.js       one talk's requests and every variant's parts (loaded on opening it)
    data/audio/<talk>.js       its requests' stored audio (loaded when a lane first plays)

A page opened from ``file://`` may not ``fetch`` files beside it, so every data file is a
script that hands its JSON to the page (``simulplayExplorer.receive(kind, id, data)``),
added with ``<script src>`` when needed. File names come from data only through
:func:`simulplay.core.paths.safe_names`. Everything is computed first, written into a
temporary folder beside the target and moved into place: a failure leaves nothing.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape
from importlib.resources import files
from pathlib import Path
from typing import Any

from simulplay.analysis.small_panels import report_note
from simulplay.core.errors import InputError
from simulplay.core.paths import new_folder, safe_names
from simulplay.core.version import __version__
from simulplay.grouping import canonical_condition
from simulplay.report.build import load_inputs, result_sentence
from simulplay.report.explore.audio import StoreAudio, store_audio
from simulplay.report.explore.edges import edge_variants
from simulplay.report.explore.overlays import JoinMarks, LiveLanes, LiveRun, find_live
from simulplay.report.explore.panel import panel_payload
from simulplay.report.explore.sweep import sweep_payload
from simulplay.report.explore.talks import TalkData
from simulplay.report.explore.variants import (
    Computed,
    Variant,
    complete_manifest,
    primary_variant,
    sensitivity_variants,
)
from simulplay.report.order import condition_order
from simulplay.report.read_run import RunData

#: The page's scripts, in load order (package data under ``assets/``).
SCRIPTS = ("explore-util.js", "explore-audio.js", "explore-panel.js", "explore-timeline.js", "explore-revisions.js",
           "explore-sweep.js",
           "explore-main.js")
STYLE = "explore.css"
#: What marks a folder as an explorer (so writing again may replace it).
MARKER = ".simulplay-explore"


@dataclass
class Explorer:
    """A computed explorer, nothing written yet."""

    run: RunData
    variants: list[Variant]
    talks: TalkData
    audio: StoreAudio
    notes: list[str] = field(default_factory=list)
    sweep: dict[str, Any] | None = None  # the sweep view's data; None: the run has no sweep
    live: LiveLanes | None = None  # a live run's lanes under the predicted ones
    joins: JoinMarks | None = None  # `simulplay quality`'s joins, marked on the lanes

    @property
    def result(self) -> str:
        """The result in one sentence, as the report opens with it (η and direction counts)."""
        return result_sentence(self.run)

    @property
    def audio_note(self) -> str:
        """What the page says about audio ("" when the store is there)."""
        return "" if self.audio.store is not None else f"Audio is absent: {self.audio.why}."


def build_explorer(inputs: str | Path | Sequence[str | Path], *, traces: Sequence[str | Path] = (),
                   store: str | Path | None = None, live: str | Path | None = None,
                   joins: str | Path | None = None) -> Explorer:
    """Read a run folder, or the tables of step-by-step work (as ``simulplay report``
    does, refusing what it refuses), and replay every variant the run computed."""
    return explore_run(load_inputs(inputs, traces), store=store, live=live, joins=joins)


def explore_run(run: RunData, *, store: str | Path | None = None, computed: Computed | None = None,
                live: str | Path | None = None, joins: str | Path | None = None) -> Explorer:
    """The explorer of inputs already read (``run`` is not changed); ``store``: the audio
    store (default: a run folder's own); ``computed``: replays of the run's manifest the
    caller already holds (``simulplay run`` hands over its own); ``live``: a live run to
    show under the predicted lanes (default: the run folder's ``live/``, or the live run
    whose manifest is the input); ``joins``: a ``simulplay quality`` joins table to mark
    (:mod:`.overlays`)."""
    ref = canonical_condition(run.reference)
    if not [c for c in condition_order(run) if c != ref]:
        source = run.eta.path if run.stepwise else run.folder / "run.json"
        raise InputError.at(source, "has no condition besides the reference", field="experiment.rules",
                            field_label="key", accepted="at least two rules")
    manifest = complete_manifest(run)
    primary = primary_variant(run, manifest)
    computed = computed or Computed()
    others, notes = sensitivity_variants(run, manifest, computed)
    notes = report_note(run.summary.frame["talk_id"].nunique()) + notes
    audio = store_audio(run, store)
    edges, edge_notes = edge_variants(run, manifest, primary, audio.store.root if audio.store else None,
                                      computed.edges)
    if run.traces is None:
        notes.append("Text updates are not shown: the trace files were not found (--trace names them).")
    variants = [primary, *others, *edges]
    talks = TalkData(manifest, variants, run.traces)
    lanes, marks = _live_lanes(run, live, variants, talks), None
    if lanes is not None and lanes.problem:
        notes.append(lanes.problem)
        lanes = None
    if joins is not None:
        marks = JoinMarks(joins, talks.outputs, talks.keys)
        notes += [marks.note] if marks.note else []
    return Explorer(run, variants, talks, audio, notes + edge_notes, sweep_payload(run), lanes, marks)


def _live_lanes(run: RunData, given: str | Path | None, variants: list[Variant], talks: TalkData) -> LiveLanes | None:
    folder, explicit = find_live(run, given)
    if folder is None:
        return None
    return LiveLanes(LiveRun.read(folder), variants, talks.outputs, strict=explicit)


def default_out(inputs: str | Path | Sequence[str | Path]) -> Path:
    """``RUN_DIR/explore`` for a run folder; step-by-step tables need ``--out``."""
    paths = [Path(inputs)] if isinstance(inputs, (str, Path)) else [Path(p) for p in inputs]
    if len(paths) == 1 and (paths[0] / "run.json").is_file():
        return paths[0] / "explore"
    raise InputError.at("explore", "--out is needed for step-by-step tables",
                        accepted="--out DIR (the explorer's folder), or a run folder (default RUN_DIR/explore)")


def script(kind: str, ident: str, data: Any) -> bytes:
    """A data file: one call handing ``data`` (JSON, ASCII only, no NaN) to the page."""
    return _call(kind, ident, json.dumps(data, ensure_ascii=True, separators=(",", ":"), allow_nan=False))


def _call(kind: str, ident: str, body: str) -> bytes:
    return f"simulplayExplorer.receive({json.dumps(kind)},{json.dumps(ident, ensure_ascii=True)},{body});\n".encode()


def audio_script(talk: str, files: dict[str, bytes], problems: dict[str, str]) -> bytes:
    """A talk's audio file: keys (hex) and base64 need no JSON escaping, so the large
    strings are joined as bytes, as they are."""
    body = b",".join(b'"%s":"%s"' % (k.encode("ascii"), v) for k, v in files.items())
    head, tail = _call("audio", talk, "@").split(b"@")
    return b"".join([head, b'{"files":{', body, b'},"problems":', json.dumps(problems).encode(), b"}", tail])


def page(ex: Explorer) -> str:
    """``index.html``: the shell the scripts fill (text from data set as text); the sweep
    view's section and data file only for a run with a sweep."""
    title = f"simulplay explorer: {ex.run.name}"
    scripts = "".join(f'<script src="js/{s}"></script>' for s in SCRIPTS)
    sweep_view, sweep_data = ("<section id=\"sweep-view\"></section>", "<script src=\"data/sweep.js\"></script>") \
        if ex.sweep is not None else ("", "")
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{escape(title)}</title><link rel=\"icon\" href=\"data:,\">"
            f"<link rel=\"stylesheet\" href=\"{STYLE}\"></head><body data-state=\"loading\">"
            f"<main><h1>{escape(title)}</h1>"
            + (f"<p class=\"result\"><strong>{escape(ex.result)}</strong></p>" if ex.result else "")
            + "<p id=\"intro\"></p>"
            "<noscript><p class=\"note\">The explorer needs JavaScript.</p></noscript>"
            f"<div id=\"controls\"></div><section id=\"panel-view\"></section>{sweep_view}"
            "<section id=\"timeline-view\" hidden></section><div id=\"tip\" role=\"tooltip\" hidden></div>"
            f"<footer>Made by simulplay {escape(__version__)}.</footer></main>"
            f"{scripts}{sweep_data}<script src=\"data/panel.js\"></script></body></html>\n")


def explorer_files(ex: Explorer) -> dict[str, bytes]:
    """Every file of the explorer, by path relative to its folder."""
    talks = ex.talks.talks()
    names = dict(zip(talks, safe_names([[t] for t in talks])))
    out: dict[str, bytes] = {"index.html": page(ex).encode(), MARKER: b"simulplay explore\n"}
    assets = files("simulplay.report.explore").joinpath("assets")
    for name in (*SCRIPTS, STYLE):
        out[name if name == STYLE else f"js/{name}"] = assets.joinpath(name).read_bytes()
    entries = []
    for talk in talks:
        data = ex.talks.payload(talk)
        if ex.live is not None:
            data["live"] = ex.live.payload(talk, data)
        if ex.joins is not None:
            data["joins"] = ex.joins.payload(talk, data)
        out[f"data/talks/{names[talk]}.js"] = script("talk", talk, data)
        with_audio = ex.audio.store is not None and bool(data["audio_keys"])
        if with_audio:
            audio, problems = ex.audio.files(data["audio_keys"])
            out[f"data/audio/{names[talk]}.js"] = audio_script(talk, audio, problems)
        entries.append({"id": talk, "file": f"{names[talk]}.js", "audio": with_audio})
    panel = panel_payload(ex.run, ex.variants, entries, ex.notes, ex.audio_note)
    out["data/panel.js"] = script("panel", "", panel)
    if ex.sweep is not None:
        out["data/sweep.js"] = script("sweep", "", ex.sweep)
    return out


def write_explorer(ex: Explorer, out: str | Path) -> list[Path]:
    """Write the explorer's folder at ``out`` (new, empty, or an explorer written before,
    which is replaced whole); returns the files written."""
    target = Path(out)
    if target.exists() and not target.is_dir():
        raise InputError.at(target, "is a file", field="--out", accepted="a folder (created if missing)")
    if target.is_dir() and any(target.iterdir()) and not (target / MARKER).is_file():
        raise InputError.at(target, "is a folder that holds something other than an explorer", field="--out",
                            accepted="a new or empty folder, or one `simulplay explore` wrote")
    if not target.parent.is_dir():
        raise InputError.at(target, f"folder {target.parent} does not exist", field="--out",
                            accepted="a folder whose parent exists")
    contents = explorer_files(ex)
    old = target.with_name(f".{target.name}.old")
    if target.is_dir():
        shutil.rmtree(old, ignore_errors=True)
        target.rename(old)  # new_folder needs the target gone or empty; the old one comes back on failure
    try:
        with new_folder(target) as tmp:
            for name, data in contents.items():
                (tmp / name).parent.mkdir(parents=True, exist_ok=True)
                (tmp / name).write_bytes(data)
    except BaseException:
        if old.exists() and not target.exists():
            old.rename(target)
        raise
    shutil.rmtree(old, ignore_errors=True)
    return [target / name for name in contents]
