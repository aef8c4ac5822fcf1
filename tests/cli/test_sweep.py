"""`simulplay sweep` through the real command line: one-line errors, the files it writes,
and (slow, real Piper) the model against a real run and a --confirm killed and resumed."""

import os
import signal
import subprocess
import sys

import pandas as pd
import pytest

from simulplay.core.tables import read_table
from simulplay.store.store import AudioStore
from tests.support.checks import assert_one_line_error, wait_until
from tests.support.cli import run_cli
from tests.support.sweep_runs import synthetic_run


def sweep_cmd(*args):
    return [sys.executable, "-m", "simulplay", "sweep", *map(str, args)]


def cli(*args):
    return run_cli("sweep", *args)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    return synthetic_run(tmp_path_factory.mktemp("sweep") / "run")


@pytest.mark.parametrize("rule, fragment", [
    ("timer:w=8..0.5:0.5", "is an empty range"),
    ("timer:w=0.5..8:0", "step 0 is not > 0"),
    ("timer:wait=1..3", "unknown parameter 'wait' for grouping rule 'timer'"),
    ("timer:w=0..1000:0.001", "the grids reach 1,000,001 points, more than 10,000"),
    ("timr:w=1..3", "unknown grouping rule 'timr'"),
])
def test_grid_errors_are_one_line_exit_2(run_dir, tmp_path, rule, fragment):
    proc = cli(run_dir, "--rule", rule, "--out", tmp_path / "out")
    assert_one_line_error(proc, f"--rule '{rule}'", fragment)
    assert not (tmp_path / "out").exists()  # nothing written


@pytest.mark.parametrize("args, fragment", [
    (["--train", "timer:w=3"], "--train 'timer:w=3': is not a condition of the run"),
    (["--by", "speed"], "--by 'speed': unknown criterion"),
    (["--service", "measured"], "modelled requests have no measured service time"),
    (["--duration-terms", "words"], "--duration-terms 'words': unknown choice (expected auto, text, phonemes)"),
])
def test_other_bad_arguments_are_one_line_exit_2(run_dir, tmp_path, args, fragment):
    proc = cli(run_dir, "--rule", "timer:w=1..3", "--out", tmp_path / "out", *args)
    assert_one_line_error(proc, fragment)


def test_a_run_too_small_for_the_phoneme_terms_gets_the_text_terms_and_says_why(tmp_path):
    """One talk, about a hundred requests: fewer than 8 per phoneme term. auto fits the text
    terms and says so in the model's description; asking for the phonemes is a one-line error."""
    small = synthetic_run(tmp_path / "run", n_talks=1)
    proc = cli(small, "--rule", "timer:w=1..2", "--out", tmp_path / "auto")
    assert proc.returncode == 0, proc.stderr
    assert "(text terms: " in proc.stdout and "fewer than 8 per phoneme term" in proc.stdout
    assert "b_chars" in pd.read_csv(tmp_path / "auto" / "sweep_models.csv")
    proc = cli(small, "--rule", "timer:w=1..2", "--out", tmp_path / "phonemes", "--duration-terms", "phonemes")
    assert_one_line_error(proc, "fewer than 8 per phoneme term")


def test_a_folder_that_is_not_a_run_is_one_line_exit_2(tmp_path):
    assert_one_line_error(cli(tmp_path, "--rule", "timer:w=1..3"), "has no run.json and manifest.parquet")


@pytest.mark.slow


