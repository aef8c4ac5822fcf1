"""Shared-server replay (SPEC §8, docs/many-listeners.md): the outputs of a share group
queue for K workers; FIFO by eligibility, service × slowdown(requests in service)."""

import numpy as np
import pandas as pd
import pytest

from simulplay.core.errors import InputError
from simulplay.core.timebase import to_ns
from simulplay.formats.load import read_load_curve
from simulplay.manifest.validate import validate_manifest
from simulplay.sim import replay
from simulplay.sim.servers import SHARES, Servers, parse_servers, slowdowns
from simulplay.sim.variants import parse_service, parse_variant
from simulplay.workflows.steps import replay_settings
from tests.support.factories import manifest
from tests.support.report_runs import synthetic_manifest

# levels 1, 2, 4 at 0.5, 0.75, 1.25 s: slowdown 1, 1.5, (interpolated) 2.0, 2.5 — binary fractions, exact
CURVE = "concurrency,service_p50_s\n1,0.5\n2,0.75\n4,1.25\n"


def test_the_load_curve_divides_by_the_isolated_median_and_interpolates_between_levels(tmp_path):
    (tmp_path / "c.csv").write_text(CURVE)
    points = read_load_curve(tmp_path / "c.csv")
    assert points == "1:0.5;2:0.75;4:1.25"
    assert slowdowns(points, 4) == [1.0, 1.0, 1.5, 2.0, 2.5]
    assert slowdowns("", 3) == [1.0] * 4
    with pytest.raises(InputError, match="load curve ends at concurrency 4, below the 5 servers"):
        slowdowns(points, 5)


def test_three_outputs_on_two_workers_with_a_slowdown_curve_hand_worked(tmp_path):
    """K = 2, share = panel, slowdown(1) = 1, slowdown(2) = 1.5. Requests (dispatch, service, audio), s:
    A: (0, 2, 1), (1, 1, 1);  B: (0, 2, 1), (3, 2, 1);  C: (0.5, 1, 1).

    | req | e_j | free workers at e_j      | start | c | service × slow | ready | queue |
    | A0  | 0   | both (tie with B0: A<B)  | 0     | 1 | 2 × 1   = 2    | 2     | 0     |
    | B0  | 0   | one (A0 busy to 2)       | 0     | 2 | 2 × 1.5 = 3    | 3     | 0     |
    | C0  | 0.5 | none: first frees at 2   | 2     | 2 | 1 × 1.5 = 1.5  | 3.5   | 1.5   |
    | A1  | 2   | none (B0→3, C0→3.5)      | 3     | 2 | 1 × 1.5 = 1.5  | 4.5   | 1     |
    | B1  | 3   | none (C0→3.5, A1→4.5)    | 3.5   | 2 | 2 × 1.5 = 3    | 6.5   | 0.5   |

    A1 is eligible at max(1, ready A0 = 2) = 2, B1 at max(3, ready B0 = 3) = 3.
    Playback (1 s each): A plays 2–3 and 4.5–5.5 (end 5.5, idle 2 + 1.5), B 3–4 and 6.5–7.5
    (end 7.5, idle 3 + 2.5), C 3.5–4.5. Queue totals: A 1, B 0.5, C 1.5.
    """
    m = validate_manifest(manifest({("t1", "A", "c"): [(0, 2, 1), (1, 1, 1)],
                                    ("t1", "B", "c"): [(0, 2, 1), (3, 2, 1)],
                                    ("t1", "C", "c"): [(0.5, 1, 1)]}), "m")
    (tmp_path / "c.csv").write_text(CURVE)
    # the one place the command line and the API parse --service / service (the table read there)
    model = replay_settings("request", f"servers=2,share=panel,load_curve={tmp_path / 'c.csv'}", "skip").service
    res = replay(m, service=model)
    parts = res.parts.set_index(["system", "seq"])
    assert parts["ready_s"].to_dict() == {("A", 0): 2.0, ("A", 1): 4.5, ("B", 0): 3.0, ("B", 1): 6.5, ("C", 0): 3.5}
    assert parts["queue_s"].to_dict() == {("A", 0): 0.0, ("A", 1): 1.0, ("B", 0): 0.0, ("B", 1): 0.5, ("C", 0): 1.5}
    summary = res.summary.set_index("system")
    assert summary["end_s"].to_dict() == {"A": 5.5, "B": 7.5, "C": 4.5}
    assert summary["idle_s"].to_dict() == {"A": 3.5, "B": 5.5, "C": 3.5}
    assert summary["queue_s"].to_dict() == {"A": 1.0, "B": 0.5, "C": 1.5}
    sig = res.signatures[0]
    assert (sig["servers"], sig["share"], sig["discipline"]) == (2, "panel", "fifo")
    assert sig["load_curve_sha256"] == model.digest() != "none" and len(model.digest()) == 64
    assert sig["service"] == "servers=2,share=panel,discipline=fifo,curve=1:0.5;2:0.75;4:1.25"
    assert parse_service(sig["service"]) == model  # the signature rebuilds the model without the file


