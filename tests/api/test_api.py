"""The Python API as a notebook user calls it: ``simulplay.read_trace``, ``group``,
``synthesize``, ``replay``, ``eta``, ``bootstrap``, ``load_run`` and ``sweep``, each
returning a result object that holds its tables and their signatures.

Expected values come from outside the API: hand computations written out in the tests,
the bundled trace file read with ``json``, and the command line's own output on the same
files (compared to the bit, signatures included).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from importlib.resources import files
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import simulplay
from simulplay.api import SignedTable
from simulplay.core.errors import InputError
from simulplay.core.tables import read_table, stored_signatures, write_table
from tests.support import cli

SAMPLE = files("simulplay.sample_traces") / "sample_traces.jsonl"


def run_cli(*args) -> subprocess.CompletedProcess:
    """The `simulplay` command (its console entry point, in this process); fails the test on an error."""
    return cli.run_cli(*args, check=True)


def cli_table(path: Path) -> tuple[pd.DataFrame, list[dict]]:
    df, meta = read_table(path)
    return df, stored_signatures(meta, len(df))


def same_table(api: pd.DataFrame, signatures, path: Path, drop: tuple[str, ...] = ()) -> None:
    """``api`` equals the table the command wrote at ``path`` to the bit, and ``signatures``
    the row signatures stored with it."""
    cli, sigs = cli_table(path)
    pd.testing.assert_frame_equal(api, cli.drop(columns=list(drop)), check_exact=True)
    assert list(signatures) == sigs


# ---- read_trace ------------------------------------------------------------------------


def test_read_trace_of_the_bundled_sample_traces():
    lines = [json.loads(x) for x in SAMPLE.read_text(encoding="utf-8").splitlines() if x.strip()]
    result = simulplay.read_trace(SAMPLE)
    trace = result.table
    counts = trace.groupby(["talk_id", "system"], sort=False).size()
    assert counts.to_dict() == {(x["talk_id"], x["system"]): len(x["updates"]) for x in lines}
    assert trace["time_s"].tolist() == [u["time_s"] for x in lines for u in x["updates"]]
    sha = hashlib.sha256(SAMPLE.read_bytes()).hexdigest()[:12]
    assert result.signature["trace"] == [f"sample_traces.jsonl@{sha}"]
    assert result.paths == (str(SAMPLE),)
    pd.testing.assert_frame_equal(result.to_frame(), trace)


def test_read_trace_of_two_files_refuses_a_stream_in_both(tmp_path):
    one = pd.DataFrame({"talk_id": ["t1"], "system": ["A"], "seq": [0], "time_s": [1.0], "text": ["hi"],
                        "source_s": [5.0]})
    one.to_csv(tmp_path / "a.csv", index=False)
    one.to_csv(tmp_path / "b.csv", index=False)
    assert len(simulplay.read_trace([tmp_path / "a.csv"]).table) == 1
    with pytest.raises(InputError, match=r"stream \(talk_id=t1, system=A\) is also in"):
        simulplay.read_trace([tmp_path / "a.csv", tmp_path / "b.csv"])


# ---- group -----------------------------------------------------------------------------

# A hand-made stream: updates at 0.5, 1.5 and 3.0 s of a 6 s talk.
HAND_TRACE = pd.DataFrame({"talk_id": "t1", "system": "A", "seq": [0, 1, 2], "time_s": [0.5, 1.5, 3.0],
                           "text": ["Good morning.", "We begin now.", "Thank you."], "source_s": 6.0})


def test_group_by_hand():
    """timer:w=2: the update at 0.5 s opens a deadline at 2.5 s; the one at 1.5 s joins;
    3.0 s is after it, so the group leaves at 2.5 s (timer) and the last update alone at
    3.0 s (end of stream). immediate: one request per update at its time."""
    result = simulplay.group(HAND_TRACE, ["timer:w=2", "immediate"])
    requests = result.table
    timer = requests[requests["condition"] == "timer:w=2"]
    assert timer["text"].tolist() == ["Good morning. We begin now.", "Thank you."]
    assert timer["dispatch_s"].tolist() == [2.5, 3.0]
    assert timer["trigger"].tolist() == ["timer", "eos"]
    immediate = requests[requests["condition"] == "immediate"]
    assert immediate["dispatch_s"].tolist() == [0.5, 1.5, 3.0]
    assert [s["rule"] for s in result.signatures] == ["timer:w=2"] * 2 + ["immediate"] * 3
    assert result.signature["rule"] == ["timer:w=2", "immediate"]


def test_group_equals_the_command_on_the_sample_traces(tmp_path):
    run_cli("group", SAMPLE, "--rule", "punct", "--rule", "timer:w=4", "--max-chars", "60",
            "--out", tmp_path / "requests.parquet")
    api = simulplay.group(SAMPLE, ["punct", "timer:w=4"], max_chars=60)
    same_table(api.table, api.signatures, tmp_path / "requests.parquet")
    again = simulplay.group(simulplay.read_trace(SAMPLE), ["punct", "timer:w=4"], max_chars=60)
    assert again.table.equals(api.table) and again.signatures == api.signatures


# ---- replay and eta on a hand-made manifest ---------------------------------------------


def hand_manifest() -> pd.DataFrame:
    """Two talks, translators A and F, conditions immediate and timer:w=4; one row per
    request: (dispatch_s, service_s, audio_s)."""
    outputs = {
        ("t1", "A", "immediate"): [(1, 0.5, 2), (2, 0.5, 1)], ("t1", "F", "immediate"): [(1, 1.0, 3)],
        ("t1", "A", "timer:w=4"): [(5, 1.0, 3)], ("t1", "F", "timer:w=4"): [(5, 0.5, 3)],
        ("t2", "A", "immediate"): [(0, 1.0, 2)], ("t2", "F", "immediate"): [(0, 1.0, 2)],
        ("t2", "A", "timer:w=4"): [(4, 1.0, 2)], ("t2", "F", "timer:w=4"): [(4, 0.5, 3)],
    }
    source = {"t1": 10.0, "t2": 8.0}
    return pd.DataFrame([{"talk_id": t, "system": s, "condition": c, "seq": k, "dispatch_s": float(d),
                          "service_s": float(v), "audio_s": float(a), "source_s": source[t]}
                         for (t, s, c), reqs in outputs.items() for k, (d, v, a) in enumerate(reqs)])


def test_replay_and_eta_by_hand():
    """Serial synthesizer, then serial playback; L = end − source.

    t1 A immediate: ready 1.5 and 2.5; plays 1.5–3.5, 3.5–4.5: L = −5.5 (D 3, I 1.5).
    t1 F immediate: ready 2, plays 2–5: L = −5 (D 3, I 2).        δ_ref(t1) = −0.5
    t1 A timer:     ready 6, plays 6–9: L = −1 (D 3, I 6).
    t1 F timer:     ready 5.5, plays 5.5–8.5: L = −1.5 (D 3, I 5.5).  δ(t1) = 0.5, η = 1.0
      duration part (3−3) − (3−3) = 0, idle part (6−1.5) − (5.5−2) = 1.0
    t2 A and F immediate: ready 1, plays 1–3: L = −5 each.          δ_ref(t2) = 0
    t2 A timer: ready 5, plays 5–7: L = −1 (D 2, I 5); F timer: ready 4.5, plays 4.5–7.5:
      L = −0.5 (D 3, I 4.5).                                         δ(t2) = −0.5, η = −0.5
      duration part (2−2) − (3−2) = −1, idle part (5−1) − (4.5−1) = 0.5
    Means over the two talks: η 0.25, δ_ref −0.25, δ 0, duration part −0.5, idle part 0.75.
    Bootstrap means of two talks are 1.0 (both draws t1, p = 1/4), 0.25 (p = 1/2) or −0.5
    (p = 1/4): of 10,000 sorted means the 250th is −0.5 and the 9,751st is 1.0.
    """
    replayed = simulplay.replay(hand_manifest())
    by_output = replayed.summary.set_index(["talk_id", "system", "condition"])
    assert by_output["offset_s"].to_dict() == {
        ("t1", "A", "immediate"): -5.5, ("t1", "F", "immediate"): -5.0, ("t1", "A", "timer:w=4"): -1.0,
        ("t1", "F", "timer:w=4"): -1.5, ("t2", "A", "immediate"): -5.0, ("t2", "F", "immediate"): -5.0,
        ("t2", "A", "timer:w=4"): -1.0, ("t2", "F", "timer:w=4"): -0.5}
    assert by_output.loc[("t1", "A", "immediate"), ["first_play_s", "audio_s", "idle_s", "end_s"]].tolist() == [
        1.5, 3.0, 1.5, 4.5]
    assert len(replayed.signatures) == 8 and replayed.signature["service"] == "measured"

    result = simulplay.eta(replayed, a="A", f="F", reference="immediate")
    table = result.to_frame()
    row = table.iloc[0]
    assert row["condition"] == "timer:w=4" and row["n_talks"] == 2
    assert [row[c] for c in ("eta_s", "delta_ref_s", "delta_s", "duration_part_s", "idle_part_s")] == [
        0.25, -0.25, 0.0, -0.5, 0.75]
    assert (row["n_negative"], row["n_positive"]) == (1, 1)
    assert (row["ci_low_s"], row["ci_high_s"]) == (-0.5, 1.0)
    assert result.signatures[0]["draws"] == 10_000 and "small panel" in result.notes[0]
    assert result.per_talk.set_index("talk_id")["eta_s"].to_dict() == {"t1": 1.0, "t2": -0.5}
    assert result.contrasts.empty and result.interaction is None and result.excluded == ()


def test_replay_with_zero_service_by_hand():
    """service=zero: every request is ready at its dispatch. t1 A immediate plays 1–3 and
    3–4: end 4, L = −6, no idle after the initial wait of 1 s."""
    replayed = simulplay.replay(hand_manifest(), service="zero")
    first = replayed.summary.iloc[0]
    assert (first["talk_id"], first["system"], first["condition"]) == ("t1", "A", "immediate")
    assert (first["end_s"], first["offset_s"], first["idle_s"]) == (4.0, -6.0, 1.0)
    parts = replayed.parts
    assert parts.iloc[:2][["ready_s", "play_s", "end_s"]].to_numpy().tolist() == [[1.0, 1.0, 3.0], [2.0, 3.0, 4.0]]
    assert replayed.part_signatures[0]["service"] == "zero" and len(replayed.part_signatures) == len(parts)


def random_manifest(n_talks: int = 6, seed: int = 3) -> pd.DataFrame:
    """Made-up request clocks: two translators under three conditions, fewer and later
    requests under the buffered ones."""
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(n_talks):
        source = float(rng.uniform(30, 60))
        for system, n in (("A", 12), ("F", 8)):
            times = np.sort(rng.uniform(0.5, source, n))
            for cond, size in (("immediate", 1), ("timer:w=4", 3), ("punct:cap=2,min_words=3", 2)):
                for seq, start in enumerate(range(0, n, size)):
                    rows.append({"talk_id": f"talk{t}", "system": system, "condition": cond, "seq": seq,
                                 "dispatch_s": float(times[min(start + size, n) - 1]) + 0.25 * (size > 1),
                                 "service_s": float(rng.uniform(0.05, 0.4)), "audio_s": float(rng.uniform(0.5, 3)),
                                 "source_s": source})
    return pd.DataFrame(rows)


@pytest.mark.slow


def test_replay_and_eta_equal_the_commands_to_the_bit(tmp_path):
    manifest = random_manifest()
    common = {"table": "manifest", "backend": "hand-made", "version": f"simulplay-{simulplay.__version__}"}
    write_table(manifest, tmp_path / "m.parquet", [{**common, "rule": c} for c in manifest["condition"]],
                kind="manifest", extra_meta={"signature": common})
    run_cli("replay", tmp_path / "m.parquet", "--service", "scale=0.5", "--out", tmp_path / "s.parquet")
    summary = simulplay.replay(tmp_path / "m.parquet", service="scale=0.5")
    same_table(summary.summary, summary.signatures, tmp_path / "s.parquet")
    from_table = simulplay.replay(SignedTable(manifest, signature=common), service="scale=0.5")
    pd.testing.assert_frame_equal(from_table.summary, summary.summary, check_exact=True)
    pd.testing.assert_frame_equal(from_table.parts, summary.parts, check_exact=True)
    assert (from_table.signatures, from_table.signature) == (summary.signatures, summary.signature)

    run_cli("eta", tmp_path / "s.parquet", "--a", "A", "--f", "F", "--reference", "immediate", "--draws", "500",
            "--seed", "0", "--contrast", "punct,timer:w=4", "--out", tmp_path / "e.parquet",
            "--per-talk", tmp_path / "pt.parquet", "--contrast-out", tmp_path / "c.parquet")
    options = {"a": "A", "f": "F", "reference": "immediate", "draws": 500, "seed": 0, "contrasts": ["punct,timer:w=4"]}
    for source in (tmp_path / "s.parquet", summary):
        eta = simulplay.eta(source, **options)
        same_table(eta.eta, eta.signatures, tmp_path / "e.parquet", drop=("signature",))
        same_table(eta.per_talk, eta.per_talk_signatures, tmp_path / "pt.parquet")
        same_table(eta.contrasts, eta.contrast_signatures, tmp_path / "c.parquet", drop=("signature",))
    assert all(s["boot_seed"] == 0 and s["draws"] == 500 for s in eta.signatures)  # a seed of 0 is a seed


def test_the_interaction_tables_equal_the_commands(tmp_path):
    """Two backends' summaries in one table: eta(interaction=…) holds the interaction and
    its per-talk rows that `simulplay eta --interaction` writes, signatures included."""
    one, two = random_manifest(seed=3), random_manifest(seed=4)
    manifest = pd.concat([one.assign(backend="b1"), two.assign(backend="b2", source_s=one["source_s"])],
                         ignore_index=True)
    replayed = simulplay.replay(manifest)
    replayed.to_frame().to_csv(tmp_path / "s.csv", index=False)
    run_cli("eta", tmp_path / "s.csv", "--a", "A", "--f", "F", "--reference", "immediate", "--draws", "300",
            "--interaction", "b1,b2", "--out", tmp_path / "e.parquet", "--interaction-out", tmp_path / "i.parquet",
            "--interaction-per-talk", tmp_path / "ipt.parquet")
    eta = simulplay.eta(tmp_path / "s.csv", a="A", f="F", reference="immediate", draws=300, interaction=["b1,b2"])
    same_table(eta.interaction, eta.interaction_signatures, tmp_path / "i.parquet", drop=("signature",))
    same_table(eta.interaction_per_talk, eta.interaction_per_talk_signatures, tmp_path / "ipt.parquet")
    assert eta.interaction["condition"].tolist() == ["timer:w=4", "punct:cap=2,min_words=3"]
    # by hand from the per-talk η rows: η(b1) − η(b2) per talk, then the mean over the six talks
    pt = eta.per_talk.set_index(["backend", "condition", "talk_id"])["eta_s"].sort_index()
    diff = pt.loc["b1", "timer:w=4"] - pt.loc["b2", "timer:w=4"]
    assert eta.interaction.loc[0, "interaction_s"] == pytest.approx(diff.mean(), abs=1e-12)


def test_a_filtered_replay_keeps_its_rows_signatures():
    """rows() filters a result and its signatures together; η of the filtered result is
    signed by its rows, and a plain DataFrame of the same rows gives the same numbers unsigned."""
    replayed = simulplay.replay(random_manifest())
    kept = replayed.rows(replayed.summary["condition"] != "timer:w=4")
    assert set(kept.summary["condition"]) == set(kept.parts["condition"]) == {"immediate", "punct:cap=2,min_words=3"}
    assert len(kept.signatures) == len(kept.summary) == 24 and len(kept.part_signatures) == len(kept.parts)
    assert [s["rule"] for s in kept.signatures] == kept.summary["condition"].tolist()
    eta = simulplay.eta(kept, a="A", f="F", reference="immediate", draws=100)
    assert eta.eta["condition"].tolist() == ["punct:cap=2,min_words=3"]
    assert eta.signatures[0]["rule"] == "punct:cap=2,min_words=3" and eta.signatures[0]["service"] == "measured"
    plain = simulplay.eta(kept.to_frame(), a="A", f="F", reference="immediate", draws=100)
    assert plain.eta[["eta_s", "ci_low_s"]].equals(eta.eta[["eta_s", "ci_low_s"]])
    assert "service" not in plain.signatures[0]


def test_results_are_frozen_and_to_frame_is_a_copy():
    import dataclasses

    eta = simulplay.eta(simulplay.replay(hand_manifest()), a="A", f="F", reference="immediate", draws=100)
    with pytest.raises(dataclasses.FrozenInstanceError):
        eta.eta = None
    frame = eta.to_frame()
    frame.loc[0, "eta_s"] = 99.0
    assert eta.eta.loc[0, "eta_s"] == 0.25


# ---- bootstrap --------------------------------------------------------------------------


def test_bootstrap_by_hand():
    """Two talks at −1 and +1 s under p, both at 2 s under q: p's bootstrap means are −1
    (p = 1/4), 0 (p = 1/2) or 1 (p = 1/4), so the 250th and 9,751st of 10,000 sorted means
    are −1 and 1; the mean is 0, one talk below zero and one above. q's interval is [2, 2];
    the pair p − q is −3 or −1 per talk: mean −2, interval [−3, −1], both talks negative."""
    table = pd.DataFrame({"talk_id": ["x", "y", "x", "y"], "panel": ["p", "p", "q", "q"],
                          "gain_s": [-1.0, 1.0, 2.0, 2.0]})
    result = simulplay.bootstrap(table, value="gain_s", by="panel", pair=["p,q"])
    out = result.table
    assert out.columns.tolist() == ["condition", "n_talks", "mean", "ci_low", "ci_high", "n_negative", "n_zero",
                                   "n_positive"]
    assert out.to_dict("records") == [
        {"condition": "p", "n_talks": 2, "mean": 0.0, "ci_low": -1.0, "ci_high": 1.0, "n_negative": 1,
         "n_zero": 0, "n_positive": 1},
        {"condition": "q", "n_talks": 2, "mean": 2.0, "ci_low": 2.0, "ci_high": 2.0, "n_negative": 0,
         "n_zero": 0, "n_positive": 2},
        {"condition": "p − q", "n_talks": 2, "mean": -2.0, "ci_low": -3.0, "ci_high": -1.0, "n_negative": 2,
         "n_zero": 0, "n_positive": 0}]
    assert result.signatures[0]["boot_seed"] == 1032026 and result.signature["value"] == "gain_s"
    assert "small panel" in result.notes[0].lower()


def test_bootstrap_equals_the_bootstrap_command(tmp_path):
    """The API and `simulplay bootstrap --out` give the same table (one implementation)."""
    table = pd.DataFrame({"talk_id": list("abcdef"), "u_s": [0.5, -0.2, 0.9, 0.1, 0.3, -0.4],
                          "w_s": [0.1, 0.2, 0.0, -0.3, 0.2, 0.1]})
    table.to_csv(tmp_path / "t.csv", index=False)
    run_cli("bootstrap", tmp_path / "t.csv", "--value", "u_s,w_s", "--pair", "u_s,w_s", "--draws", "500",
            "--out", tmp_path / "b.csv")
    api = simulplay.bootstrap(table, value=["u_s", "w_s"], pair=["u_s,w_s"], draws=500)
    cli = pd.read_csv(tmp_path / "b.csv").drop(columns="signature", errors="ignore")
    pd.testing.assert_frame_equal(api.to_frame(), cli, check_dtype=False)


def test_bootstrap_of_the_per_talk_table_gives_the_eta_intervals():
    """η's interval is the bootstrap of its per-talk η with the same settings: one index
    matrix over the sorted talks, as eta draws it."""
    summary = simulplay.replay(random_manifest(n_talks=7, seed=11))
    options = {"draws": 2000, "seed": 5, "quantile_method": "linear", "confidence": 0.9}
    result = simulplay.eta(summary, a="A", f="F", reference="immediate", **options)
    eta = result.eta
    shuffled = result.per_talk.sample(frac=1, random_state=0)  # talk order in the table does not matter
    boot_result = simulplay.bootstrap(shuffled, value="eta_s", by="condition", **options)
    boot = boot_result.table.set_index("condition").loc[eta["condition"]]
    for ours, theirs in (("mean", "eta_s"), ("ci_low", "ci_low_s"), ("ci_high", "ci_high_s"),
                         ("n_negative", "n_negative"), ("n_positive", "n_positive")):
        assert boot[ours].tolist() == eta[theirs].tolist(), ours
    assert all(s["quantile"] == "linear" and s["confidence"] == 0.9 for s in boot_result.signatures)


def test_bootstrap_passes_every_option_of_the_library_through():
    """Every field of simulplay.analysis.bootstrap.Bootstrap is a keyword of bootstrap()
    and eta(), under the command line's name (method: quantile_method, rng: bootstrap_rng)."""
    import dataclasses
    import inspect

    from simulplay.analysis.bootstrap import Bootstrap

    api_name = {"method": "quantile_method", "rng": "bootstrap_rng"}
    table = pd.DataFrame({"talk_id": list("abcd"), "v": [0.5, -0.2, 0.9, 0.1]})
    for field in dataclasses.fields(Bootstrap):
        name = api_name.get(field.name, field.name)
        for function in (simulplay.eta, simulplay.bootstrap):
            assert name in inspect.signature(function).parameters, (function.__name__, name)
        value = {"draws": 300, "seed": 0, "method": "nearest", "confidence": 0.8, "rng": "python",
                 "talk_order": "given", "tie_tolerance": 0.05}[field.name]
        out = simulplay.bootstrap(table, value="v", **{name: value})
        boot = Bootstrap(**{field.name: value})
        low, high = boot.interval(np.array([0.5, -0.2, 0.9, 0.1]), boot.indices(4))
        assert (out.table.loc[0, "ci_low"], out.table.loc[0, "ci_high"]) == (low, high), field.name
        assert boot.signature().items() <= out.signatures[0].items()


