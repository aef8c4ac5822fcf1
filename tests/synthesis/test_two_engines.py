"""A run of two engines ([[backend]] tables, `simulplay demo --backends`): each backend's own
synthesis, one stacked manifest whose rows keep their own signatures, η per backend, and the
cross-backend interaction η(B1) − η(B2) against the per-talk η table by hand. The clock's
probe spread and the duration noise are taken within each backend."""

import json

import pandas as pd
import pytest

from simulplay.analysis.noise import duration_noise
from simulplay.core.errors import InputError
from simulplay.core.tables import read_table, stored_signatures
from simulplay.synthesis.clock_check import probe_spread
from simulplay.workflows.experiment import demo_experiment, load_experiment, parse_demo_backends, written
from tests.support.checks import assert_one_line_error
from tests.support.factories import small_trace

TWO = '''name = "two"
traces = ["t.jsonl"]
a = "A"
f = "F"
rules = ["immediate", "timer:w=3"]
reference = "immediate"
out = "run"
{backends}
[analysis]
draws = 200
'''
PIPER = '[[backend]]\nname = "piper"\nintra_op_threads = 1\n'
ESPEAK = '[[backend]]\nname = "espeak"\nvoice = "en-us"\n'


def experiment(tmp_path, backends: str):
    small_trace(tmp_path / "t.jsonl", n_streams=4, n_updates=6)  # two talks, systems A and F
    (tmp_path / "e.toml").write_text(TWO.format(backends=backends))
    return load_experiment(tmp_path / "e.toml")


def specs(exp) -> list[str]:
    """The experiment's backends as it writes them (run.json)."""
    return [written(exp, b) for b in exp.backends]


def test_backend_tables_name_every_engine_in_order(tmp_path):
    exp = experiment(tmp_path, PIPER + ESPEAK)
    assert specs(exp) == ["piper:intra_op_threads=1", "espeak:voice=en-us"]
    assert [b.name for b in exp.backends] == ["piper", "espeak"] and exp.backends[0].intra_op_threads == 1
    assert specs(experiment(tmp_path, '[backend]\nname = "espeak"\n')) == ["espeak"]


@pytest.mark.parametrize("backends,fragments", [
    (ESPEAK + ESPEAK.replace("en-us", "de") + ESPEAK, ["key 'backend[2]'", "label their rows 'espeak:en-us'"]),
    (ESPEAK + '[[backend]]\nname = "espeak"\nvoice = "xx"\n', ["table 'backend[1]'", "no voice 'xx'"]),
    (ESPEAK + '[[backend]]\nname = "espeak"\nspeed = 2\n', ["key 'backend[1].speed'", "not a setting of backend"]),
    ("backend = []\n", ["key 'backend'", "is not a list of backend tables"]),
])
def test_bad_backend_lists_are_one_line_errors(tmp_path, backends, fragments):
    with pytest.raises(InputError) as e:
        experiment(tmp_path, backends)
    assert len(str(e.value).splitlines()) == 1 and all(f in str(e.value) for f in fragments), str(e.value)


@pytest.mark.slow


def test_the_demo_runs_piper_alone_unless_asked(tmp_path, cli):
    assert demo_experiment(tmp_path / "d").backends[1:] == ()
    both = demo_experiment(tmp_path / "d", backends=parse_demo_backends("piper,espeak"))
    assert specs(both)[1:] == ["espeak:voice=en-us"] and specs(both)[0].startswith("piper:intra_op_threads=")
    assert specs(demo_experiment(tmp_path / "d", backends=("espeak",))) == ["espeak:voice=en-us"]
    for text, fragment in (("piper,festival", "unknown demo backend 'festival'"), ("espeak,espeak", "twice")):
        proc = cli("demo", "--out-dir", tmp_path / "x", "--backends", text)
        assert_one_line_error(proc, f"--backends '{text}'", fragment, "piper,espeak")
        assert not (tmp_path / "x").exists()


def test_probes_are_compared_within_each_backend():
    # by hand: a 0.10 → 0.12 (1.2), b 1.0 → 1.1 (1.1); across backends it would be 11
    probes = [{"backend": "a", "service_s": 0.10}, {"backend": "a", "service_s": 0.12},
              {"backend": "b", "service_s": 1.0}, {"backend": "b", "service_s": 1.1}]
    assert probe_spread(probes) == pytest.approx(1.2)
    assert probe_spread([{k: v for k, v in p.items() if k != "backend"} for p in probes]) == pytest.approx(11)
    assert probe_spread(probes[:1] + probes[2:3]) is None  # one probe per backend: no spread


def test_duration_noise_compares_realizations_within_each_backend():
    rows = [{"backend": b, "realization": r, "text": "x", "n_samples": n, "sample_rate": 1000, "reused": False,
             "error": ""} for b, r, n in (("p", 0, 1000), ("p", 1, 1010), ("e", 0, 5000), ("e", 1, 5000))]
    noise = duration_noise(pd.DataFrame(rows)).set_index("backend")
    assert noise.loc["p", "max_abs_diff_s"] == pytest.approx(0.010) and noise.loc["e", "n_same_samples"] == 1


@pytest.mark.slow
def test_a_run_of_two_real_engines(tmp_path):
    from simulplay.report import build_report
    from simulplay.workflows.pipeline import run_experiment

    exp = experiment(tmp_path, PIPER + ESPEAK)
    res = run_experiment(exp)
    out = exp.out
    one, two = (pd.read_parquet(out / f"manifest.backend{i}.parquet") for i in (1, 2))
    man, meta = read_table(out / "manifest.parquet")
    assert len(man) == len(one) + len(two) and list(dict.fromkeys(man["backend"])) == [
        "piper:en_US-joe-medium", "espeak:en-us"]
    # every row keeps its own backend's signature; the run's joins them
    sigs = stored_signatures(meta, len(man))
    assert {s["backend"].split("@")[0] for s, b in zip(sigs, man["backend"]) if b == "espeak:en-us"} == {"espeak-ng"}
    assert {s["backend"].split("@")[0] for s, b in zip(sigs, man["backend"]) if b != "espeak:en-us"} == {"piper-tts"}
    assert " + " in meta["signature"]["backend"] and len(meta["manifests"]) == 2
    record = json.loads((out / "run.json").read_text())
    assert [b["backend"] for b in record["backends"]] == ["piper:en_US-joe-medium", "espeak:en-us"]
    assert res.synth.stats.synthesized == sum(s.stats.synthesized for s in res.syntheses)
    assert {p["backend"] for p in res.synth.stats.clock.probes} == {"piper:en_US-joe-medium", "espeak:en-us"}
    # η per backend, and η(Piper) − η(eSpeak NG) per talk by hand from the per-talk η table
    pt = pd.read_csv(out / "eta_per_talk.csv")
    inter = pd.read_csv(out / "eta_per_talk.interaction.csv")
    eta = pt.set_index(["backend", "condition", "talk_id"])["eta_s"]
    assert len(inter) == 2  # two talks, one grouped condition
    for row in inter.itertuples():
        assert row.interaction_s == pytest.approx(eta[("piper:en_US-joe-medium", row.condition, row.talk_id)]
                                                  - eta[("espeak:en-us", row.condition, row.talk_id)], abs=1e-9)
    table = pd.read_csv(out / "eta.interaction.csv")
    assert table["interaction_s"].iloc[0] == pytest.approx(inter["interaction_s"].mean(), abs=1e-9)
    report = build_report(out)
    assert report.table("table07_interaction").frame["interaction_s"].iloc[0] == pytest.approx(
        table["interaction_s"].iloc[0], abs=1e-9)