# ---- an independent implementation: time-driven, no heaps -----------------------------------


def reference_shared(outputs, k, slow, flight=None):
    """``outputs``: {key: [(dispatch_ns, service_ns), ...]} of one share group, keys sorted
    in tie order. Walk time from event to event: at each instant free the workers whose
    request is done, then start eligible requests (smallest eligibility, then key order) on
    idle workers. ``flight``: {n: factor} (every n that can occur) times the requests in
    flight: those in service, the one starting, and the others eligible before now.
    Returns {key: [(start, ready, queue), ...]}."""
    keys = list(outputs)
    nxt = {o: 0 for o in keys}
    elig = {o: outputs[o][0][0] for o in keys}  # eligibility of each output's next request
    done = {o: [] for o in keys}
    workers = [None] * k  # ready time of the request a worker serves, or None when idle
    t = min(elig.values())
    while any(nxt[o] < len(outputs[o]) for o in keys):
        workers = [w if w is not None and w > t else None for w in workers]
        while None in workers:
            waiting = [(elig[o], i, o) for i, o in enumerate(keys) if nxt[o] < len(outputs[o]) and elig[o] is not None
                       and elig[o] <= t]
            if not waiting:
                break
            e, _, o = min(waiting)
            c = sum(w is not None for w in workers) + 1
            f = slow[c]
            if flight:
                f *= flight[c + sum(1 for p in keys if p != o and elig[p] is not None and elig[p] < t)]
            svc = outputs[o][nxt[o]][1]
            ready = t + (svc if f == 1.0 else int(round(svc * f)))
            workers[workers.index(None)] = ready
            done[o].append((t, ready, t - e))
            nxt[o] += 1
            elig[o] = None if nxt[o] == len(outputs[o]) else max(outputs[o][nxt[o]][0], ready)
        pending = [w for w in workers if w is not None] + [e for e in elig.values() if e is not None and e > t]
        if not pending:
            break
        t = min(pending)
    return done


def random_manifest(rng):
    rows = []
    talks, systems, conds = int(rng.integers(1, 4)), ["A", "F", "G"][: int(rng.integers(1, 4))], ["c0", "c1"]
    for t in range(talks):
        for s in systems:
            for c in conds[: int(rng.integers(1, 3))]:
                n = int(rng.integers(1, 7))
                dispatch = np.sort(rng.integers(0, 4000, n))
                for seq in range(n):  # whole milliseconds: exact nanoseconds after to_ns
                    rows.append({"talk_id": f"t{t}", "system": s, "condition": c, "seq": seq,
                                 "dispatch_s": dispatch[seq] / 1000, "service_s": int(rng.integers(1, 900)) / 1000,
                                 "audio_s": int(rng.integers(0, 1500)) / 1000, "source_s": 10.0})
    return validate_manifest(pd.DataFrame(rows), "random")


def test_fifo_equals_a_time_driven_simulation_on_200_random_manifests():
    rng = np.random.default_rng(36)
    for case in range(200):
        m = random_manifest(rng)
        k, share = int(rng.integers(1, 5)), str(rng.choice(SHARES))
        p50 = [1.0] + [1.0 + 0.25 * int(x) for x in np.sort(rng.integers(0, 9, k - 1))] if rng.random() < 0.7 else []
        curve = ";".join(f"{c + 1}:{p!r}" for c, p in enumerate(p50))
        slow = [1.0] + (p50 or [1.0] * k)  # p50(1) = 1: the slowdown is the p50 itself
        # half the cases a calibrated slowdown: 1 + 0.25 per request in flight beyond the first, up to 3
        points = "1:1.0;3:1.5" if case % 2 else ""
        flight = {n: min(1.0 + 0.25 * (n - 1), 1.5) for n in range(1, 40)} if points else None
        model = Servers(k, share, "fifo", curve, points)
        codes = m.groupby(["talk_id", "system", "condition"], sort=False).ngroup().to_numpy()
        dispatch, service = to_ns(m["dispatch_s"].to_numpy(float)), to_ns(m["service_s"].to_numpy(float))
        clock = model.clock(m, codes, dispatch, service)
        fixed = {"panel": ["condition"], "talk": ["condition", "talk_id"], "system": ["condition", "system"],
                 "output": ["condition", "talk_id", "system"]}[share]
        want = {}
        for _, g in m.assign(_d=dispatch, _s=service).groupby(fixed):
            outs = {o: list(zip(r["_d"], r["_s"])) for o, r in g.groupby(["talk_id", "system", "condition"])}
            want |= reference_shared(dict(sorted(outs.items())), k, slow, flight)
        got = {}
        for i, o in enumerate(zip(m["talk_id"], m["system"], m["condition"])):
            got.setdefault(o, []).append((int(clock.start[i]), int(clock.ready[i]), int(clock.queue[i])))
        assert got == want, f"case {case}: k={k}, share={share}, curve={curve}, slowdown={points}"


