"""The committed reports/demo is not stale: its sections (the headings of report.md, in
order) are those a fresh `simulplay demo` writes with today's code.

A fresh demo takes minutes (Piper synthesis, Silero VAD on every request's audio, some
thirty figures drawn). What decides a report's sections is the demo's design (its rules,
contrasts, replay variants, edge thresholds, sweep grids, store) and the report builder,
not the audio's samples, the speech probabilities or the pixels. So the demo's own
experiment (`demo_experiment`) runs through the real pipeline (`run_experiment`: replays,
η, variants, edges, sweep with its confirmed point, explorer, report) with three stand-ins:
the fake backend synthesizes (a tone per request), each waveform's speech probability is
0.9 but for two silent frames at each edge, and figures are drawn as empty files. Headings
that name a talk are compared without the talk's name (the talk with the largest |η|
depends on the audio's durations). When this fails after an intended change to the report,
regenerate reports/demo from a real `make demo` run."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "reports" / "demo" / "report.md"


def sections(markdown: str) -> list[str]:
    """The report's headings in order, a talk's name replaced by ``TALK``."""
    heads = re.findall(r"^#{1,4} (.+)$", markdown, re.M)
    return [re.sub(r"\btalk \S+$", "talk TALK", h) for h in heads]


def test_the_section_reader_drops_talk_names():
    md = "# r\n\n## Notes\n\ntext\n\n### Figure 3. Playback timeline of talk a-b\n\n### Listen: talk x\n"
    assert sections(md) == ["r", "Notes", "Figure 3. Playback timeline of talk TALK", "Listen: talk TALK"]


@pytest.mark.slow  # the demo's pipeline without synthesis, VAD or drawing: 17 s alone, 55 s on 2 loaded cores
def test_the_committed_demo_report_has_the_sections_of_a_fresh_demo(tmp_path, monkeypatch):
    from simulplay.report import figures, sweep_figures
    from simulplay.vad.frames import frame_count
    from simulplay.workflows import edges
    from simulplay.workflows.experiment import demo_experiment
    from simulplay.workflows.pipeline import run_experiment
    from tests.support.fakes import FakeSettings

    def speech_in_the_middle(store, model, cache, key, n, rate, request):
        probs = np.full(frame_count(n, rate), 0.9, dtype=np.float32)
        probs[:2] = probs[-2:] = 0.0
        cache.put(key, probs)
        return probs, 0.0

    def empty_figure(fig, lines):
        return b"", b"<svg xmlns='http://www.w3.org/2000/svg'/>"

    monkeypatch.setattr(edges, "_infer", speech_in_the_middle)
    monkeypatch.setattr(figures, "render", empty_figure)
    monkeypatch.setattr(sweep_figures, "render", empty_figure)
    exp = demo_experiment(tmp_path / "demo")
    fake = FakeSettings()
    exp = dataclasses.replace(exp, backends=(fake,), spelled=((fake, "fake-test"), *exp.spelled[1:]))
    run_experiment(exp)
    fresh = sections((tmp_path / "demo" / "report" / "report.md").read_text(encoding="utf-8"))
    committed = sections(COMMITTED.read_text(encoding="utf-8"))
    assert any(h.startswith("Figure 5.") for h in fresh), "the fresh demo has no sweep figures: the stand-ins broke"
    assert committed == fresh, ("reports/demo is stale: regenerate it from a fresh `make demo` run\n"
                                f"committed: {committed}\nfresh:     {fresh}")
