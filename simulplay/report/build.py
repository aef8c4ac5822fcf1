"""``simulplay report``: a run folder, or the tables of step-by-step work → report.md,
report.html, tables/ (CSV + LaTeX) and figures/ (PNG + SVG). Everything is computed in memory first; the files are then
written into a temporary folder beside the target and moved into place, so a failed
report leaves nothing half-written."""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

import pandas as pd

from simulplay.analysis.small_panels import report_note, tie_count
from simulplay.core.errors import FileFault, InputError
from simulplay.core.version import __version__
from simulplay.grouping import canonical_condition
from simulplay.report import formats, html
from simulplay.report.figures import all_figures, default_condition, default_talk
from simulplay.report.listen import LISTEN_S, listen_section
from simulplay.report.live import live_figures
from simulplay.report.measured import measured_sentence
from simulplay.report.model import ReportAudio, ReportFigure, ReportTable
from simulplay.report.order import condition_order
from simulplay.report.queue import replay_parts, silent_reading
from simulplay.report.read_run import RunData, load_run, load_tables
from simulplay.report.sweep_figures import sweep_report_figures
from simulplay.report.tables import all_tables, eta_table

#: Report order by key prefix; tables and figures not listed follow in their own order.
#: The report opens with its result (Table 2, η), then the run and its inputs.
ORDER = ("table02", "table00", "inputs", "table01", "table01b", "table01c", "realizations", "fitclock", "figure01",
         "table04", "table07", "table08", "table08b", "table08c", "table09", "table10", "figure02", "figure03",
         "listen", "table19", "table11", "table12", "figure04", "table16", "table13", "table17")
OUTPUTS = ("report.md", "report.html", "tables", "figures", "audio")


@dataclass
class Report:
    """A computed report, nothing written yet: the run's inputs, its tables and figures,
    the grouped condition of Figures 2–3 and the talk of Figure 3."""

    run: RunData
    tables: list[ReportTable]
    figures: list[ReportFigure]
    condition: str  # grouped condition of Figures 2–3
    talk: str  # talk of Figure 3
    audio: ReportAudio | None = None  # the Listen section (talk of Figure 3), when the store is there

    def items(self) -> list[ReportTable | ReportFigure | ReportAudio]:
        """Tables, figures and the Listen section in report order (:data:`ORDER` by key
        prefix, others after)."""
        items = self.tables + self.figures + ([self.audio] if self.audio else [])
        rank = {p: i for i, p in enumerate(ORDER)}
        return sorted(items, key=lambda x: rank.get(x.key.split("_")[0], len(ORDER)))

    def table(self, key: str) -> ReportTable:
        """The table whose key is ``key`` (``StopIteration`` if there is none)."""
        return next(t for t in self.tables if t.key == key)


def load_inputs(inputs: str | Path | Sequence[str | Path], traces: Sequence[str | Path] = ()) -> RunData:
    """A run folder (it has ``run.json``) or step-by-step tables: files and folders of files."""
    paths = [Path(inputs)] if isinstance(inputs, (str, Path)) else [Path(p) for p in inputs]
    if not paths:
        raise InputError.at("report", "no input given", accepted="a run folder, or tables and folders of tables")
    for p in paths:
        if not p.exists():
            raise InputError.at(p, "no such file or folder", accepted="a run folder, a folder of tables or a table")
    runs = [p for p in paths if p.is_dir() and (p / "run.json").exists()]
    if runs and len(paths) > 1:
        raise InputError.at(runs[0], "is a run folder (it has run.json); a run folder is reported on its own",
                            accepted="one run folder, or tables and folders of tables without run.json")
    if runs:
        return load_run(runs[0], traces=[Path(t) for t in traces])
    return load_tables(paths, [Path(t) for t in traces])


