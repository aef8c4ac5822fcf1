"""The paper-shaped worked example (examples/paper.toml): its design, and the paper's
published identities on what it writes, with real synthesis on two engines (Piper and
eSpeak NG) and Silero VAD:

* L = D + I − S for every output (primary, sensitivity and edge-trimmed replays);
* η(p) = δ(p) − δ(0), and η = duration part + idle part, per talk and in the means;
* η per talk equals δ(p) − δ(0) with δ = L(A) − L(F) taken from the summary by hand;
* contrasts: δ(p1) − δ(p2), with δ(p) the η table's own;
* non-speech + speech = the audio-duration change, at every VAD threshold;
* the cross-backend interaction (Appendix C.4): η(Piper) − η(eSpeak NG) per talk from the
  η table by hand, in eta.interaction.csv and in the report's Table 7.
"""

import dataclasses
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simulplay.workflows.experiment import load_experiment

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "paper.toml"
TOL = 1e-9  # seconds: every number is a whole nanosecond, sums of them are exact to float rounding


def test_the_example_is_the_papers_design():
    from simulplay.analysis.bootstrap import Bootstrap
    from simulplay.sim.variants import ChunkRelease, Measured, ReplayVariant, RequestRelease, Zero
    from simulplay.workflows.experiment import written

    exp = load_experiment(EXAMPLE)
    assert [written(exp, r) for r in exp.rules[:2]] == ["immediate", "timer:w=4"] and exp.reference == "immediate"
    assert {"punct:cap=2,min_words=3", "words:n=8,cap=2", "timer:w=2"} <= {r.canonical() for r in exp.rules}
    assert exp.contrasts == (("punct:cap=2,min_words=3", "timer:w=2"),)
    assert exp.variants == (ReplayVariant(ChunkRelease(), Measured()), ReplayVariant(RequestRelease(), Zero()))
    assert [written(exp, v) for v in exp.variants] == ["release=chunk", "service=zero"]
    assert exp.edges == (0.3, 0.5, 0.7)
    assert exp.realizations == 3 and exp.order == "counterbalanced"
    assert 'order = "counterbalanced"' in EXAMPLE.read_text()  # stated, not left to the default
    # two real engines (C.4)
    assert [written(exp, b) for b in exp.backends] == ["piper:intra_op_threads=2", "espeak:voice=en-us"]
    assert exp.bootstrap == Bootstrap(draws=10_000, seed=1032026, method="order:int(nq)", rng="python")  # "paper"
    assert exp.traces == ((ROOT / "traces" / "sample_traces.jsonl").resolve(),) or \
        [p.resolve() for p in exp.traces] == [(ROOT / "traces" / "sample_traces.jsonl").resolve()]


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory):
    """The example's design run on the first 50 s of one talk of the sample traces (its
    source cut there too) with two realizations, on both engines (the whole file takes
    minutes on two cores; every setting but the talks and the number of realizations is the
    file's; the identities checked below hold for any talk, long or short)."""
    from simulplay.workflows.pipeline import run_experiment

    tmp = tmp_path_factory.mktemp("paper")
    lines = (ROOT / "traces" / "sample_traces.jsonl").read_text().splitlines()
    talk = [json.loads(line) for line in lines if json.loads(line)["talk_id"] == "bread-science"]
    cut = [{**s, "source_s": 50.0, "updates": [u for u in s["updates"] if u["time_s"] < 50.0]} for s in talk]
    assert all(len(s["updates"]) >= 20 for s in cut)
    (tmp / "one_talk.jsonl").write_text("".join(json.dumps(s) + "\n" for s in cut))
    exp = dataclasses.replace(load_experiment(EXAMPLE), traces=(tmp / "one_talk.jsonl",), realizations=2,
                              out=tmp / "run", store=tmp / "run" / "store")
    run_experiment(exp)
    return tmp / "run"


def read(folder: Path, name: str) -> pd.DataFrame:
    """A table of the run, realization as text (Parquet keeps the manifest's strings, CSV reads numbers)."""
    df = pd.read_parquet(folder / name) if name.endswith(".parquet") else pd.read_csv(folder / name)
    return df.assign(realization=df["realization"].astype(str)) if "realization" in df else df


@pytest.mark.slow
def test_realizations_are_synthesized_in_counterbalanced_order(run_folder):
    # one talk, five conditions: realization r has order id k = r and condition c runs at
    # position (c - k) mod 5; the translators batched (0) and eager (1), in name order, take
    # position (s - j) mod 2 with j = r mod 2: batched first in realization 0, eager in 1
    # (the cyclic Latin squares of simulplay synth --help), under each backend alike
    man = pd.read_parquet(run_folder / "manifest.parquet")
    assert list(dict.fromkeys(man["backend"])) == ["piper:en_US-joe-medium", "espeak:en-us"]
    rules = ["immediate", "timer:w=4", "timer:w=2", "punct:cap=2,min_words=3", "words:n=8,cap=2"]
    for (b, r, cond, system), g in man.groupby(["backend", man["realization"].astype(int), "condition", "system"]):
        assert set(g["order_id"]) == {r} and set(g["condition_pos"]) == {(rules.index(cond) - r) % 5}, (b, r, cond)
        assert set(g["system_pos"]) == {(["batched", "eager"].index(system) - r) % 2}, (b, r, cond, system)
    for b, g in man.groupby("backend"):  # each backend's own synthesis, in its own order
        first = g.sort_values("synth_order").drop_duplicates(["realization", "condition"])
        assert first["system"].tolist() == ["batched"] * 5 + ["eager"] * 5, b


