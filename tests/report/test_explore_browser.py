"""The explorer in real headless Chromium (Debian's `chromium`, driven by playwright, never
`playwright install`): it opens from file:// with no console error and no request leaving
its folder, a grid cell opens its talk, the lanes hold the replay's parts (`simulplay
replay --parts`, run here), a variant switch redraws them, each lane plays its listener
audio — the same samples `simulplay render`'s rule gives — under a playhead on the source
clock, markup from data is shown and never run, and damaged or absent audio is named; a
run with a sweep shows its modelled curves with the measured points on top (the values of
sweep/sweep.parquet), a hover names a point's rule and values, and a run without one shows
no sweep view."""

from __future__ import annotations

import base64
import shutil
import struct
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from playwright.sync_api import sync_playwright

from simulplay.core.tables import read_table
from simulplay.manifest import read_manifest
from simulplay.report.explore import build_explorer, write_explorer
from simulplay.sim import replay
from simulplay.sim.listener_audio import render_output
from simulplay.sim.part_audio import PartAudio, part_samples
from simulplay.store.store import AudioStore
from tests.support.report_runs import make_run
from tests.support.sweep_runs import swept_run

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]
SCRIPT_ID = "<script>window.__pwned=1</script>"
TEXT = '<img src=x onerror="window.__pwned=2">hello'
FRAME_S = 1 / 60

pytestmark = pytest.mark.slow  # one headless Chromium for the module (about a minute in all)


class Browser:
    """One Chromium for the module; :meth:`open` loads a page and records what it did."""

    def __init__(self, profile: Path):
        self._pw = sync_playwright().start()
        self.ctx = self._pw.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, headless=True, args=FLAGS, offline=True,
            viewport={"width": 1280, "height": 900}, device_scale_factor=1)
        self.ctx.route("**/*", self._intercept)
        self.seen: dict[str, list] = {}

    def _intercept(self, route):  # nothing may leave the folder: anything else is recorded and aborted
        if route.request.url.startswith(("file:", "blob:", "data:")):
            route.continue_()
        else:
            self.seen["blocked"].append(route.request.url)
            route.abort()

    def open(self, index: Path):
        self.seen = {"requests": [], "console": [], "errors": [], "blocked": [], "dialogs": []}
        page = self.ctx.new_page()
        page.on("request", lambda r: self.seen["requests"].append(r.url))
        page.on("console", lambda m: self.seen["console"].append((m.type, m.text)))
        page.on("pageerror", lambda e: self.seen["errors"].append(str(e)))
        page.on("dialog", lambda d: self.seen["dialogs"].append(d.message) or d.dismiss())
        page.goto(index.as_uri())
        page.wait_for_selector("body[data-state=ready]")
        return page

    def close(self):
        self.ctx.close()
        self._pw.stop()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    b = Browser(tmp_path_factory.mktemp("profile"))
    yield b
    b.close()


def with_text(manifest: Path, text: str) -> None:
    """Every request's text replaced (replay never reads it), the file's metadata kept."""
    t = pq.read_table(manifest)
    pq.write_table(t.set_column(t.schema.get_field_index("text"), "text", pa.array([text] * len(t))), manifest)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("explore-browser")
    folder = make_run(root / "run", 3, names=["talk00", SCRIPT_ID, "../up"], store=root / "store")
    with_text(folder / "manifest.parquet", TEXT)
    write_explorer(build_explorer(folder), folder / "explore")
    return folder


def open_talk(page, talk: str, condition: str = "timer:w=4") -> None:
    cells = page.locator(f'td.cell[data-condition="{condition}"]')
    cells.nth([c.get_attribute("data-talk") for c in cells.all()].index(talk)).click()
    page.wait_for_selector("#timeline-view[data-state=ready]")
    assert page.get_attribute("#timeline-view", "data-talk") == talk