# ---- synthesize (real Piper) ------------------------------------------------------------


@pytest.mark.slow


def test_synthesize_with_piper_then_replay_equals_the_command(tmp_path):
    """Two talks × two systems of short sentences under immediate and timer:w=2: the
    manifest has one row per request of group() (hand count: A makes 3 immediate and 2
    timer requests per talk, F 2 and 2), durations are whole samples, and replaying the
    returned frame equals `simulplay replay` of the written file, chunk release included."""
    f_updates = [(1.0, "Good morning. We begin now."), (3.5, "Thank you.")]
    rows = [{"talk_id": talk, "system": "F", "seq": i, "time_s": t, "text": x, "source_s": 6.0}
            for talk in ("t1", "t2") for i, (t, x) in enumerate(f_updates)]
    trace = pd.concat([HAND_TRACE, HAND_TRACE.assign(talk_id="t2"), pd.DataFrame(rows)], ignore_index=True)
    rules = ["immediate", "timer:w=2"]
    manifest = simulplay.synthesize(trace, rules, store=tmp_path / "store", out=tmp_path / "m.parquet",
                                    backend="piper:intra_op_threads=1")
    table = manifest.table
    assert len(table) == len(simulplay.group(trace, rules).table) == 2 * (3 + 2 + 2 + 2)
    assert (table["error"] == "").all() and (table["n_samples"] > 0).all()
    assert (table["audio_s"] == table["n_samples"] / table["sample_rate"]).all()
    assert [s["rule"] for s in manifest.signatures] == table["condition"].tolist()
    assert manifest.stats["failed"] == 0 and manifest.signature["backend"].startswith("piper")
    assert manifest.paths == (str(tmp_path / "m.parquet"),)
    assert manifest.chunks == str(tmp_path / "m.chunks.parquet")
    for release in ("request", "chunk"):
        run_cli("replay", tmp_path / "m.parquet", "--release", release, "--out", tmp_path / f"{release}.parquet")
        replayed = simulplay.replay(manifest, release=release)
        same_table(replayed.summary, replayed.signatures, tmp_path / f"{release}.parquet")

    again = simulplay.synthesize(requests=simulplay.group(trace, rules), store=tmp_path / "store",
                                 backend="piper:intra_op_threads=1")
    assert again.stats["synthesized"] == 0  # the same requests: all in the store already
    assert again.table["audio_s"].tolist() == table["audio_s"].tolist()
    assert again.signature["requests"] == "requests.parquet" and again.paths == () and again.chunks is None
    assert [s["requests_rule"] for s in again.signatures] == table["condition"].tolist()  # group's signatures came