def build_report(inputs: str | Path | Sequence[str | Path], *, condition: str | None = None,
                 talk: str | None = None, traces: Sequence[str | Path] = (), store: str | Path | None = None,
                 listen_s: float = LISTEN_S, run: RunData | None = None, talks: Sequence[str] = ()) -> Report:
    """Read a run folder, or tables and folders of tables (step-by-step work), and compute
    every table and figure (nothing is written). ``traces`` replace the trace files the
    inputs name (Table 11); ``store`` is the audio store of the Listen section (a run
    folder's own by default), which holds the first ``listen_s`` seconds (0: none).
    ``run``: the inputs already read by :func:`load_inputs` (then ``inputs`` and
    ``traces`` are not read again). ``talks``: only these talks (:mod:`simulplay.report.talks`)."""
    from simulplay.report.talks import pick_run_talks

    run = pick_run_talks(run if run is not None else load_inputs(inputs, traces), talks)
    run.notes += report_note(run.summary.frame["talk_id"].nunique())
    ref = canonical_condition(run.reference)
    others = [c for c in condition_order(run) if c != ref]
    if not others:
        source = run.eta.path if run.stepwise else run.folder / "run.json"
        raise InputError.at(source, "has no condition besides the reference", field="experiment.rules",
                            field_label="key", accepted="at least two rules")
    cond = canonical_condition(condition) if condition else default_condition(run)
    if cond not in others:
        raise InputError.at(f"--condition '{condition}'", "is not a grouped condition of the run",
                            accepted=", ".join(others))
    parts = run.parts if run.parts is not None else replay_parts(
        run.manifest.frame, run.summary.frame, allow_incomplete=run.stepwise or bool(run.excluded_outputs),
        source=str(run.manifest.path), summary_name=run.summary.path.name,
        silent_parts=silent_reading(run.summary.signatures))
    talks = sorted(run.summary.frame["talk_id"].unique())
    chosen = talk or default_talk(run, cond)
    if chosen not in talks:
        raise InputError.at(f"--talk '{talk}'", "is not a talk of the run", accepted=", ".join(talks[:20]))
    audio = listen_section(run, parts, cond, chosen, store, listen_s)
    figures = all_figures(run, parts, cond, chosen) + sweep_report_figures(run) + live_figures(run)
    return Report(run, all_tables(run), figures, cond, chosen, audio)


def reading(report: Report) -> str:
    """The report's result in one sentence (:func:`result_sentence` of its Table 2)."""
    eta = next((t.frame for t in report.tables if t.key == "table02_eta"), None)
    return result_sentence(report.run, eta)


def result_sentence(run: RunData, eta: pd.DataFrame | None = None) -> str:
    """The result in one sentence, read off Table 2 (``eta``, default the run's own, in report
    order; seconds): η of every condition of the first panel with its direction counts, and
    which way a positive η moves the gap; "" without an η table."""
    if eta is None:
        eta = eta_table(run).frame if run.eta is not None else None
    if eta is None or eta.empty:
        return ""
    panel = [c for c in ("backend", "realization", "threshold") if c in eta]
    first = eta.loc[(eta[panel] == eta[panel].iloc[0]).all(axis=1)] if panel else eta
    where = (" (" + ", ".join(f"{c} {first[c].iloc[0]}" for c in panel) + "; Table 2 has every panel)"
             if panel and len(first) < len(eta) else "")
    parts = [f"{r.eta_s:+.3f} s under {r.condition} (η > 0 in {int(r.n_positive)} of {int(r.n_talks)} talks, "
             f"η < 0 in {int(r.n_negative)}" + (f", η = 0 in {tie_count(r)}" if tie_count(r) else "") + ")"
             for r in first.itertuples()]
    return (f"Result: against {canonical_condition(run.reference)}, the completion gap δ = L({run.a}) − L({run.f}) "
            f"changes by η = {'; '.join(parts)}{where}. A positive η moves the gap toward {run.f} ({run.a}'s lead "
            f"shrinks or {run.f}'s grows), a negative one toward {run.a}; with few talks, read the direction counts "
            f"before the interval.")


def _intro(report: Report) -> str:
    run = report.run
    where = (f"Step-by-step tables from {run.folder} (listed under Inputs)" if run.stepwise
             else f"Run folder {run.folder.name}")
    return (f"{where}: translators A = {run.a} and F = {run.f}, reference condition "
            f"{canonical_condition(run.reference)}, {run.summary.frame['talk_id'].nunique()} talk(s). Times are "
            f"seconds from source start; δ = L(A) − L(F) is negative when A finishes earlier and η(w) = δ(w) − δ(0). "
            f"Figures 2–3 show condition {report.condition}; Figure 3 shows talk {report.talk}. Every table and "
            f"figure carries its signature; tables/ holds each table as CSV (full precision, one signature per row) "
            f"and LaTeX (booktabs). Made by simulplay {__version__} at {made_at()}. {measured_sentence(run)}")


@functools.cache
def made_at() -> str:
    """When this process made the report (UTC, to the minute): a report regenerated from a run
    says so, its numbers keep the time and machine of their measurement."""
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")


