"""The report's Listen section: the timeline's outputs as the audience hears them (MP3
excerpts played by audio elements), checked against the replay and `simulplay render`."""

from urllib.parse import quote

import numpy as np
import pandas as pd
import pytest
import soundfile as sf

from simulplay.manifest import validate_manifest
from simulplay.report import build_report, write_report
from simulplay.workflows.render import render_outputs
from tests.support.report_runs import make_run

# each test builds a report or two (figures rendered, about 5-15 s on 2 cores)
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def audio_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("listen")
    return make_run(root / "run", 4, store=root / "store"), root / "store"


@pytest.fixture(scope="module")
def listened(audio_run, tmp_path_factory):
    run, _ = audio_run
    rep = build_report(run)
    out = tmp_path_factory.mktemp("rep") / "report"
    write_report(rep, out)
    return rep, out


def test_listen_clips_are_the_rendered_outputs_of_the_timeline(audio_run, listened, tmp_path):
    run, store = audio_run
    rep, out = listened
    summary = pd.read_parquet(run / "summary.parquet")
    table = pd.read_csv(out / "tables" / "listen.csv")
    assert [tuple(r) for r in table[["system", "condition"]].to_numpy()] == [
        ("A", "immediate"), ("A", "timer:w=4"), ("F", "immediate"), ("F", "timer:w=4")]  # Figure 3's rows
    assert sorted(p.name for p in (out / "audio").iterdir()) == sorted(f.split("/")[1] for f in table["file"])
    mine = summary[(summary["talk_id"] == rep.talk) & summary["condition"].isin(["immediate", "timer:w=4"])]
    assert (mine["end_s"] > 30).all()  # so every clip is the first 30 s (the default --listen-s)
    man = validate_manifest(pd.read_parquet(run / "manifest.parquet"), "m")
    rendered = render_outputs(man, _loader(store), tmp_path / "render", talks=[rep.talk],
                              conditions=["immediate", "timer:w=4"])
    for row in table.to_dict("records"):
        s = mine[(mine["system"] == row["system"]) & (mine["condition"] == row["condition"])].iloc[0]
        assert abs(row["first_play_s"] - s["first_play_s"]) <= 1 / 16000 and abs(row["end_s"] - s["end_s"]) <= 1 / 16000
        clip, rate = sf.read(out / row["file"], dtype="float64")
        assert (rate, len(clip), row["clip_s"], row["sample_rate"]) == (16000, 480_000, 30.0, 16000)
        r = rendered.table[(rendered.table["system"] == row["system"])
                           & (rendered.table["condition"] == row["condition"])].iloc[0]
        full, _ = sf.read(tmp_path / "render" / r["file"], dtype="float64")
        assert np.corrcoef(clip, full[:480_000])[0, 1] > 0.95  # the same audio, through a lossy codec
        assert abs(row["audio_in_clip_s"] - np.count_nonzero(full[:480_000]) / rate) < 0.01
        assert "table:listen" in row["signature"] and "excerpt:0-30s" in row["signature"]
        assert "format:mp3-vbr-0.9" in row["signature"] and f"rule:{row['condition']}" in row["signature"]


def _loader(store):
    from simulplay.store.store import AudioStore

    return AudioStore(store).load_audio


def test_html_and_markdown_play_the_clips_by_relative_path(listened):
    rep, out = listened
    html = (out / "report.html").read_text()
    md = (out / "report.md").read_text()
    for clip in rep.audio.clips:
        url = quote(clip.file)  # a file name such as A__timer%3Aw%3D4.mp3 is %25-escaped in a URL
        assert f'<audio controls preload="metadata" src="{url}"' in html and f"]({url})" in md
    assert html.index('id="figure03_timeline"') < html.index('id="listen"') < html.index('id="table11_traces"')
    assert "Listen: left out" not in md


def test_without_a_store_the_section_is_left_out_with_a_note(audio_run, listened, tmp_path):
    run, store = audio_run
    tables = tmp_path / "tables"
    tables.mkdir()
    for name in ("manifest.parquet", "summary.parquet", "eta.parquet"):
        (tables / name).write_bytes((run / name).read_bytes())
    stepwise = build_report(tables)
    assert stepwise.audio is None and any("Listen: left out, no --store was given" in n for n in stepwise.run.notes)
    assert len(build_report(tables, store=store).audio.clips) == 4
    assert build_report(run, listen_s=0).audio is None
    plain = make_run(tmp_path / "plain", 3)  # no stored audio
    rep = build_report(plain)
    assert rep.audio is None and any("the manifest has no stored audio" in n for n in rep.run.notes)
    _, out = listened  # a report rebuilt without audio leaves no stale clips behind
    write_report(rep, out)
    assert not (out / "audio").exists() and not (out / "tables" / "listen.csv").exists()


def test_a_store_missing_the_audio_is_refused(audio_run, tmp_path):
    from simulplay.core.errors import InputError

    run, _ = audio_run
    (tmp_path / "empty" / "audio").mkdir(parents=True)
    with pytest.raises(InputError, match="is missing; run the same"):
        build_report(run, store=tmp_path / "empty")
    with pytest.raises(InputError, match="--listen-s"):
        build_report(run, listen_s=float("inf"))