# ---- load_run ---------------------------------------------------------------------------


@pytest.mark.slow


def test_load_run_reads_a_run_folder(tmp_path):
    """A run folder as `simulplay run` leaves it (manifest, summary and η tables written by
    the commands, run.json): load_run returns its tables with the rows' signatures, and η
    of the loaded summary equals the folder's η table."""
    run = tmp_path / "run"
    run.mkdir()
    manifest = random_manifest(n_talks=4)
    common = {"table": "manifest", "backend": "hand-made", "version": f"simulplay-{simulplay.__version__}"}
    write_table(manifest, run / "manifest.parquet", [{**common, "rule": c} for c in manifest["condition"]],
                kind="manifest", extra_meta={"signature": common})
    run_cli("replay", run / "manifest.parquet", "--out", run / "summary.parquet")
    run_cli("eta", run / "summary.parquet", "--a", "A", "--f", "F", "--reference", "immediate", "--draws", "400",
            "--out", run / "eta.parquet", "--per-talk", run / "eta_per_talk.csv")
    experiment = {"a": "A", "f": "F", "reference": "immediate", "rules": ["immediate", "timer:w=4", "punct"],
                  "traces": [], "confidence": 0.95}
    (run / "run.json").write_text(json.dumps({"experiment": experiment}), encoding="utf-8")

    loaded = simulplay.load_run(run)
    assert (loaded.a, loaded.f, loaded.reference) == ("A", "F", "immediate")
    summary, sigs = cli_table(run / "summary.parquet")
    pd.testing.assert_frame_equal(loaded.summary.table, summary, check_exact=True)
    assert list(loaded.summary.signatures) == sigs and loaded.summary.paths == (str(run / "summary.parquet"),)
    assert loaded.manifest.signatures[0]["backend"] == "hand-made"
    assert loaded.per_talk.signatures[0]["table"] == "eta"  # matched back to the structured signature
    eta = simulplay.eta(loaded.summary, a=loaded.a, f=loaded.f, reference=loaded.reference, draws=400)
    pd.testing.assert_frame_equal(eta.eta, loaded.eta.table.drop(columns="signature"), check_exact=True)
    assert eta.signatures == loaded.eta.signatures
    assert loaded.contrasts is None and loaded.traces is None and "Trace statistics" in loaded.notes[0]


