"""Piper's two noises, the ``durations=fixed`` and ``deterministic`` presets and their reuse
rule, on real Piper (en_US-joe-medium).

``noise_w_scale`` carries the duration noise and ``noise_scale`` the waveform noise: with
``noise_w_scale=0`` two syntheses of the same text have the same sample count while their
samples differ; with both at 0 the samples repeat. onnxruntime seeds the noise generator of a
session when it is created (each Piper load draws that seed from the OS) and advances it with
every request, so the two syntheses of a text here follow each other on one session
(test_piper_realizations: two loads in one process).
"""

import numpy as np
import pandas as pd
import pytest

from simulplay.backends import parse_backend
from simulplay.core.errors import InputError
from simulplay.synthesis.request import synthesize_request
from simulplay.traces import write_trace
from simulplay.traces.model import frame_from_streams
from tests.support.factories import stream
from tests.support.synth import synth

# a module fixture of real runs takes seconds: every test here counts as slow (make test-fast leaves them out)
pytestmark = pytest.mark.slow

THREADS = "intra_op_threads=1"
SPECS = {"paper": f"piper:{THREADS}", "durations=fixed": f"piper:{THREADS},durations=fixed",
         "deterministic": f"piper:{THREADS},deterministic"}
TEXTS = ("Good morning, everyone.", "The bridge was built in two years.", "How are you today?",
         "We measured it again, and then once more.")
#: the identity's settings under the paper's noises: the same keys as before the presets existed
PAPER_SETTING_KEYS = {"length_scale", "noise_scale", "noise_w_scale", "normalize", "volume", "speaker_id",
                      "intra_op_threads", "inter_op_threads", "execution_mode"}


def three_times(spec: str) -> list[list[np.ndarray]]:
    """Every text synthesized, then every text again and a third time, on one loaded backend."""
    backend = parse_backend(spec).create()
    backend.load()
    return [[synthesize_request(backend, t)[0] for t in TEXTS] for _ in range(3)]


@pytest.fixture(scope="module")
def runs():
    return {name: three_times(spec) for name, spec in SPECS.items()}


def test_paper_settings_draw_new_durations_every_run(runs):
    # noise_w_scale 0.8: two syntheses of one of these texts have the same length about 1 time in 12
    # (measured, 10 syntheses each), so 3 of them agree for 3 of the 4 texts about once in 10^6
    lengths = [{len(run[i]) for run in runs["paper"]} for i in range(len(TEXTS))]
    assert sum(len(n) > 1 for n in lengths) >= 2, lengths


def test_durations_fixed_repeats_sample_counts_but_not_samples(runs):
    a, b, c = runs["durations=fixed"]
    assert [len(x) for x in a] == [len(y) for y in b] == [len(z) for z in c]
    assert all(len(x) > 0 for x in a)
    assert not any(np.array_equal(x, y) for x, y in zip(a, b))  # noise_scale 0.667 still shapes the waveform


def test_deterministic_repeats_samples(runs):
    a, b, c = runs["deterministic"]
    assert all(np.array_equal(x, y) and np.array_equal(x, z) and len(x) > 0 for x, y, z in zip(a, b, c))


def test_presets_set_the_noises_and_keep_the_other_settings():
    fixed = parse_backend("piper:durations=fixed,length_scale=1.1")
    assert (fixed.noise_w_scale, fixed.noise_scale, fixed.length_scale) == (0.0, 0.667, 1.1)
    det = parse_backend("piper:deterministic,intra_op_threads=2")
    assert (det.noise_w_scale, det.noise_scale, det.intra_op_threads, det.durations) == (0.0, 0.0, 2, "fixed")
    assert parse_backend("piper:deterministic=true,intra_op_threads=2") == det
    for config in (fixed, det, parse_backend("piper")):
        assert parse_backend(config.spec()) == config  # the canonical string rebuilds the preset
    assert "durations" not in parse_backend("piper").spec()  # paper settings: canonical string unchanged


@pytest.mark.parametrize("spec,fragment", [
    ("piper:durations=fixed,noise_w_scale=0.5", "durations=fixed sets noise_w_scale=0; drop noise_w_scale=0.5"),
    ("piper:deterministic,noise_scale=0.3", "deterministic sets noise_scale=0; drop noise_scale=0.3"),
    ("piper:durations=random", "'durations=random' is not one of sampled, fixed"),
    ("piper:deterministic=maybe", "'deterministic=maybe' is not a bool"),
])
def test_contradicting_presets_are_refused(spec, fragment):
    with pytest.raises(InputError, match=fragment):
        parse_backend(spec)