def test_enough_servers_and_no_curve_is_the_plain_replay_bit_for_bit():
    m = validate_manifest(synthetic_manifest(6, names=None, backends=("fake:sine", "fake:other")), "m")
    rate = 22_050  # sample counts, as synthesis writes them
    n = np.rint(m["audio_s"].to_numpy(float) * rate).astype(np.int64)
    m = m.assign(audio_s=n / rate, n_samples=n, sample_rate=rate)
    plain = replay(m)
    for spec in ("servers=12,share=panel", "servers=2,share=talk", "servers=6,share=system", "servers=1,share=output"):
        shared = replay(m, service=parse_service(spec))
        assert (shared.parts.pop("queue_s") == 0).all() and (shared.summary.pop("queue_s") == 0).all()
        pd.testing.assert_frame_equal(shared.summary, plain.summary, check_exact=True)
        pd.testing.assert_frame_equal(shared.parts, plain.parts, check_exact=True)
    fewer = replay(m, service=parse_service("servers=1,share=panel"))  # 12 outputs on one worker: they wait
    assert fewer.summary["queue_s"].sum() > 0 and (fewer.summary["end_s"] >= plain.summary["end_s"]).all()


def test_an_experiment_variant_names_shared_servers():
    v = parse_variant("servers=4,share=talk", source="exp.toml", key="analysis.variants")
    assert v.service == Servers(4, "talk") and v.release.name == "request"
    with pytest.raises(InputError, match=r"exp.toml: key 'analysis.variants' 'servers=4,share=room'.*unknown share"):
        parse_variant("servers=4,share=room", source="exp.toml", key="analysis.variants")
    with pytest.raises(InputError, match="'speed=2' is not a setting of shared servers"):
        parse_servers("servers=2,speed=2", "x")


@pytest.mark.parametrize(("args", "message"), [
    (["--servers", "0"], "--servers: servers '0' is not a whole number ≥ 1"),
    (["--servers", "2", "--share", "room"], "--servers: unknown share group 'room' (expected panel or talk"),
    (["--share", "talk"], "--share/--discipline/--load-curve: need --servers K"),
    (["--servers", "2", "--discipline", "lifo"], "unknown discipline 'lifo' (expected fifo)"),
    (["--servers", "2", "--service", "zero"], "--service 'zero': shared servers replay the measured service"),
    (["--servers", "2", "--load-curve", "{bad}"], "curve.csv, row 2, field 'service_p50_s': service_p50_s 'nan' is "
                                                  "not a number > 0"),
    (["--servers", "2", "--load-curve", "{nolevel1}"], "curve1.csv, field 'concurrency': has no row at concurrency 1"),
    (["--servers", "2", "--load-curve", "{short}"], "load curve ends at concurrency 1, below the 2 servers"),
    (["--servers", "2", "--load-curve", "{nocol}"], "nocol.csv, field 'service_p50_s': has no column"),
])
def test_bad_shared_server_flags_are_one_line_and_exit_2(cli, tmp_path, args, message):
    files = {"bad": "concurrency,service_p50_s\n1,0.5\n2,x\n", "nolevel1": "concurrency,service_p50_s\n2,0.5\n",
             "short": "concurrency,service_p50_s\n1,0.5\n", "nocol": "concurrency,p50\n1,0.5\n"}
    names = {"bad": "curve.csv", "nolevel1": "curve1.csv", "short": "short.csv", "nocol": "nocol.csv"}
    for key, text in files.items():
        (tmp_path / names[key]).write_text(text)
    manifest({("t1", "A", "c"): [(0, 1, 1)]}).to_csv(tmp_path / "m.csv", index=False)
    args = [a.format(**{k: tmp_path / n for k, n in names.items()}) for a in args]
    proc = cli("replay", tmp_path / "m.csv", "--out", tmp_path / "s.csv", *args)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not (tmp_path / "s.csv").exists()