def lanes(page) -> list[dict]:
    """Each lane's system, condition and segments (seq, ready, play, end in seconds) as drawn."""
    return page.evaluate("""() => [...document.querySelectorAll('g.lane')].map(g => ({
        system: g.dataset.system, condition: g.dataset.condition,
        segs: [...g.querySelectorAll('rect.seg')].map(r => [Number(r.dataset.seq), Number(r.dataset.ready),
                                                           Number(r.dataset.play), Number(r.dataset.end)])}))""")


def replay_parts(cli, run: Path, tmp: Path, service: str = "measured") -> pd.DataFrame:
    cli("replay", run / "manifest.parquet", "--service", service, "--out", tmp / f"s-{service}.parquet",
        "--parts", tmp / f"p-{service}.parquet", check=True)
    return read_table(tmp / f"p-{service}.parquet")[0]


def assert_lanes_equal_parts(drawn: list[dict], parts: pd.DataFrame, talk: str) -> None:
    assert len(drawn) == 4
    for lane in drawn:
        want = parts[(parts["talk_id"] == talk) & (parts["system"] == lane["system"])
                     & (parts["condition"] == lane["condition"]) & parts["play_s"].notna()]
        got = np.array(lane["segs"], dtype=float)
        assert got[:, 0].tolist() == want["seq"].tolist()
        for k, col in enumerate(("ready_s", "play_s", "end_s"), start=1):  # to the microsecond, in fact exactly
            assert np.abs(got[:, k] - want[col].to_numpy(float)).max() <= 1e-6
            assert np.array_equal(got[:, k], want[col].to_numpy(float))


def test_the_page_opens_from_disk_without_errors_or_outside_requests(browser, run):
    page = browser.open(run / "explore" / "index.html")
    folder = (run / "explore").as_uri() + "/"
    assert browser.seen["console"] == [] and browser.seen["errors"] == [] and browser.seen["blocked"] == []
    assert all(u.startswith(folder) or u.startswith("data:") for u in browser.seen["requests"]), browser.seen
    assert page.locator("table.eta tbody tr").count() == 2 and page.locator("td.cell").count() == 6
    assert page.locator(".sig code").count() >= 2  # the η table's and the grid's signatures
    page.close()


def test_a_grid_cell_opens_its_talk_whose_lanes_are_the_replays_parts(browser, run, cli, tmp_path):
    page = browser.open(run / "explore" / "index.html")
    open_talk(page, "talk00")
    drawn = lanes(page)
    assert [(x["system"], x["condition"]) for x in drawn] == [("A", "immediate"), ("A", "timer:w=4"),
                                                               ("F", "immediate"), ("F", "timer:w=4")]
    assert_lanes_equal_parts(drawn, replay_parts(cli, run, tmp_path), "talk00")
    assert page.locator("#timeline-view .sig code").count() == 4  # each lane's signature
    assert browser.seen["errors"] == [] and browser.seen["console"] == []
    page.close()


def test_switching_the_variant_redraws_the_lanes_with_its_parts(browser, run, cli, tmp_path):
    page = browser.open(run / "explore" / "index.html")
    open_talk(page, "talk00")
    before = lanes(page)
    page.select_option("#variant", label="request release, zero service")
    page.wait_for_selector('#timeline-view[data-variant="service-zero"]')
    after = lanes(page)
    assert after != before
    assert_lanes_equal_parts(after, replay_parts(cli, run, tmp_path, "zero"), "talk00")
    assert "service:zero" in page.inner_text("#timeline-view")  # the lanes' signatures follow
    page.close()


def test_a_lane_plays_its_listener_audio_under_a_playhead_on_the_source_clock(browser, run):
    page = browser.open(run / "explore" / "index.html")
    open_talk(page, "talk00")
    page.click('button.play[data-lane="0"]')
    page.wait_for_function("() => document.querySelector('audio[data-lane=\"0\"]').currentTime > 0.3", timeout=60_000)
    got = page.evaluate("""() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() => {
        const a = document.querySelector('audio[data-lane="0"]'), line = document.querySelector('line.playhead');
        const svg = document.getElementById('lanes'), d = svg.dataset;
        const x = Number(line.getAttribute('x1'));
        done({audio: a.currentTime, head: Number(line.dataset.t), paused: a.paused,
              at: Number(d.t0) + (x - Number(d.left)) / Number(d.plotWidth) * (Number(d.t1) - Number(d.t0))});
    })))""")
    assert not got["paused"]
    assert abs(got["head"] - got["audio"]) <= FRAME_S and abs(got["at"] - got["audio"]) <= FRAME_S
    page.close()


