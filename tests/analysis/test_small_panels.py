"""Small panels are flagged: with fewer than 10 talks every η and
contrast table carries a note — printed, under Markdown, in Parquet metadata and in the
report — that its interval is close to the per-talk range, with the direction counts first.

The summaries are built so that each talk's η is a chosen number: δ(immediate) = 0 and
δ(timer:w=4) = η (A's audio 100 + η s, F's 100 s, no idle), so the counts and ranges
below are read off the chosen values by hand."""

import json

import pandas as pd
import pyarrow.parquet as pq
import pytest

from simulplay.analysis import Bootstrap, compute_eta
from simulplay.analysis.small_panels import SMALL_PANEL_TALKS, small_panel_notes
from simulplay.report import build_report
from simulplay.report.formats import markdown
from tests.support.report_runs import make_run


def summary_with_eta(etas, punct=None):
    rows = []
    for t, eta in enumerate(etas):
        conds = {"immediate": 0.0, "timer:w=4": eta, **({"punct": punct[t]} if punct else {})}
        for cond, gap in conds.items():
            for system, audio in (("A", 100.0 + gap), ("F", 100.0)):
                rows.append({"talk_id": f"t{t}", "system": system, "condition": cond, "audio_s": audio,
                             "idle_s": 0.0, "offset_s": audio - 100.0, "source_s": 100.0})
    return pd.DataFrame(rows)


def test_three_talks_get_the_note_with_counts_and_ranges():
    df = summary_with_eta([-2.0, 1.0, 3.0], punct=[1.0, 1.5, -0.5])
    res = compute_eta(df, a="A", f="F", reference="immediate", boot=Bootstrap(draws=200, seed=1),
                      contrasts=[("punct", "timer:w=4")])
    assert len(res.notes) == 1
    note = res.notes[0]
    assert note.startswith("small panel: 3 talks, fewer than 10, so the bootstrap interval is close to the range")
    # timer:w=4: η = −2, 1, 3 → 1 negative, 2 positive, per-talk −2 to 3
    assert "timer:w=4 η<0 in 1/3, η>0 in 2/3" in note and "per-talk -2.000 to 3.000 s" in note
    # punct: η = 1, 1.5, −0.5 → 1 negative, 2 positive, per-talk −0.5 to 1.5
    assert "punct:cap=2,min_words=3 η<0 in 1/3, η>0 in 2/3" in note and "per-talk -0.500 to 1.500 s" in note
    row = res.table.set_index("condition").loc["timer:w=4"]
    assert f"interval {row['ci_low_s']:.3f} to {row['ci_high_s']:.3f} s" in note
    # contrast punct − timer:w=4 per talk: 1 − (−2) = 3, 1.5 − 1 = 0.5, −0.5 − 3 = −3.5 → 1 negative, 2 positive
    assert res.contrast_notes and "punct:cap=2,min_words=3 − timer:w=4 diff<0 in 1/3, diff>0 in 2/3" in \
        res.contrast_notes[0]


def test_ten_talks_get_no_note():
    etas = [float(k) - 4.5 for k in range(SMALL_PANEL_TALKS)]
    res = compute_eta(summary_with_eta(etas), a="A", f="F", reference="immediate", boot=Bootstrap(draws=50))
    assert res.notes == [] and res.contrast_notes == []
    nine = compute_eta(summary_with_eta(etas[:9]), a="A", f="F", reference="immediate", boot=Bootstrap(draws=50))
    assert "9 talks" in nine.notes[0]


def test_one_note_per_small_panel_named_by_its_keys():
    one = summary_with_eta([-1.0, 2.0])
    both = pd.concat([one.assign(realization="0"), one.assign(realization="1")], ignore_index=True)
    res = compute_eta(both, a="A", f="F", reference="immediate", boot=Bootstrap(draws=50))
    assert [n.split(":")[0] for n in res.notes] == ["small panel (realization 0)", "small panel (realization 1)"]
    brief = small_panel_notes(res.table, brief=True)
    assert all(n.endswith("read the direction counts (n_negative / n_zero / n_positive of n_talks) first")
               for n in brief)


@pytest.mark.slow


def test_eta_cli_prints_the_note_and_writes_it_under_markdown_and_into_parquet(tmp_path, cli):
    summary_with_eta([-2.0, 1.0, 3.0]).to_csv(tmp_path / "s.csv", index=False)
    args = ["eta", tmp_path / "s.csv", "--a", "A", "--f", "F", "--reference", "immediate", "--draws", "100"]
    md = cli(*args, "--out", tmp_path / "e.md", check=True)
    assert "note: small panel: 3 talks, fewer than 10" in " ".join(md.stdout.split())
    text = (tmp_path / "e.md").read_text()
    assert "Note: small panel: 3 talks" in text and text.index("Note:") < text.index("Signature:")
    cli(*args, "--out", tmp_path / "e.parquet", check=True)
    meta = json.loads(pq.read_schema(tmp_path / "e.parquet").metadata[b"simulplay"])
    assert meta["notes"][0].startswith("small panel: 3 talks")


@pytest.fixture(scope="module")
def report3(tmp_path_factory):
    return build_report(make_run(tmp_path_factory.mktemp("run3"), 3, draws=50))


@pytest.mark.slow


def test_report_flags_a_small_panel_under_every_eta_table_and_up_front(report3):
    t2 = report3.table("table02_eta")
    assert t2.notes and t2.notes[0].startswith("small panel: 3 talks")
    cols = list(t2.frame.columns)
    assert cols.index("n_negative") == cols.index("eta_s") + 1 < cols.index("ci_low_s")  # counts before interval
    for key in ("table08_rules", "table09_contrasts"):
        assert report3.table(key).notes and "3 talks, fewer than 10" in report3.table(key).notes[0]
    assert "**Note:** small panel: 3 talks" in markdown(t2)
    assert any(n.startswith("Small panel: 3 talk(s), fewer than 10") for n in report3.run.notes)


@pytest.mark.slow


def test_report_of_thirty_talks_has_no_small_panel_note(tmp_path):
    report = build_report(make_run(tmp_path / "run30", 30, draws=20))
    t2 = report.table("table02_eta")
    assert t2.notes == [] and list(t2.frame.columns).index("n_negative") > list(t2.frame.columns).index("ci_high_s")
    assert not any("Small panel" in n for n in report.run.notes)
