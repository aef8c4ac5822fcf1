"""`simulplay sweep --servers`: the number of shared servers as a grid axis.

The modelled η and L at every number of servers are checked against an event-driven
queue, serial playback and η written here from their definitions (docs/many-listeners.md,
docs/concepts.md), fed the sweep's own modelled requests; with K at least the outputs of
a share group, the sweep equals the plain sweep bit for bit; bad values are one line."""

import numpy as np
import pandas as pd
import pytest

from simulplay.core.tables import read_table
from simulplay.workflows.sweep import sweep_run
from tests.support.checks import assert_one_line_error
from tests.support.cli import run_cli
from tests.support.sweep_runs import synthetic_run

RULES = ("timer:w=1..3",)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    # 2 talks × A/F: a share group (one rule, share=panel) holds 4 outputs
    return synthetic_run(tmp_path_factory.mktemp("servers") / "run", n_talks=2)


def cli(*args):
    return run_cli("sweep", *map(str, args))


# ---- an independent shared-server replay ------------------------------------------


def queue(outputs: dict, k: int) -> dict:
    """Readiness (s) of every request: the outputs of one group queue for ``k`` workers.
    ``outputs``: (talk, system) → list of (dispatch_s, service_s). One request in flight per
    output; at each event the waiting request that became eligible first (ties: talk,
    system) takes the worker that frees first."""
    free = [0.0] * k
    nxt = {o: 0 for o in outputs}
    ready = {o: [] for o in outputs}
    while any(nxt[o] < len(outputs[o]) for o in outputs):
        waiting = []
        for o, reqs in outputs.items():
            j = nxt[o]
            if j < len(reqs):
                eligible = max(reqs[j][0], ready[o][-1] if ready[o] else -np.inf)
                waiting.append((eligible, o))
        eligible, o = min(waiting)
        w = min(range(k), key=lambda i: free[i])
        start = max(eligible, free[w])
        free[w] = start + outputs[o][nxt[o]][1]
        ready[o].append(free[w])
        nxt[o] += 1
    return ready


def expected(manifest: pd.DataFrame, k: int, *, a: str, f: str, reference: str) -> dict:
    """Per condition: L of A and F (mean end offset over talks, s) and η (the mean over
    talks of δ(w) − δ(reference), δ = offset(A) − offset(F)), from the definitions."""
    offsets = {}
    for cond, rows in manifest.groupby("condition", sort=False):
        rows = rows.sort_values(["talk_id", "system", "seq"])
        outputs = {o: list(zip(g["dispatch_s"], g["service_s"])) for o, g in rows.groupby(["talk_id", "system"])}
        ready = queue(outputs, k)
        for (talk, system), g in rows.groupby(["talk_id", "system"]):
            end = 0.0
            for r, n, rate in zip(ready[(talk, system)], g["n_samples"], g["sample_rate"]):
                if n > 0:  # a silent part is skipped
                    end = max(r, end) + n / rate
            offsets[(cond, talk, system)] = end - g["source_s"].iloc[0]
    talks = sorted(manifest["talk_id"].unique())
    out = {}
    for cond in manifest["condition"].unique():
        delta = [offsets[(cond, t, a)] - offsets[(cond, t, f)] - offsets[(reference, t, a)]
                 + offsets[(reference, t, f)] for t in talks]
        out[cond] = {"eta": np.mean(delta), "L_a": np.mean([offsets[(cond, t, a)] for t in talks]),
                     "L_f": np.mean([offsets[(cond, t, f)] for t in talks])}
    return out


def test_the_queue_here_matches_a_hand_worked_table():
    """Two outputs, one worker: x sends at 0 (service 2) and 1 (service 1), y at 0.5
    (service 1). x0 runs 0–2; y0 waits from 0.5 to 2 and runs to 3; x1 is eligible at 2
    (after x0), waits for the worker, runs 3–4. With two workers y0 runs 0.5–1.5 and x1
    2–3."""
    outputs = {("t", "x"): [(0.0, 2.0), (1.0, 1.0)], ("t", "y"): [(0.5, 1.0)]}
    assert queue(outputs, 1) == {("t", "x"): [2.0, 4.0], ("t", "y"): [3.0]}
    assert queue(outputs, 2) == {("t", "x"): [2.0, 3.0], ("t", "y"): [1.5]}