def test_contradicting_preset_on_the_command_line_is_one_line_and_exit_2(cli, tmp_path):
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"talk_id": "t", "system": "A", "source_s": 3, "updates": [{"time_s": 0, "text": "Hi."}]}\n')
    proc = cli("synth", trace, "--rule", "immediate", "--backend", "piper:durations=fixed,noise_w_scale=0.5",
               "--store", tmp_path / "s", "--out", tmp_path / "m.parquet")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and "durations=fixed sets noise_w_scale=0" in proc.stderr
    assert not (tmp_path / "m.parquet").exists() and not (tmp_path / "s").exists()


def test_identity_records_the_preset_and_paper_identity_is_unchanged():
    paper = parse_backend(SPECS["paper"]).create().identity()
    assert set(paper["settings"]) == PAPER_SETTING_KEYS and "preset" not in paper
    fixed = parse_backend(SPECS["durations=fixed"]).create().identity()
    assert fixed["preset"] == "durations=fixed" and fixed["settings"]["noise_w_scale"] == 0.0
    assert set(fixed["settings"]) == PAPER_SETTING_KEYS
    assert parse_backend(SPECS["deterministic"]).create().identity()["preset"] == "deterministic"


def same_requests():
    """Two talks' worth of requests; immediate and timer:w=0 make identical requests."""
    return [stream([0.0, 1.5], ["Same words here.", "Other words, please."], talk_id="t1", system="A", source_s=4.0),
            stream([0.5], ["Hello again."], talk_id="t1", system="F", source_s=4.0)]


def synth_same(spec, store, out, realizations=2):
    """The repeated requests (:func:`same_requests`) under immediate and timer:w=0."""
    return synth(same_requests(), store, out, backend=spec, rules=("immediate", "timer:w=0"),
                 realizations=realizations)


@pytest.mark.parametrize("preset", ["deterministic", "durations=fixed"])
def test_presets_reuse_identical_requests_across_conditions_and_realizations(tmp_path, cli, preset):
    res = synth_same(SPECS[preset], tmp_path / "s1", tmp_path / "m1.parquet")
    m = res.manifest
    assert res.stats.synthesized == m["text"].nunique() == 3  # one synthesis per text for 12 rows
    assert m.loc[m["realization"] == 1, "reused"].all()
    assert res.signature["reuse"] == "always" and res.signature["preset"] == preset
    assert res.signature.get("waveforms") == ("may differ" if preset == "durations=fixed" else None)
    # what the reuse stands for holds in another process (another run): the same sample counts,
    # and under deterministic the same samples (the store is content-addressed: the same audio_key)
    trace = tmp_path / "t.parquet"
    write_trace(frame_from_streams(same_requests()), trace, {"table": "trace"})
    cli("synth", trace, "--rule", "immediate", "--rule", "timer:w=0", "--backend", SPECS[preset],
        "--store", tmp_path / "s2", "--out", tmp_path / "m2.parquet", "--quiet", check=True, subprocess=True)
    again = pd.read_parquet(tmp_path / "m2.parquet").set_index(["condition", "system", "seq"]).sort_index()
    first = m[m["realization"] == 0].set_index(["condition", "system", "seq"]).sort_index()
    assert (first["n_samples"].to_numpy() == again["n_samples"].to_numpy()).all()
    same_audio = first["audio_key"].to_numpy() == again["audio_key"].to_numpy()
    assert same_audio.all() if preset == "deterministic" else not same_audio.any()


def test_paper_settings_synthesize_each_realization_afresh(tmp_path):
    res = synth_same(SPECS["paper"], tmp_path / "s", tmp_path / "m.parquet", realizations=3)
    m = res.manifest
    assert res.stats.synthesized == 3 * m["text"].nunique()
    assert res.signature["reuse"] == "same-realization" and "preset" not in res.signature
    lengths = m.drop_duplicates(["realization", "text"]).groupby("text")["n_samples"].nunique()
    assert (lengths > 1).any()  # new durations in a later realization (3 short texts × 3 draws)


def test_demo_refuses_a_contradicting_preset_before_synthesis(cli, tmp_path):
    proc = cli("demo", "--out-dir", tmp_path / "demo", "--piper", "durations=fixed,noise_w_scale=0.5", "--quiet")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "durations=fixed sets noise_w_scale=0" in proc.stderr and proc.stderr.strip().count("\n") == 0
    assert not (tmp_path / "demo").exists()
    proc = cli("demo", "--realizations", "0", "--out-dir", tmp_path / "demo")
    assert proc.returncode == 2 and "--realizations" in proc.stderr and not (tmp_path / "demo").exists()


@pytest.mark.parametrize("setting,preset", [({"deterministic": True}, "deterministic"),
                                            ({"durations": "fixed"}, "durations=fixed")])
def test_experiment_files_name_the_presets_as_backend_settings(tmp_path, setting, preset):
    from simulplay.workflows.experiment import load_experiment
    from tests.support.factories import write_experiment

    path = write_experiment(tmp_path, "e.toml", rules=["immediate"], backend={"name": "piper", **setting})
    assert load_experiment(path).backends[0].preset() == preset  # parsed once, at load
