"""The explorer's sweep view, without a browser: the data file holds every row of the run's
sweep/sweep.parquet with its values and signature, its lines are the panels and the
family's other keys in axis order, a run without a sweep gets no view, and the sweep table
is an input of explore/, so that a changed sweep makes the explorer again."""

from __future__ import annotations

import json
import math
import shutil

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from simulplay.core.errors import InputError
from simulplay.core.signature import format_signature
from simulplay.report.explore import build_explorer, explorer_files, write_explorer
from simulplay.workflows import reuse
from tests.report.test_explore import received
from tests.support.sweep_runs import SWEEP_RULES, swept_run


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    return swept_run(tmp_path_factory.mktemp("explore-sweep") / "run")


@pytest.fixture(scope="module")
def files(run_dir):
    return explorer_files(build_explorer(run_dir))


@pytest.fixture(scope="module")
def sweep(files):
    kind, _, data = received(files["data/sweep.js"])
    assert kind == "sweep"
    return data


def parquet_table(run_dir) -> tuple[pd.DataFrame, list[dict]]:
    """sweep.parquet as pandas reads it, and each row's signature from its metadata."""
    path = run_dir / "sweep" / "sweep.parquet"
    meta = json.loads(pq.read_schema(path).metadata[b"simulplay"])
    return pd.read_parquet(path), [meta["signatures"][i] for i in meta["row_signature"]]


def same(got, want) -> bool:
    if isinstance(want, float) and math.isnan(want):
        return got is None
    return got == want and type(got) is type(want.item() if hasattr(want, "item") else want)


def test_the_page_has_a_sweep_view_and_its_data_file(files):
    page = files["index.html"].decode()
    assert '<section id="sweep-view">' in page
    assert page.index('src="data/sweep.js"') < page.index('src="data/panel.js"')  # there before the panel draws
    assert "js/explore-sweep.js" in files


def test_every_row_of_sweep_parquet_reaches_the_page_with_its_values_and_signature(run_dir, sweep):
    table, sigs = parquet_table(run_dir)
    columns = [c for c in table.columns if c != "signature"]
    assert sweep["columns"] == ["panel", *columns, "sig"]
    assert len(sweep["rows"]) == len(table) == 20  # 2 panels × (4 + 6) grid points
    for row, want, sig in zip(sweep["rows"], table.to_dict("records"), sigs):
        got = dict(zip(sweep["columns"], row))
        bad = [c for c in columns if not same(got[c], want[c])]
        assert not bad, {c: (got[c], want[c]) for c in bad}
        assert sweep["panels"][got["panel"]] == {"backend": want["backend"], "realization": want["realization"]}
        assert sweep["signatures"][got["sig"]] == want["signature"] == format_signature(sig)
        assert "modelled" in sweep["signatures"][got["sig"]]
    # the fixture measured timer:w=2 and timer:w=4, and confirmed timer:w=1, in both panels
    assert table["measured"].sum() == 6 and table["confirmed"].sum() == 2


def test_each_family_draws_one_line_per_panel_and_value_of_its_other_key_in_axis_order(run_dir, sweep):
    table, _ = parquet_table(run_dir)
    assert [f["family"] for f in sweep["families"]] == list(SWEEP_RULES)
    timer, punct = sweep["families"]
    assert (timer["axis"], timer["other"], punct["axis"], punct["other"]) == ("w", [], "cap", ["min_words"])
    for fam, keys in ((timer, ["realization"]), (punct, ["realization", "min_words"])):
        rows = table[table["family"] == fam["family"]]
        want = [g.sort_values(fam["axis"], kind="stable").index.tolist() for _, g in rows.groupby(keys, sort=False)]
        assert [line["rows"] for line in fam["lines"]] == want
        assert [sweep["panels"][line["panel"]]["realization"] for line in fam["lines"]] == \
            [table.at[r[0], "realization"] for r in want]
        assert any("modelled" in s for s in fam["signature_lines"])  # the family's own signature
    assert [line["other"] for line in punct["lines"]] == [[["min_words", m]] for _ in "01" for m in (2.0, 3.0)]


def test_a_run_without_a_sweep_has_no_sweep_view(run_dir, tmp_path):
    shutil.copytree(run_dir, tmp_path / "run", ignore=shutil.ignore_patterns("sweep", "explore"))
    ex = build_explorer(tmp_path / "run")
    out = explorer_files(ex)
    assert ex.sweep is None and "data/sweep.js" not in out
    assert "sweep-view" not in out["index.html"].decode() and "data/sweep.js" not in out["index.html"].decode()


def test_a_sweep_table_without_a_column_the_view_draws_is_refused_naming_it(run_dir, tmp_path):
    shutil.copytree(run_dir, tmp_path / "run", ignore=shutil.ignore_patterns("explore"))
    path = tmp_path / "run" / "sweep" / "sweep.parquet"
    t = pq.read_table(path)
    pq.write_table(t.drop_columns(["modelled_L_f_s"]), path)
    with pytest.raises(InputError, match=f"{path}.*modelled_L_f_s"):
        build_explorer(tmp_path / "run")


def rewrite_eta(path, row: int, value: float) -> None:
    """sweep.parquet with one modelled η changed, its metadata (signatures) kept."""
    t = pq.read_table(path)
    col = t.column("modelled_eta_s").to_pylist()
    col[row] = value
    pq.write_table(t.set_column(t.schema.get_field_index("modelled_eta_s"), "modelled_eta_s", pa.array(col)), path)


def test_the_sweep_table_is_an_input_of_explore_so_a_changed_sweep_makes_it_again(run_dir, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(run_dir, run, ignore=shutil.ignore_patterns("explore"))
    assert "sweep/sweep.parquet" in [p.relative_to(run).as_posix() for p in reuse.input_files(run, "explore")]
    made: list[int] = []

    def make():
        made.append(1)
        write_explorer(build_explorer(run), run / "explore")

    reused: list[str] = []
    assert not reuse.make_or_reuse(run, "explore", {}, make, reused)
    assert reuse.make_or_reuse(run, "explore", {}, make, reused) and reused == ["explore/"]
    rewrite_eta(run / "sweep" / "sweep.parquet", 2, 12.5)
    assert not reuse.make_or_reuse(run, "explore", {}, make, reused) and len(made) == 2
    _, _, data = received((run / "explore" / "data" / "sweep.js").read_bytes())
    assert data["rows"][2][data["columns"].index("modelled_eta_s")] == 12.5