@pytest.mark.slow
def test_eta_and_L_at_each_number_of_servers_follow_the_queue(run_dir, tmp_path):
    res = sweep_run(run_dir, list(RULES), out=tmp_path / "out", terms="text", servers="1..3")
    manifest = res.result.modelled.manifest
    assert res.table["servers"].tolist() == [1, 1, 1, 2, 2, 2, 3, 3, 3]
    for k in (1, 2, 3):
        want = expected(manifest, k, a="A", f="F", reference="immediate")
        got = res.table[res.table["servers"] == k].set_index("rule")
        for rule in ("timer:w=1", "timer:w=2", "timer:w=3"):
            assert got.loc[rule, "modelled_eta_s"] == pytest.approx(want[rule]["eta"], abs=1e-6)
            assert got.loc[rule, "modelled_L_a_s"] == pytest.approx(want[rule]["L_a"], abs=1e-6)
            assert got.loc[rule, "modelled_L_f_s"] == pytest.approx(want[rule]["L_f"], abs=1e-6)
    # the queue costs: one server ends later than four outputs' own servers
    one = expected(manifest, 1, a="A", f="F", reference="immediate")
    own = expected(manifest, 4, a="A", f="F", reference="immediate")
    assert one["timer:w=1"]["L_a"] > own["timer:w=1"]["L_a"]
    # the measured columns are the run's measured requests on the same servers
    measured = res.table[res.table["measured"]].set_index(["rule", "servers"])
    for k in (1, 3):
        want = expected(pd.read_parquet(run_dir / "manifest.parquet"), k, a="A", f="F", reference="immediate")
        assert measured.loc[("timer:w=2", k), "measured_eta_s"] == pytest.approx(want["timer:w=2"]["eta"], abs=1e-6)
    sigs = res.signatures
    assert [s["servers"] for s in sigs] == res.table["servers"].tolist()
    assert all(s["share"] == "panel" and s["discipline"] == "fifo" and s["load_curve_sha256"] == "none"
               for s in sigs)


@pytest.mark.slow
def test_a_calibrated_slowdown_multiplies_every_service_on_the_queue_and_is_signed(run_dir, tmp_path):
    """A factor alone is the same slowdown at every number in flight: one server, each service × 2."""
    res = sweep_run(run_dir, ["timer:w=1..2"], out=tmp_path / "out", terms="text", servers="1", slowdown="2")
    manifest = res.result.modelled.manifest
    want = expected(manifest.assign(service_s=manifest["service_s"] * 2), 1, a="A", f="F", reference="immediate")
    got = res.table.set_index("rule")
    for rule in ("timer:w=1", "timer:w=2"):
        assert got.loc[rule, "modelled_eta_s"] == pytest.approx(want[rule]["eta"], abs=1e-6)
        assert got.loc[rule, "modelled_L_a_s"] == pytest.approx(want[rule]["L_a"], abs=1e-6)
    measured = pd.read_parquet(run_dir / "manifest.parquet")
    want = expected(measured.assign(service_s=measured["service_s"] * 2), 1, a="A", f="F", reference="immediate")
    assert got.loc["timer:w=2", "measured_eta_s"] == pytest.approx(want["timer:w=2"]["eta"], abs=1e-6)
    assert all(s["slowdown"] == "1:2.0" and s["servers"] == 1 for s in res.signatures)


