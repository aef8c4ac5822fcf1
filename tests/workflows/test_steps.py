"""The replay and η steps in one place: ``simulplay replay``/``eta`` and ``simulplay.replay``/
``eta`` both call simulplay.workflows.steps, with the same parsed settings."""

import pandas as pd
import pytest

import simulplay
import simulplay.workflows.steps as steps
from simulplay.analysis.bootstrap import Bootstrap
from simulplay.core.errors import InputError
from simulplay.core.tables import write_table
from simulplay.sim.variants import RequestRelease, Zero
from simulplay.workflows.steps import ReplaySettings
from tests.support.cli import run_cli
from tests.support.factories import manifest as hand_manifest

# two talks, A and F, under immediate and timer:w=4: (dispatch_s, service_s, audio_s) per request
OUTPUTS = {(t, s, c): reqs for t in ("t1", "t2") for s, c, reqs in (
    ("A", "immediate", [(1.0, 0.2, 1.0), (2.0, 0.2, 1.5)]), ("A", "timer:w=4", [(4.0, 0.3, 2.5)]),
    ("F", "immediate", [(1.5, 0.2, 2.0)]), ("F", "timer:w=4", [(5.0, 0.2, 2.0)]))}


@pytest.fixture
def manifest_file(tmp_path):
    m = hand_manifest(OUTPUTS)
    sig = {"table": "manifest", "backend": "hand-made"}
    write_table(m, tmp_path / "m.parquet", [{**sig, "rule": c} for c in m["condition"]], kind="manifest",
                extra_meta={"signature": sig})
    return tmp_path / "m.parquet"


def spy(monkeypatch, name):
    calls, real = [], getattr(steps, name)

    def called(*args, **kwargs):
        calls.append((args, kwargs))
        return real(*args, **kwargs)

    monkeypatch.setattr(steps, name, called)
    return calls


def test_the_command_and_the_api_replay_through_the_one_step(manifest_file, tmp_path, monkeypatch):
    calls = spy(monkeypatch, "replay_manifest")
    run_cli("replay", manifest_file, "--service", "zero", "--silent-parts", "hold", "--out", tmp_path / "s.parquet",
            check=True, subprocess=False)
    api = simulplay.replay(manifest_file, service="zero", silent_parts="hold")
    assert len(calls) == 2
    (cli_args, cli_kw), (api_args, api_kw) = calls
    assert cli_args[1] == api_args[1] == ReplaySettings(RequestRelease(), Zero(), "hold")
    none = {"chunks": None, "allow_incomplete": False, "talks": ()}
    assert api_kw.pop("talks_flag") == "talks" and "talks_flag" not in cli_kw  # what a talks error names
    assert {**cli_kw, "talks": ()} == {**api_kw, "talks": ()} == none
    written = pd.read_parquet(tmp_path / "s.parquet")
    pd.testing.assert_frame_equal(written[["talk_id", "system", "condition", "end_s"]],
                                  api.summary[["talk_id", "system", "condition", "end_s"]])
    # zero service, hold: t1 A immediate plays 1.0–2.0 then 2.0–3.5, so it ends at 3.5 (by hand)
    row = api.summary.set_index(["talk_id", "system", "condition"]).loc[("t1", "A", "immediate")]
    assert row["end_s"] == 3.5


def test_the_command_and_the_api_compute_eta_through_the_one_step(manifest_file, tmp_path, monkeypatch):
    run_cli("replay", manifest_file, "--out", tmp_path / "s.parquet", check=True, subprocess=False)
    calls = spy(monkeypatch, "eta_of_summary")
    run_cli("eta", tmp_path / "s.parquet", "--a", "A", "--f", "F", "--reference", "immediate", "--draws", "50",
            "--out", tmp_path / "e.csv", check=True, subprocess=False)
    api = simulplay.eta(tmp_path / "s.parquet", a="A", f="F", reference="immediate", draws=50)
    assert len(calls) == 2
    (cli_args, cli_kw), (api_args, api_kw) = calls
    assert cli_args == api_args and str(cli_args[0]) == str(tmp_path / "s.parquet")
    for key in ("a", "f", "reference", "boot", "contrasts", "interactions", "allow_incomplete"):
        assert cli_kw[key] == api_kw[key], key
    assert cli_kw["boot"] == Bootstrap(draws=50)
    assert pd.read_csv(tmp_path / "e.csv")["eta_s"].tolist() == pytest.approx(api.eta["eta_s"].tolist())


def test_replay_settings_name_the_flags_or_the_keywords():
    with pytest.raises(InputError, match="--service 'fast'"):
        steps.replay_settings("request", "fast", "skip")
    with pytest.raises(InputError, match="^service 'fast'"):
        steps.replay_settings("request", "fast", "skip", names=steps.KEYWORDS)