def test_the_audio_a_lane_plays_is_the_render_rules_sample_for_sample(browser, run):
    page = browser.open(run / "explore" / "index.html")
    open_talk(page, "talk00")
    page.click('button.play[data-lane="1"]')
    page.wait_for_function("() => document.querySelector('audio[data-lane=\"1\"]').currentTime > 0")
    wav = base64.b64decode(page.evaluate("""async () => {
        const a = document.querySelector('audio[data-lane="1"]');
        const bytes = new Uint8Array(await (await fetch(a.src)).arrayBuffer());
        let s = '';
        for (let i = 0; i < bytes.length; i += 8192) s += String.fromCharCode(...bytes.subarray(i, i + 8192));
        return btoa(s); }"""))
    rate, samples = struct.unpack("<I", wav[24:28])[0], np.frombuffer(wav[44:], "<i2")
    man = read_manifest(run / "manifest.parquet")[0]
    parts = replay(man).parts
    mine = parts[(parts["talk_id"] == "talk00") & (parts["system"] == "A") & (parts["condition"] == "timer:w=4")]
    store = AudioStore.open(run.parent / "store", create=False)
    want = render_output(part_samples(mine, man), PartAudio(store.load_audio))
    assert rate == want.rate and np.array_equal(samples, want.samples)
    page.close()


def test_clicking_a_part_plays_from_its_start(browser, run):
    page = browser.open(run / "explore" / "index.html")
    open_talk(page, "talk00")
    seg = page.locator('g.lane[data-lane="2"] rect.seg').nth(3)
    start = float(seg.get_attribute("data-play"))
    seg.click()
    page.wait_for_function("() => !document.querySelector('audio[data-lane=\"2\"]').paused")
    now = page.evaluate("() => document.querySelector('audio[data-lane=\"2\"]').currentTime")
    # Chromium reports currentTime rounded to the microsecond, so a read taken before playback
    # advances can sit up to 1 µs below the part's exact start (seen once: 23.744845 < 23.744845284).
    assert start - 1e-6 <= now < start + 1.0
    page.close()


def test_markup_in_a_talk_id_and_in_request_text_is_shown_never_run(browser, run):
    page = browser.open(run / "explore" / "index.html")
    assert SCRIPT_ID in page.locator("table.grid th[scope=row]").all_inner_texts()
    open_talk(page, SCRIPT_ID)
    assert SCRIPT_ID in page.inner_text("#timeline-view h2")
    page.locator('g.lane[data-lane="0"] rect.seg').first.hover()
    assert TEXT in page.inner_text("#tip")
    assert page.evaluate("() => window.__pwned") is None and page.locator("img").count() == 0
    assert browser.seen["dialogs"] == [] and browser.seen["errors"] == []
    open_talk(page, "../up")  # a talk id with ../ has its own file inside the folder
    assert lanes(page)[0]["segs"]
    page.close()