@pytest.mark.slow
def test_servers_at_least_the_outputs_equal_the_plain_sweep_bit_for_bit(run_dir, tmp_path):
    """4 outputs share each rule's servers: K = 4 and K = 9 are the plain sweep, K = 1 is not;
    the tables, the check and the figure are written, each row signed with its K."""
    plain, servers = tmp_path / "plain", tmp_path / "servers"
    for out, extra in ((plain, ()), (servers, ("--servers", "1,4,9"))):
        proc = cli(run_dir, "--rule", *RULES, "--out", out, "--duration-terms", "text", *extra)
        assert proc.returncode == 0, proc.stderr
    base, base_meta = read_table(plain / "sweep.parquet")
    table, meta = read_table(servers / "sweep.parquet")
    sigs = [meta["signatures"][i] for i in meta["row_signature"]]
    base_sigs = [base_meta["signatures"][i] for i in base_meta["row_signature"]]
    keys = ("servers", "share", "discipline", "load_curve_sha256")
    for k in (4, 9):
        at = (table["servers"] == k).to_numpy()
        rows = table[at].drop(columns=["servers", "signature"]).reset_index(drop=True)
        pd.testing.assert_frame_equal(rows, base.drop(columns="signature"), check_exact=True)
        assert [{n: v for n, v in s.items() if n not in keys} for s, keep in zip(sigs, at) if keep] == base_sigs
    one = table[table["servers"] == 1].drop(columns="servers").reset_index(drop=True)
    assert not one["modelled_L_a_s"].equals(base["modelled_L_a_s"])
    check, check_base = pd.read_parquet(servers / "sweep_check.parquet"), pd.read_parquet(plain / "sweep_check.parquet")
    rows = check[check["servers"] == 9].drop(columns=["servers", "signature"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(rows, check_base.drop(columns="signature"), check_exact=True)
    assert [s["servers"] for s in sigs] == table["servers"].tolist()
    assert (servers / "sweep_servers.png").read_bytes()[:4] == b"\x89PNG"
    assert b"servers:9" in (servers / "sweep_servers.svg").read_bytes()
    assert not (plain / "sweep_servers.png").exists()


@pytest.mark.parametrize("args, fragment", [
    (["--servers", "0..2"], "--servers '0..2': 0 servers is not a whole number ≥ 1"),
    (["--servers", "1..x"], "--servers '1..x': 'servers=1..x' is not a range"),
    (["--servers", "1.5"], "is not a whole number"),
    (["--servers", "4", "--service", "zero"], "--service 'zero': shared servers queue the fitted clock"),
    (["--share", "talk"], "--share/--load-curve: need --servers VALUES"),
    (["--slowdown", "1.2"], "--slowdown: need --servers VALUES"),
    (["--servers", "2", "--slowdown", "-1"], "--slowdown '-1', row 1, field 'slowdown': slowdown '-1.0' is not"),
    (["--servers", "2", "--share", "room"], "unknown share group 'room'"),
    (["--servers", "1..5000"], "more than 10,000"),
])
def test_bad_servers_are_one_line_exit_2_and_write_nothing(run_dir, tmp_path, args, fragment):
    proc = cli(run_dir, "--rule", *RULES, "--out", tmp_path / "out", *args)
    assert_one_line_error(proc, fragment)
    assert not (tmp_path / "out").exists()


def test_a_load_curve_short_of_the_servers_is_one_line(run_dir, tmp_path):
    curve = tmp_path / "curve.csv"
    curve.write_text("concurrency,service_p50_s\n1,0.2\n2,0.3\n", encoding="utf-8")
    proc = cli(run_dir, "--rule", *RULES, "--out", tmp_path / "out", "--servers", "1..3", "--load-curve", curve)
    assert_one_line_error(proc, "load curve ends at concurrency 2, below the 3 servers")


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:the model")
def test_the_api_takes_servers_as_a_list_and_the_explorer_draws_a_line_per_number(run_dir, tmp_path):
    import simulplay
    from simulplay.report.explore.sweep import _family

    out = simulplay.sweep(run_dir, "timer:w=1..3", servers=[1, 4], duration_terms="text", out=tmp_path / "out")
    assert out.table["servers"].tolist() == [1, 1, 1, 4, 4, 4]
    table = out.table.reset_index(drop=True)
    family = _family("timer:w=1..3", table, out.signatures, [0] * len(table), tmp_path / "sweep.parquet")
    assert family["other"] == ["servers"]
    assert [line["rows"] for line in family["lines"]] == [[0, 1, 2], [3, 4, 5]]


@pytest.mark.parametrize("servers", [True, [], [1, "2"]])
def test_the_api_refuses_servers_that_are_no_numbers(run_dir, tmp_path, servers):
    import simulplay
    from simulplay.core.errors import InputError

    with pytest.raises(InputError, match="servers"):
        simulplay.sweep(run_dir, "timer:w=1..3", servers=servers, out=tmp_path / "out")


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:the model")
def test_the_report_shows_the_servers_figure_after_the_family_figures(tmp_path):
    from simulplay.report.read_run import load_run
    from simulplay.report.sweep_figures import sweep_report_figures
    from tests.support.sweep_runs import swept_run

    folder = swept_run(tmp_path / "run", realizations=1, rules=("timer:w=1..2",))
    sweep_run(folder, ["timer:w=1..2"], terms="text", servers="1,4")  # into folder/sweep, as the report reads it
    figures = sweep_report_figures(load_run(folder))
    assert [f.key for f in figures] == ["figure05_sweep_1", "figure05_sweep_2_servers"]
    servers = figures[-1]
    assert servers.png[:4] == b"\x89PNG" and servers.number == "Figure 5.2"
    assert any("servers:1" in line for line in servers.lines) and any("servers:4" in line for line in servers.lines)