#: Where the explorer lies seen from the report folder, when ``simulplay explore`` wrote it beside.
EXPLORER = "../explore/index.html"
EXPLORER_TEXT = "every talk, system, condition and replay variant, with its timeline and audio"


def explorer_link(out: str | Path) -> str | None:
    """:data:`EXPLORER` when an explorer lies beside the report folder ``out``."""
    return EXPLORER if (Path(out).parent / "explore" / "index.html").is_file() else None


def markdown_report(report: Report, explorer: str | None = None) -> str:
    """The report as Markdown (``report.md``): intro, the explorer's link (``explorer``,
    relative to the report folder), notes, then every item in report order."""
    title = f"simulplay report: {report.run.name}"
    result = reading(report)
    out = [f"# {title}", ""] + ([f"**{result}**", ""] if result else []) + [_intro(report), ""]
    if explorer:
        out += [f"Explore the run interactively: [{explorer}]({quote(explorer)}): {EXPLORER_TEXT}.", ""]
    if report.run.notes:
        out += ["## Notes", ""] + [f"* {n}" for n in report.run.notes] + [""]
    for item in report.items():
        if isinstance(item, ReportTable):
            out.append(formats.markdown(item))
        elif isinstance(item, ReportAudio):
            out += [f"### {formats.heading(item)}", "", item.caption, ""]
            out += [f"* [{c.label}]({quote(c.file)}) ({c.duration_s:.3f} s)" for c in item.clips] + [""]
            out.append(formats.markdown(item.table).split("\n", 2)[2])
        else:
            out += [f"### {formats.heading(item)}", "", f"![{formats.heading(item)}](figures/{item.key}.png)", "",
                    item.caption + f" (SVG: [figures/{item.key}.svg](figures/{item.key}.svg))", ""]
            out += [f"Signature: `{s}`  " for s in item.lines] + [""]
    return "\n".join(out)


def html_report(report: Report, explorer: str | None = None) -> str:
    """The report as one self-contained HTML page (``report.html``), linking to the
    explorer at ``explorer`` (relative to the report folder) when given."""
    title = f"simulplay report: {report.run.name}"
    link = (explorer, f"Explore the run interactively: {EXPLORER_TEXT}.") if explorer else None
    return html.page(title, _intro(report), report.items(), report.run.notes, link, result=reading(report))


def write_report(report: Report, out: str | Path) -> list[Path]:
    """Write every file of the report under ``out`` (created; its report files replaced)."""
    target = Path(out)
    if target.exists() and not target.is_dir():
        raise InputError.at(target, "is a file", field="--out", accepted="a folder (created if missing)")
    if not target.parent.is_dir():
        raise InputError.at(target, f"folder {target.parent} does not exist", field="--out",
                            accepted="a folder whose parent exists")
    link = explorer_link(target)
    files: dict[str, bytes] = {"report.md": markdown_report(report, link).encode(),
                               "report.html": html_report(report, link).encode()}
    for t in report.tables:
        files[f"tables/{t.key}.csv"] = formats.csv_text(t).encode()
        files[f"tables/{t.key}.tex"] = formats.latex(t).encode()
    if report.audio is not None:
        files[f"tables/{report.audio.table.key}.csv"] = formats.csv_text(report.audio.table).encode()
        files |= {c.file: c.data for c in report.audio.clips}
    for f in report.figures:
        files[f"figures/{f.key}.png"] = f.png
        files[f"figures/{f.key}.svg"] = f.svg
        if f.data is not None:
            files[f"tables/{f.data.key}.csv"] = formats.csv_text(f.data).encode()
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
        try:
            tmp.chmod(0o755)
            for name, data in files.items():
                (tmp / name).parent.mkdir(exist_ok=True)
                (tmp / name).write_bytes(data)
            _move_into(tmp, target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    except OSError as e:  # a full disk, a folder made read-only meanwhile: the temporary folder is removed
        raise FileFault(target, "cannot write the report", e) from e
    return [target / name for name in files]


def _move_into(tmp: Path, target: Path) -> None:
    if not target.exists():
        os.replace(tmp, target)
        return
    for name in OUTPUTS:
        old, new = target / name, tmp / name
        if old.is_dir():
            shutil.rmtree(old)
        elif old.exists():
            old.unlink()
        if new.exists():  # a report without audio has no audio/ folder
            os.replace(new, old)