def test_sweep_writes_signed_tables_and_one_figure_per_family(run_dir, tmp_path):
    out = tmp_path / "out"
    # the run's durations are linear in characters (tests/support/sweep_runs.py): the text terms
    proc = cli(run_dir, "--rule", "timer:w=1..4", "--rule", "words:n=3,6,cap=3", "--out", out,
               "--duration-terms", "text")
    assert proc.returncode == 0, proc.stderr
    assert "modelled vs measured at 3 measured condition(s)" in proc.stdout
    table, meta = read_table(out / "sweep.parquet")
    assert table["rule"].tolist() == ["timer:w=1", "timer:w=2", "timer:w=3", "timer:w=4", "words:n=3,cap=3",
                                      "words:n=6,cap=3"]
    assert table["measured"].tolist() == [False, True, False, True, False, False]
    assert table.loc[1, "measured_eta_s"] == pytest.approx(table.loc[1, "modelled_eta_s"], abs=0.05)
    assert table[["n_requests_a", "n_requests_f"]].gt(0).all().all()
    sigs = [meta["signatures"][i] for i in meta["row_signature"]]
    assert all("modelled" in s["model"] for s in sigs)
    assert all("modelled" in s for s in pd.read_csv(out / "sweep.csv")["signature"])
    check = pd.read_csv(out / "sweep_check.csv")
    assert check["condition"].tolist() == ["immediate", "timer:w=2", "timer:w=4"]
    assert "largest η disagreement" in (out / "sweep_check.md").read_text()
    models = pd.read_csv(out / "sweep_models.csv")
    assert models["b_chars"].item() == pytest.approx(0.06, abs=0.005) and models["talks_folds"].item() == 4
    for name in ("sweep_1_timer-w-1-4", "sweep_2_words-n-3-6-cap-3"):
        assert (out / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
        assert b"modelled" in (out / f"{name}.svg").read_bytes()


# ---- real Piper (slow) --------------------------------------------------------------


#: The real run's rules and backend: Piper with fixed durations on one thread.
PIPER_RULES, PIPER_FIXED = ("immediate", "timer:w=2", "timer:w=4"), "piper:intra_op_threads=1,durations=fixed"


@pytest.fixture(scope="module")
def piper_run(piper_runs, tmp_path_factory):
    """A real run: 3 talks × A/F of 40 short updates (enough requests for the phoneme terms),
    Piper with fixed durations, one thread, one of the session's shared Piper runs (its store
    is ``piper_runs.store``)."""
    from simulplay.traces import read_trace, streams_from_frame
    from tests.support.factories import small_trace
    from tests.support.sweep_runs import piper_run as make_run

    root = tmp_path_factory.mktemp("piper")
    small_trace(root / "trace.jsonl", n_streams=6, n_updates=40, source_s=90.0)
    run = piper_runs.run("sweep", streams_from_frame(read_trace(root / "trace.jsonl")), rules=PIPER_RULES,
                         backend=PIPER_FIXED)
    return make_run(root / "run", root / "trace.jsonl", run, rules=PIPER_RULES, backend=PIPER_FIXED)


@pytest.mark.slow
def test_modelled_vs_measured_is_reproduced_on_a_real_piper_run(piper_run, tmp_path):
    """The sweep's measured columns are the run's own η, and a model trained on immediate
    and timer:w=2 predicts the held-out timer:w=4 (durations only: --service zero) close to
    its measurement."""
    out = tmp_path / "measured-clock"
    proc = cli(piper_run, "--rule", "timer:w=1..4", "--out", out)
    assert proc.returncode == 0, proc.stderr
    check = pd.read_csv(out / "sweep_check.csv").set_index("condition")
    eta = pd.read_parquet(piper_run / "eta.parquet").set_index("condition")
    for cond in ("timer:w=2", "timer:w=4"):
        assert check.loc[cond, "measured_eta_s"] == pytest.approx(eta.loc[cond, "eta_s"], abs=1e-9)
    models = pd.read_csv(out / "sweep_models.csv")
    phon = [c for c in models if c.startswith("b_ph:")]  # Piper's phonemizer was used: a term per symbol
    assert len(phon) > 20 and models[phon].abs().to_numpy().max() > 0 and "b_sentences" in models
    assert "b_chars" not in models
    out = tmp_path / "durations"
    proc = cli(piper_run, "--rule", "timer:w=1..4", "--train", "immediate", "--train", "timer:w=2",
               "--service", "zero", "--out", out)
    assert proc.returncode == 0, proc.stderr
    assert "phoneme symbols" in proc.stdout and "anchored on 2 training condition(s)" in proc.stdout
    check = pd.read_csv(out / "sweep_check.csv").set_index("condition")
    held = check.loc["timer:w=4"]
    per_talk = pd.read_csv(out / "sweep_check_per_talk.csv").set_index("condition").loc["timer:w=4"]
    # measured here (deterministic: fixed durations, no service): Δη −0.110 s, per talk up to 0.247 s,
    # ΔL within 0.044 s (the text terms: −0.142, 0.230, 0.054); the demo's figures are in docs/sweeps.md
    assert abs(held["eta_diff_s"]) < 0.15
    assert per_talk["eta_diff_s"].abs().max() < 0.3
    assert max(abs(held["L_a_diff_s"]), abs(held["L_f_diff_s"])) < 0.1


def synthesized(store_dir) -> int:
    return sum(e["event"] == "synthesized" for e in AudioStore(store_dir).events())


@pytest.mark.slow
def test_confirm_resumes_after_a_kill(piper_run, piper_runs, tmp_path):
    """--confirm 1 killed (SIGKILL) after its second new request, run again: it synthesizes
    only what is missing, and the confirmed manifest holds the reference and the point."""
    store = piper_runs.store
    before = synthesized(store)
    out = tmp_path / "confirm"
    args = (piper_run, "--rule", "timer:w=1..4", "--confirm", "1", "--out", out, "--quiet")
    proc = subprocess.Popen(sweep_cmd(*args), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wait_until(lambda: synthesized(store) >= before + 2 or proc.poll() is not None, "two confirmed requests")
    assert proc.poll() is None, f"sweep ended before it was killed: {proc.stderr.read().decode()}"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    kept = synthesized(store) - before
    assert not (out / "confirmed.parquet").exists()
    done = cli(*args)
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if x.startswith("confirmed by synthesis"))
    point = line.split(": ", 1)[1].split(" (", 1)[0]
    assert point in ("timer:w=1", "timer:w=3")
    manifest = pd.read_parquet(out / "confirmed.parquet")
    assert set(manifest["condition"]) == {"immediate", point} and (manifest["error"] == "").all()
    assert f"synthesized {synthesized(store) - before - kept}, already in store" in line  # the killed run's kept
    events = [e["key"] for e in AudioStore(store).events() if e["event"] == "synthesized"]
    assert len(events) == len(set(events)), "a request was synthesized twice"
    table = pd.read_csv(out / "sweep.csv").set_index("rule")
    assert table.loc[point, "confirmed"] and pd.notna(table.loc[point, "measured_eta_s"])
    check = pd.read_csv(out / "sweep_check.csv").set_index("condition")
    assert check.loc[point, "confirmed"]


@pytest.mark.slow
def test_a_modelled_closed_loop_point_confirmed_by_synthesis_agrees_with_its_measurement(piper_run, tmp_path):
    """A closed-loop family on the real run: each point runs backlog in its engine on the
    run's models; the confirmed point is synthesized in closed loop, and its modelled η lies
    within the measured interval (the check's ``outside`` is false)."""
    out = tmp_path / "loop"
    point = "backlog:below=2,max_chars=300,min_words=3"
    done = cli(piper_run, "--rule", "backlog:below=2", "--confirm", "1", "--out", out, "--quiet")
    assert done.returncode == 0, done.stderr
    manifest = pd.read_parquet(out / "confirmed.parquet")
    rows = manifest[manifest["condition"] == point]
    assert (manifest["error"] == "").all() and len(rows) and rows["queued_s"].notna().all()
    check = pd.read_csv(out / "sweep_check.csv").set_index("condition")
    assert check.loc[point, "confirmed"] and check.loc[point, "measured_eta_s"] != 0  # not immediate's groups
    assert not check.loc[point, "outside"]
    assert abs(check.loc[point, "eta_diff_s"]) <= check.loc[point, "half_width_s"]