def close(a, b) -> bool:
    return bool(np.all(np.abs(np.asarray(a, float) - np.asarray(b, float)) <= TOL))


@pytest.mark.slow
def test_offset_is_duration_plus_idle_minus_source(run_folder):
    files = ["summary.parquet", "summary.release-chunk.parquet", "summary.service-zero.parquet",
             "edges_summary.parquet"]
    for name in files:
        s = read(run_folder, name)
        assert len(s) and close(s["offset_s"], s["audio_s"] + s["idle_s"] - s["source_s"]), name
        assert close(s["end_s"], s["audio_s"] + s["idle_s"]), name  # C_m = D + I
    assert sorted(read(run_folder, "summary.parquet")["realization"].unique()) == ["0", "1"]


@pytest.mark.slow
def test_eta_is_the_change_of_delta_and_the_sum_of_its_parts(run_folder):
    for name in ("eta.csv", "eta.release-chunk.csv", "eta.service-zero.csv", "eta_edges.csv"):
        e = read(run_folder, name)
        assert len(e) and close(e["eta_s"], e["delta_s"] - e["delta_ref_s"]), name
        assert close(e["eta_s"], e["duration_part_s"] + e["idle_part_s"]), name
    pt = read(run_folder, "eta_per_talk.csv")
    assert close(pt["eta_s"], pt["duration_part_s"] + pt["idle_part_s"])
    # δ = L(A) − L(F) by hand from the summary, then η(p) = δ(p) − δ(0), under each backend
    s = read(run_folder, "summary.parquet").set_index(["backend", "realization", "talk_id", "condition", "system"])
    delta = (s["offset_s"].xs("eager", level="system") - s["offset_s"].xs("batched", level="system")).sort_index()
    assert sorted(pt["backend"].unique()) == ["espeak:en-us", "piper:en_US-joe-medium"]
    for row in pt.itertuples():
        d = delta.loc[(row.backend, row.realization, row.talk_id)]
        assert abs(row.eta_s - (d[row.condition] - d["immediate"])) <= TOL


@pytest.mark.slow
def test_contrasts_are_differences_of_delta(run_folder):
    c = read(run_folder, "contrasts.csv")
    e = read(run_folder, "eta.csv").set_index(["backend", "realization", "condition"])["delta_s"]
    assert len(c) == 4  # one per backend and realization
    assert close(c["diff_s"], c["delta_p1_s"] - c["delta_p2_s"])
    for row in c.itertuples():
        assert abs(row.delta_p1_s - e[(row.backend, row.realization, row.p1)]) <= TOL
        assert abs(row.delta_p2_s - e[(row.backend, row.realization, row.p2)]) <= TOL


@pytest.mark.slow
def test_nonspeech_plus_speech_is_the_duration_change_at_every_threshold(run_folder):
    share = read(run_folder, "edges_nonspeech.csv")
    assert sorted(share["threshold"].unique()) == [0.3, 0.5, 0.7]
    assert close(share["nonspeech_s"] + share["speech_s"], share["reduction_s"])
    # the reduction is the untrimmed audio of the reference minus the condition's (one talk)
    s = read(run_folder, "edges_summary.parquet")
    # systems × thresholds × pairs (reference vs each rule) × realizations × backends
    assert len(share) == 2 * 3 * 4 * 2 * 2
    for row in share.itertuples():
        sel = s[(s["threshold"] == row.threshold) & (s["system"] == row.system) & (s["realization"] == row.realization)
                & (s["backend"] == row.backend)]
        d = sel.set_index("condition")["untrimmed_audio_s"]
        assert abs(row.reduction_s - (d[row.reference] - d[row.condition])) <= TOL


@pytest.mark.slow
def test_the_cross_backend_interaction_is_computed_on_two_real_engines(run_folder):
    pt = read(run_folder, "eta_per_talk.csv").set_index(["backend", "realization", "condition", "talk_id"])["eta_s"]
    inter = read(run_folder, "eta.interaction.csv")
    per_talk = read(run_folder, "eta_per_talk.interaction.csv")
    assert len(inter) == 2 * 4 and set(inter["backend1"]) == {"piper:en_US-joe-medium"}  # realizations × rules
    assert set(inter["backend2"]) == {"espeak:en-us"} and (inter["n_talks"] == 1).all()
    for row in per_talk.itertuples():  # η(Piper) − η(eSpeak NG) by hand from the η table
        by_hand = pt[("piper:en_US-joe-medium", row.realization, row.condition, row.talk_id)] - \
            pt[("espeak:en-us", row.realization, row.condition, row.talk_id)]
        assert abs(row.interaction_s - by_hand) <= TOL
    assert close(inter["interaction_s"], inter["eta1_s"] - inter["eta2_s"])  # one talk: the mean is that talk
    assert close(inter["interaction_s"], inter["duration_part_s"] + inter["idle_part_s"])
    # the report the run wrote shows the same numbers as its Table 7, both engines in the signature
    table = read(run_folder, "report/tables/table07_interaction.csv")
    both = table.merge(inter, on=["realization", "condition"], suffixes=("", "_eta"))
    assert len(both) == len(table) == len(inter) and close(both["interaction_s"], both["interaction_s_eta"])
    assert table["signature"].str.contains("backend:piper:en_US-joe-medium − espeak:en-us", regex=False).all()
    assert "### Cross-backend interaction η(B1) − η(B2)" in (run_folder / "report" / "report.md").read_text()
    for name in ("manifest.backend1.parquet", "manifest.backend2.parquet"):  # each engine's own manifest
        assert pd.read_parquet(run_folder / name)["backend"].nunique() == 1
