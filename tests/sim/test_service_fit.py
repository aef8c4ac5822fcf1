"""The fitted clock, ``--service fit``: a least-absolute-deviations fit of
service_s on audio_s and text characters per backend and realization, replayed as a
modelled clock.

Expected coefficients come from the data's construction (known plane plus outliers) and
from a brute-force search that does not use the solver: a least-absolute-deviations fit
with p coefficients has an optimum passing through p of the points, so the best plane
through any 3 points is the optimum."""

from itertools import combinations

import numpy as np
import pandas as pd
import pytest

from simulplay.core.errors import InputError
from simulplay.manifest import validate_manifest
from simulplay.sim import replay
from simulplay.sim.servicefit import fit_panel, lad
from simulplay.sim.variants import Fit, parse_service, parse_variant
from tests.support.checks import assert_one_line_error

B0, B1, B2 = 0.1, 0.5, 0.01  # s, s per audio second, s per character


def _brute_lad(x, y):
    best = (np.inf, None)
    for rows in combinations(range(len(y)), x.shape[1]):
        sub = x[list(rows)]
        if abs(np.linalg.det(sub)) < 1e-12:
            continue
        b = np.linalg.solve(sub, y[list(rows)])
        obj = float(np.abs(y - x @ b).sum())
        best = min(best, (obj, tuple(b)), key=lambda t: t[0])
    return best


def test_lad_recovers_a_known_plane_through_gross_outliers():
    rng = np.random.default_rng(7)
    audio = rng.uniform(0.2, 6.0, 60)
    chars = rng.integers(2, 200, 60).astype(float)
    service = B0 + B1 * audio + B2 * chars
    slow = rng.choice(60, 8, replace=False)
    service[slow] += rng.uniform(1.0, 5.0, 8)  # requests timed on a busy machine
    fit = fit_panel(audio, chars, service)
    assert fit.coef == pytest.approx((B0, B1, B2), abs=1e-9)
    assert fit.n == 60 and fit.fitted == ("intercept_s", "per_audio_s", "per_char_s")
    # ordinary least squares, for contrast, is pulled away by the same outliers
    ols = np.linalg.lstsq(np.column_stack([np.ones(60), audio, chars]), service, rcond=None)[0]
    assert abs(ols[0] - B0) > 0.05


def test_lad_matches_the_brute_force_optimum_on_noisy_data():
    rng = np.random.default_rng(3)
    x = np.column_stack([np.ones(11), rng.uniform(0, 4, 11), rng.uniform(0, 80, 11)])
    y = x @ np.array([0.05, 0.3, 0.002]) + rng.normal(0, 0.05, 11)
    beta, obj = lad(x, y)
    best_obj, best_b = _brute_lad(x, y)
    assert obj == pytest.approx(best_obj, abs=1e-9)
    assert float(np.abs(y - x @ beta).sum()) == pytest.approx(best_obj, abs=1e-9)
    assert tuple(beta) == pytest.approx(best_b, abs=1e-7)


def test_a_constant_regressor_is_left_out():
    audio = np.array([1.0, 2.0, 3.0, 4.0])
    fit = fit_panel(audio, np.full(4, 12.0), 0.2 + 0.4 * audio)
    assert fit.fitted == ("intercept_s", "per_audio_s")
    assert fit.coef == pytest.approx((0.2, 0.4, 0.0), abs=1e-9)
    assert "chars not fitted" in fit.describe()


def _manifest(outlier=5.0, realization=None):
    """Two outputs, service on the plane B0 + B1·audio + B2·chars except one outlier."""
    reqs = {("t1", "A", "immediate"): [(0.0, 1.0, "abcd"), (0.5, 2.0, "abcdefghij"), (3.0, 0.5, "ab")],
            ("t1", "F", "immediate"): [(0.0, 1.5, "abcdef"), (1.0, 1.0, "abc"), (2.0, 3.0, "a" * 20)]}
    rows = []
    for (talk, system, cond), rs in reqs.items():
        for i, (d, a, text) in enumerate(rs):
            rows.append({"talk_id": talk, "system": system, "condition": cond, "seq": i, "dispatch_s": d,
                         "service_s": B0 + B1 * a + B2 * len(text), "audio_s": a, "source_s": 4.0, "text": text})
    df = pd.DataFrame(rows)
    df.loc[4, "service_s"] = outlier  # F's second request: 0.63 s on the plane
    if realization is not None:
        df["realization"] = realization
    return df