# ---- sweep ------------------------------------------------------------------------------


@pytest.mark.slow  # the same sweep of a synthetic run (no synthesis) twice, its figures drawn each time: about 8 s
def test_sweep_returns_the_commands_tables_with_their_signatures(tmp_path):
    from tests.support.sweep_runs import synthetic_run

    run = synthetic_run(tmp_path / "run")
    rules = ["timer:w=1..4", "words:n=3,6,cap=3"]
    # the run's durations are linear in characters: the text terms (the phoneme terms are tested in tests/cli)
    proc = run_cli("sweep", run, *(x for r in rules for x in ("--rule", r)), "--out", tmp_path / "cli", "--quiet",
                   "--duration-terms", "text")
    result = simulplay.sweep(run, rules, out=tmp_path / "api", duration_terms="text")
    table = result.to_frame()
    same_table(table, result.signatures, tmp_path / "cli" / "sweep.parquet", drop=("signature",))
    same_table(result.check, result.check_signatures, tmp_path / "cli" / "sweep_check.parquet", drop=("signature",))
    assert table["rule"].tolist() == ["timer:w=1", "timer:w=2", "timer:w=3", "timer:w=4", "words:n=3,cap=3",
                                      "words:n=6,cap=3"]
    assert table["measured"].tolist() == [False, True, False, True, False, False]  # the run's timer:w=2 and w=4
    assert all("modelled" in s["model"] for s in result.signatures)
    assert result.notes[0] in proc.stdout  # the self-check's summary line, as the command prints it
    assert result.models["b_chars"].item() == pytest.approx(0.06, abs=0.005)  # the run's 0.06 s per character
    assert len(result.model_signatures) == len(result.models)
    assert len(result.check_per_talk_signatures) == len(result.check_per_talk) > 0
    assert result.confirmed == () and result.path == str(tmp_path / "api" / "sweep.parquet")