def test_eta_reads_a_shared_server_summary(cli, tmp_path):
    m = synthetic_manifest(4)
    m.assign(service_s=m["service_s"] * 20).to_parquet(tmp_path / "m.parquet")  # 1–4 s: a busy server
    cli("replay", tmp_path / "m.parquet", "--servers", "1", "--share", "talk", "--out", tmp_path / "s.parquet",
        "--parts", tmp_path / "p.csv", check=True)
    parts = pd.read_csv(tmp_path / "p.csv")
    assert "queue_s" in parts and parts["queue_s"].max() > 0
    proc = cli("eta", tmp_path / "s.parquet", "--a", "A", "--f", "F", "--reference", "immediate", "--draws", "200",
               "--out", tmp_path / "eta.csv", check=True)
    eta = pd.read_csv(tmp_path / "eta.csv")
    assert len(eta) == 2 and "servers=1,share=talk" in proc.stdout + eta["signature"].iloc[0]


def test_a_calibrated_slowdown_counts_the_requests_in_flight_hand_worked():
    """K = 1, slowdown 1.0 at one request in flight, 1.5 at three (1.25 at two, linear), flat beyond.
    A0 (dispatch 0, service 1), B0 (0.25, 1), C0 (0.5, 2), A1 (0.75, 0.5), all on one worker:

    | req | e_j  | start | in flight at start                   | n | factor | ready |
    | A0  | 0    | 0     | A0                                   | 1 | 1      | 1     |
    | B0  | 0.25 | 1     | B0, C0 (0.5), A1 (max(0.75, 1) = 1: not before 1) | 2 | 1.25 | 2.25 |
    | C0  | 0.5  | 2.25  | C0, A1 (1)                           | 2 | 1.25   | 4.75  |
    | A1  | 1    | 4.75  | A1                                   | 1 | 1      | 5.25  |
    """
    m = validate_manifest(manifest({("t1", "A", "c"): [(0, 1, 1), (0.75, 0.5, 1)], ("t1", "B", "c"): [(0.25, 1, 1)],
                                    ("t1", "C", "c"): [(0.5, 2, 1)]}), "m")
    model = parse_service("servers=1,share=panel,slowdown=1:1;3:1.5")
    assert model == Servers(1, "panel", "fifo", "", "1:1.0;3:1.5")
    res = replay(m, service=model)
    ready = res.parts.set_index(["system", "seq"])["ready_s"].to_dict()
    assert ready == {("A", 0): 1.0, ("A", 1): 5.25, ("B", 0): 2.25, ("C", 0): 4.75}
    sig = res.signatures[0]
    assert sig["slowdown"] == "1:1.0;3:1.5" and sig["service"].endswith(",slowdown=1:1.0;3:1.5")
    assert parse_service(sig["service"]) == model
    flat = replay(m, service=parse_service("servers=1,slowdown=2")).parts.set_index(["system", "seq"])["ready_s"]
    assert flat.to_dict() == {("A", 0): 2.0, ("A", 1): 9.0, ("B", 0): 4.0, ("C", 0): 8.0}  # × 2 whatever is in flight
    assert "slowdown" not in replay(m, service=Servers(1)).signatures[0]


def test_replay_reads_a_calibration_table_and_refuses_a_bad_one(cli, tmp_path):
    manifest({("t1", "A", "c"): [(0, 1, 1)], ("t1", "B", "c"): [(0, 1, 1)]}).to_csv(tmp_path / "m.csv", index=False)
    (tmp_path / "cal.csv").write_text("in_flight,requests,slowdown\n2,40,1.5\n1,12,1.25\n")
    cli("replay", tmp_path / "m.csv", "--servers", "1", "--slowdown", tmp_path / "cal.csv", "--out",
        tmp_path / "s.csv", "--parts", tmp_path / "p.csv", check=True)
    # A0 alone in flight when it starts (B0 eligible at the same instant, not before): 1 × 1.25;
    # B0 then starts alone: 1 × 1.25 after A0
    assert pd.read_csv(tmp_path / "p.csv")["ready_s"].tolist() == [1.25, 2.5]
    for text, message in (("in_flight,slowdown\n1,0\n", "row 1, field 'slowdown': slowdown '0.0' is not a number > 0"),
                          ("in_flight,slowdown\n1.5,1\n", "row 1, field 'in_flight': in_flight '1.5' is not a whole"),
                          ("n,slowdown\n1,1\n", "field 'in_flight': has no column 'in_flight'")):
        (tmp_path / "bad.csv").write_text(text)
        proc = cli("replay", tmp_path / "m.csv", "--servers", "1", "--slowdown", tmp_path / "bad.csv", "--out",
                   tmp_path / "s2.csv")
        assert proc.returncode == 2 and message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, \
            proc.stderr
    proc = cli("replay", tmp_path / "m.csv", "--slowdown", "1.2", "--out", tmp_path / "s2.csv")
    assert proc.returncode == 2 and "--slowdown: need --servers K" in proc.stderr