def test_replay_under_the_fitted_clock_by_hand():
    res = replay(validate_manifest(_manifest(), "m"), service=parse_service("fit"))
    s = res.summary.set_index("system")
    # predicted service = the plane: A 0.64, 1.20, 0.37; F 0.91, 0.63 (not the measured 5.0), 1.80.
    # A: ready 0.64, 1.84, 3.37 → plays 0.64–1.64, 1.84–3.84, 3.84–4.34; idle 0.64 + 0.20
    # F: ready 0.91, 1.63, 3.80 → plays 0.91–2.41, 2.41–3.41, 3.80–6.80; idle 0.91 + 0.39
    assert s.loc["A", "end_s"] == pytest.approx(4.34, abs=1e-6)
    assert s.loc["A", "idle_s"] == pytest.approx(0.84, abs=1e-6)
    assert s.loc["F", "end_s"] == pytest.approx(6.80, abs=1e-6)
    assert s.loc["F", "idle_s"] == pytest.approx(1.30, abs=1e-6)
    assert s.loc["F", "first_play_s"] == pytest.approx(0.91, abs=1e-6)
    measured = replay(validate_manifest(_manifest(), "m")).summary.set_index("system")
    # measured: F's second request starts at 1.0 and takes 5.0; the third starts at 6.0,
    # is ready at 6.0 + 1.80 and plays its 3.0 s
    assert measured.loc["F", "end_s"] == pytest.approx(1.0 + 5.0 + 1.80 + 3.0, abs=1e-6)
    sig = res.signatures[0]
    assert sig["service"] == "fit"
    assert sig["fit"].startswith("modelled clock: LAD on 6 requests, service_s = 0.1 s + 0.5·audio_s + 0.01 s·chars")


def test_one_fit_per_realization_each_in_its_outputs_signature():
    slow = _manifest(outlier=0.63)
    slow["service_s"] *= 2  # realization 1: everything twice as slow
    both = pd.concat([_manifest(outlier=0.63, realization=0), slow.assign(realization=1)], ignore_index=True)
    res = replay(validate_manifest(both, "m"), service=parse_service("fit"))
    by_r = {r: {s["fit"] for s, rr in zip(res.signatures, res.summary["realization"]) if rr == r} for r in ("0", "1")}
    assert by_r["0"] == {"modelled clock: LAD on 6 requests, service_s = 0.1 s + 0.5·audio_s + 0.01 s·chars"}
    assert by_r["1"] == {"modelled clock: LAD on 6 requests, service_s = 0.2 s + 1·audio_s + 0.02 s·chars"}


def test_chunk_offsets_scale_with_their_request_under_the_fit():
    m = validate_manifest(_manifest(), "m")
    chunks = pd.DataFrame([{"talk_id": r.talk_id, "system": r.system, "condition": r.condition, "seq": r.seq,
                            "chunk": 0, "ready_offset_s": r.service_s / 2, "audio_s": r.audio_s}
                           for r in m.itertuples()])
    res = replay(m, service=parse_service("fit"), release="chunk", chunks=chunks)
    # one chunk per request at half its measured time → at half its predicted time under the fit:
    # F's requests start at 0, 1.0, 2.0 (the clock runs on predicted times) and are ready at
    # 0 + 0.455, 1.0 + 0.315, 2.0 + 0.90
    parts = res.parts[res.parts["system"] == "F"]
    assert parts["ready_s"].tolist() == pytest.approx([0.455, 1.315, 2.90], abs=1e-6)


def test_fit_is_a_registered_service_model_and_experiment_variant():
    assert isinstance(parse_service("fit"), Fit)
    v = parse_variant("service=fit", source="e.toml", key="analysis.variants")
    assert isinstance(v.service, Fit)


def test_too_few_requests_to_fit():
    m = validate_manifest(_manifest().iloc[:2], "m.csv")
    with pytest.raises(InputError, match=r"m.csv, field 'service_s': service model 'fit' has 2 request\(s\)"):
        replay(m, service=parse_service("fit"), source="m.csv", allow_incomplete=True)


@pytest.mark.slow


def test_replay_cli_with_the_fitted_clock(tmp_path, cli):
    _manifest().to_csv(tmp_path / "m.csv", index=False)
    proc = cli("replay", tmp_path / "m.csv", "--service", "fit", "--out", tmp_path / "s.parquet")
    assert proc.returncode == 0, proc.stderr
    s = pd.read_parquet(tmp_path / "s.parquet").set_index("system")
    assert s.loc["F", "end_s"] == pytest.approx(6.80, abs=1e-6)
    bad = cli("replay", tmp_path / "m.csv", "--service", "fitted", "--out", tmp_path / "s2.parquet")
    assert_one_line_error(bad, "--service 'fitted'", "unknown service model", "fit (a modelled clock)")


def test_a_replay_does_not_import_scipys_optimizer_until_it_fits():
    """Only service=fit needs SciPy's optimizer (about half a second to import): a fresh
    process that imports replay, or replays with the measured clock, has not loaded it."""
    import subprocess
    import sys

    code = ("import sys, simulplay.sim.replay, simulplay.sim.variants; "
            "print('scipy.optimize' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