def test_a_damaged_stored_file_silences_its_lane_only(browser, run, tmp_path):
    shutil.copytree(run, tmp_path / "run", ignore=shutil.ignore_patterns("explore"))
    shutil.copytree(run.parent / "store", tmp_path / "store")
    man = read_table(tmp_path / "run" / "manifest.parquet")[0]
    first = man[(man["talk_id"] == "talk00") & (man["system"] == "A") & (man["condition"] == "immediate")]
    flac = AudioStore(tmp_path / "store").audio_path(first["audio_key"].iloc[0])
    flac.write_bytes(flac.read_bytes()[: len(flac.read_bytes()) // 2])  # truncated
    write_explorer(build_explorer(tmp_path / "run", store=tmp_path / "store"), tmp_path / "x")
    page = browser.open(tmp_path / "x" / "index.html")
    open_talk(page, "talk00")
    page.click('button.play[data-lane="0"]')
    page.wait_for_function("() => document.querySelector('.lane-row[data-lane=\"0\"] .status').textContent")
    assert "Audio damaged" in page.inner_text('.lane-row[data-lane="0"] .status')
    page.click('button.play[data-lane="2"]')  # F under the reference does not need that file
    page.wait_for_function("() => document.querySelector('audio[data-lane=\"2\"]').currentTime > 0.1", timeout=60_000)
    assert page.inner_text('.lane-row[data-lane="2"] .status') == ""
    page.close()


def test_without_the_store_the_page_says_the_audio_is_absent(browser, run, tmp_path):
    shutil.copytree(run, tmp_path / "run", ignore=shutil.ignore_patterns("explore"))
    record = (tmp_path / "run" / "run.json")
    record.write_text(record.read_text().replace(str(run.parent / "store"), str(tmp_path / "gone")))
    write_explorer(build_explorer(tmp_path / "run"), tmp_path / "x")
    page = browser.open(tmp_path / "x" / "index.html")
    assert "Audio is absent: the run's audio store" in page.inner_text("#run-notes")
    open_talk(page, "talk00")
    assert page.locator("button.play[disabled]").count() == 4
    assert browser.seen["errors"] == []
    page.close()



# ---- the sweep view ----------------------------------------------------------------------

#: The keys besides the axis that vary in each family of the fixture's sweep (by hand).
OTHER_KEYS = {"timer:w=1..4": [], "punct:cap=1..3,min_words=2,3": ["min_words"]}


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """A run of 2 panels swept over OTHER_KEYS' families, timer:w=1 confirmed (no synthesis)."""
    folder = swept_run(tmp_path_factory.mktemp("explore-sweep") / "run")
    write_explorer(build_explorer(folder), folder / "explore")
    return folder


def sweep_chart(page, family: str, chart: str) -> dict:
    """What one chart drew: its curves, the modelled points and the measured markers (each
    with its line, table row, rule, value and class) and its text."""
    return page.evaluate("""([family, chart]) => {
        const svg = [...document.querySelectorAll('svg.sweep-chart')]
            .find(s => s.dataset.family === family && s.dataset.chart === chart);
        const marks = sel => [...svg.querySelectorAll(sel)].map(e => ({line: Number(e.dataset.line),
            row: Number(e.dataset.row), rule: e.dataset.rule, value: Number(e.dataset.value),
            cls: e.getAttribute('class')}));
        return {curves: [...svg.querySelectorAll('path.curve')].map(c => ({line: Number(c.dataset.line),
                    cls: c.getAttribute('class'), d: c.getAttribute('d')})),
                points: marks('.point'), measured: marks('.measured'),
                text: [...svg.querySelectorAll('text')].map(t => t.textContent)};
    }""", [family, chart])


def test_the_sweep_view_draws_each_familys_modelled_lines_and_measured_points(browser, swept):
    page = browser.open(swept / "explore" / "index.html")
    assert page.get_attribute("#sweep-view", "data-state") == "ready" and page.locator("#to-sweep").count() == 1
    table = pd.read_parquet(swept / "sweep" / "sweep.parquet")
    assert page.locator(".sweep-family").evaluate_all("els => els.map(e => e.dataset.family)") == list(OTHER_KEYS)
    for family, other in OTHER_KEYS.items():
        rows = table[table["family"] == family]
        lines = [g.index.tolist() for _, g in rows.groupby(["backend", "realization", *other], sort=False)]
        measured = rows[rows["measured"]]
        for chart, series in (("eta", {"eta": "eta_s"}), ("L", {"a": "L_a_s", "f": "L_f_s"})):
            drawn = sweep_chart(page, family, chart)
            assert len(drawn["curves"]) == len(lines) * len(series)  # one curve per line (and per system for L)
            assert all(c["d"].count("L") == len(lines[c["line"]]) - 1 for c in drawn["curves"])
            assert any("modelled" in t for t in drawn["text"])  # the y axis says what is modelled
            for tag, column in series.items():
                points = [p for p in drawn["points"] if f"point-{tag}" in p["cls"].split()]
                assert [sorted(p["row"] for p in points if p["line"] == i) for i in range(len(lines))] == \
                    [sorted(line) for line in lines]  # as many points as grid points, on every line
                assert all(p["value"] == table.at[p["row"], f"modelled_{column}"]
                           and p["rule"] == table.at[p["row"], "rule"] for p in points)
                marks = [m for m in drawn["measured"] if f"measured-{tag}" in m["cls"].split()]
                assert sorted(m["row"] for m in marks) == measured.index.tolist()
                assert all(m["value"] == table.at[m["row"], f"measured_{column}"] for m in marks)
                assert all(("confirmed" in m["cls"].split()) == table.at[m["row"], "confirmed"] for m in marks)
    assert sum("confirmed" in m["cls"].split() for m in sweep_chart(page, "timer:w=1..4", "eta")["measured"]) == 2
    assert browser.seen["errors"] == [] and browser.seen["console"] == []
    page.close()


def hover_tip(page, selector: str) -> str:
    marker = page.locator(selector)
    marker.evaluate("e => e.scrollIntoView({block: 'center'})")  # clear of the sticky controls
    marker.hover()
    page.wait_for_selector("#tip:not([hidden])")
    return page.inner_text("#tip")


def test_hovering_a_point_shows_its_rule_its_values_in_seconds_and_whether_it_was_measured(browser, swept):
    page = browser.open(swept / "explore" / "index.html")
    table = pd.read_parquet(swept / "sweep" / "sweep.parquet")
    r = table.index[table["confirmed"]].max()  # the last panel's, drawn on top
    tip = hover_tip(page, f'svg[data-chart="eta"] .measured[data-row="{r}"]')
    assert f"rule {table.at[r, 'rule']} " in tip and "realization 1" in tip
    assert f"measured η = {table.at[r, 'measured_eta_s']:.3f} s" in tip
    assert f"modelled η = {table.at[r, 'modelled_eta_s']:.3f} s" in tip
    assert "measured: yes, confirmed by synthesis" in tip
    r = table.index[table["rule"] == "timer:w=3"].max()
    tip = hover_tip(page, f'svg[data-chart="L"] .point-a[data-row="{r}"]')
    assert "rule timer:w=3 " in tip and f"modelled L(A) = {table.at[r, 'modelled_L_a_s']:.3f} s" in tip
    assert "measured: no (modelled only)" in tip
    page.close()


def test_a_run_without_a_sweep_shows_no_sweep_view(browser, run):
    page = browser.open(run / "explore" / "index.html")
    assert page.locator("#sweep-view").count() == 0 and page.locator("svg.sweep-chart").count() == 0
    assert page.locator("#to-sweep").count() == 0
    assert not any(u.endswith("sweep.js") and "explore-sweep" not in u for u in browser.seen["requests"])
    assert browser.seen["errors"] == [] and browser.seen["console"] == []
    page.close()


@pytest.fixture(scope="module")
def live_run(tmp_path_factory):
    """A run folder with a hand-worked live run in live/ (tests/report/test_explore_live.py)
    and a quality joins table, and its explorer."""
    from tests.report.test_explore_live import write_joins, write_live

    folder = make_run(tmp_path_factory.mktemp("explore-live-browser") / "run", 2)
    summary = read_table(folder / "summary.parquet")[0]
    write_live(folder / "live", float(summary.loc[summary["talk_id"] == "talk00", "source_s"].iloc[0]))
    write_joins(folder / "q.joins.parquet")
    write_explorer(build_explorer(folder, joins=folder / "q.joins.parquet"), folder / "explore")
    return folder


def test_a_live_lane_lies_under_its_predicted_lane_with_lateness_and_delta_l_on_hover(browser, live_run):
    page = browser.open(live_run / "explore" / "index.html")
    open_talk(page, "talk00", "timer:w=4")  # lanes: A immediate, A timer:w=4, F immediate, F timer:w=4
    drawn = lanes(page)
    assert [(x["system"], x["condition"]) for x in drawn] == [("A", "immediate"), ("A", "timer:w=4"),
                                                              ("F", "immediate"), ("F", "timer:w=4")]
    live = page.evaluate("""() => [...document.querySelectorAll('g.live-lane')].map(g => ({
        lane: Number(g.dataset.lane), system: g.dataset.system, condition: g.dataset.condition,
        release: g.dataset.release, dl: Number(g.dataset.dl),
        segs: [...g.querySelectorAll('rect.live-seg')].map(r => [Number(r.dataset.seq), Number(r.dataset.arrival),
                                                                Number(r.dataset.play), Number(r.dataset.end)]),
        stalls: [...g.querySelectorAll('rect.live-stall')].map(r => [Number(r.dataset.from),
                                                                     Number(r.dataset.to)])}))""")
    predicted = page.get_attribute('g.lane[data-system="A"][data-condition="immediate"]', "data-lane")
    assert len(live) == 1 and live[0]["lane"] == int(predicted) + 1  # right under A · immediate
    assert (live[0]["system"], live[0]["condition"], live[0]["release"]) == ("A", "immediate", "request")
    assert live[0]["segs"] == [[0, 1.0, 1.0, 1.5], [1, 1.8, 1.8, 2.2], [2, 2.205, 2.205, 2.505]]
    assert live[0]["stalls"] == [[1.5, 1.8]]  # the 0.3 s wait; the 5 ms one is no stall
    labels = page.evaluate("""() => [...document.querySelectorAll('#lanes text.live-label')].map(t =>
        [t.textContent, t.nextElementSibling.textContent])""")
    assert labels == [["live", "A · immediate"]]
    s = read_table(live_run / "summary.parquet")[0]
    row = s[(s["talk_id"] == "talk00") & (s["system"] == "A") & (s["condition"] == "immediate")].iloc[0]
    d_l = float(row["offset_s"]) - (2.505 - float(row["source_s"]))  # L predicted − L live, by hand
    assert live[0]["dl"] == pytest.approx(d_l, abs=1e-9)
    tip = hover_tip(page, 'g.live-lane rect.live-seg[data-seq="1"]')
    assert "send lateness of its request: 2.500 ms" in tip
    assert f"ΔL = predicted − live {'+' if d_l > 0 else ''}{d_l:.6f} s" in tip
    tip = hover_tip(page, "g.live-lane rect.live-stall")
    assert "live stall: 0.300000 s" in tip
    assert browser.seen["errors"] == [] and browser.seen["console"] == [] and browser.seen["blocked"] == []
    page.close()


def test_joins_are_marked_on_the_primary_replays_lane_with_their_step_on_hover(browser, live_run):
    page = browser.open(live_run / "explore" / "index.html")
    open_talk(page, "talk00", "timer:w=4")
    marks = page.evaluate("""() => [...document.querySelectorAll('g.lane path.join')].map(p => ({
        system: p.closest('g.lane').dataset.system, condition: p.closest('g.lane').dataset.condition,
        seq: Number(p.dataset.seq), at: Number(p.dataset.at), step: Number(p.dataset.step)}))""")
    assert marks == [{"system": "A", "condition": "immediate", "seq": 1, "at": 5.25, "step": 2.5},
                     {"system": "A", "condition": "immediate", "seq": 2, "at": 7.0, "step": -1.25}]
    tip = hover_tip(page, 'g.lane path.join[data-seq="1"]')
    assert "request seq 0 → seq 1" in tip and "level step +2.50 dB (before -20.00 dBFS, after -17.50 dBFS)" in tip
    tip = hover_tip(page, 'g.lane path.join[data-seq="2"]')
    assert "level step -1.25 dB" in tip
    page.select_option("#variant", index=1)  # another replay: the joins were measured on the primary one
    page.wait_for_selector("#timeline-view[data-state=ready]")
    assert page.locator("g.lane path.join").count() == 0
    assert browser.seen["errors"] == [] and browser.seen["console"] == [] and browser.seen["blocked"] == []
    page.close()
