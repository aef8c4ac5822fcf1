"""A replay variant that changes the clock decides a closed-loop output again (hand-worked)."""

import pandas as pd
import pytest

import simulplay
from simulplay.analysis.eta import loop_notes
from simulplay.core.provenance import sha256_of_file
from simulplay.core.tables import write_table
from simulplay.durationmodel.fit import DurationFit
from simulplay.durationmodel.modelled import PanelModel
from simulplay.durationmodel.redecide import redecide
from simulplay.durationmodel.replay_again import labelled
from simulplay.grouping.policy import LOOP_DECIDED_AGAIN, LOOP_OTHER_CLOCK
from simulplay.manifest import validate_manifest
from simulplay.manifest.chunks import validate_chunks
from simulplay.sim import replay
from simulplay.sim.servicefit import ServiceFit
from simulplay.sim.variants import Measured, RequestRelease, Scale, Zero, parse_release
from simulplay.traces import write_trace
from simulplay.traces.model import frame_from_streams
from simulplay.workflows.steps import ReplaySettings, replay_deciding
from tests.support.factories import stream

BACKLOG = "backlog:below=1,max_chars=300,min_words=3"
S = stream([0, 0, 1, 2], ["aaa bbb ccc.", "dd", "ee ff gg.", "hh"], source_s=5.0)
# audio seconds of each text, as the run synthesized them
AUDIO = {"aaa bbb ccc. dd": 0.8, "ee ff gg. hh": 1.5, "aaa bbb ccc.": 0.6, "dd": 0.2, "ee ff gg.": 1.0, "hh": 0.4}
# The recorded run (measured clock): at 0 the first two updates (4 words, q = 0) go as one request,
# in flight until 2.5 (service 2.5 s); "ee ff gg." (1 s) and "hh" (2 s, the end) arrive while it is in
# flight; at 2.5 it is ready and plays 2.5–3.3, q = 0.8 ≤ 1 with 4 words held: "ee ff gg. hh" goes
# (service 0.5: ready 3.0, plays 3.3–4.8). L = 4.8 − 5 = −0.2 s.
RECORDED = [("aaa bbb ccc. dd", 2, 0.0, 2.5, "backlog", 0.0, 0), ("ee ff gg. hh", 2, 2.5, 0.5, "backlog", 0.8, 0)]
IMMEDIATE = [("aaa bbb ccc.", 1, 0.0), ("dd", 1, 0.0), ("ee ff gg.", 1, 1.0), ("hh", 1, 2.0)]
# audio = 0.1 s + 0.2 s a character, service 0.2 s (a duration model for texts the run lacks)
MODEL = PanelModel((), DurationFit((), ("intercept", "chars"), (0.1, 0.2), ("intercept", "chars"), 1, 0),
                   ServiceFit((), (0.2, 0.0, 0.0), (), 1, 0.0), 0)


def run_manifest(with_immediate=True):
    rows = [{"condition": BACKLOG, "seq": i, "text": t, "n_updates": n, "dispatch_s": d, "service_s": s,
             "trigger": tr, "queued_s": q, "in_flight": f, "group": i}
            for i, (t, n, d, s, tr, q, f) in enumerate(RECORDED)]
    if with_immediate:
        rows += [{"condition": "immediate", "seq": i, "text": t, "n_updates": n, "dispatch_s": d, "service_s": 0.3,
                  "trigger": "immediate", "group": i} for i, (t, n, d) in enumerate(IMMEDIATE)]
    df = pd.DataFrame(rows).assign(talk_id="t1", system="A", source_s=5.0, glue=False)
    df["audio_s"] = df["text"].map(AUDIO)
    return validate_manifest(df, "test")


def settings_of(release):
    return ReplaySettings(parse_release(release), Measured(), "skip")


def backlog_rows(m):
    b = m[m["condition"] == BACKLOG]
    return [(r.text, r.dispatch_s, r.trigger) for r in b.itertuples()]


def offset(rep, cond=BACKLOG):
    s = rep.summary
    return float(s.loc[s["condition"] == cond, "offset_s"].iloc[0])


def test_the_measured_clock_decides_the_recorded_groups_and_replays_to_the_same_L_exactly():
    m = run_manifest()
    decided = redecide(m, [S], Measured())
    assert backlog_rows(decided.manifest) == [(t, d, tr) for t, _, d, _, tr, _, _ in RECORDED]
    assert decided.outputs == {("t1", "A", BACKLOG): (2, 0)}
    assert list(decided.manifest["queued_s"].iloc[:2]) == [0.0, 0.8]
    assert offset(replay(m)) == pytest.approx(-0.2, abs=1e-9)
    assert offset(replay(decided.manifest, service=decided.service)) == offset(replay(m))  # to the nanosecond


def test_zero_service_decides_other_groups_from_stored_durations():
    # Zero service: the first request is ready at 0 and plays 0–0.8; at 1, q = 0 and "ee ff gg." (3 words)
    # goes alone (plays 1–2, its 1.0 s stored from immediate's request); at 2 "hh" ends the stream, nothing in
    # flight, 1 word: it goes (eos; 0.4 s stored), plays 2–2.4. L = 2.4 − 5 = −2.6 s. The recorded groups
    # under zero service would end at 4.0 (the second request ready at 2.5, 1.5 s): L = −1.0 s.
    m = run_manifest()
    decided = redecide(m, [S], Zero())
    assert backlog_rows(decided.manifest) == [("aaa bbb ccc. dd", 0.0, "backlog"), ("ee ff gg.", 1.0, "backlog"),
                                              ("hh", 2.0, "eos")]
    assert decided.outputs == {("t1", "A", BACKLOG): (3, 0)} and decided.model == ""
    assert offset(replay(decided.manifest, service=decided.service)) == pytest.approx(-2.6, abs=1e-9)
    assert offset(replay(m, service=Zero())) == pytest.approx(-1.0, abs=1e-9)
    assert offset(replay(decided.manifest, service=decided.service), "immediate") == pytest.approx(-2.6, abs=1e-9)


def test_texts_the_run_lacks_are_modelled_and_labelled():
    # Without immediate's requests, "ee ff gg." (9 characters: 0.1 + 1.8 = 1.9 s) and "hh" (0.5 s) are
    # modelled: at 1 "ee ff gg." goes (plays 1–2.9); at 2 "hh" goes (eos), plays 2.9–3.4: L = −1.6 s.
    m = run_manifest(with_immediate=False)
    decided = redecide(m, [S], Zero(), models=[MODEL])
    assert backlog_rows(decided.manifest) == [("aaa bbb ccc. dd", 0.0, "backlog"), ("ee ff gg.", 1.0, "backlog"),
                                              ("hh", 2.0, "eos")]
    assert list(decided.manifest["audio_s"]) == pytest.approx([0.8, 1.9, 0.5])
    assert decided.outputs == {("t1", "A", BACKLOG): (3, 2)} and "modelled durations" in decided.model
    rep = labelled(replay(decided.manifest, service=decided.service), decided)
    assert offset(rep) == pytest.approx(-1.6, abs=1e-9)
    assert rep.signatures[0]["loop"] == f"{LOOP_DECIDED_AGAIN}, 2 of 3 requests modelled"
    assert rep.signatures[0]["loop_model"] == decided.model
    notes = loop_notes(rep.summary.assign(_sig=[0]), rep.signatures)
    assert notes == [f"closed loop: {BACKLOG} decided again under this clock (its groups are the policy's under this "
                     "clock, not the recorded ones); 2 of its 3 requests take their durations from the duration model "
                     "(texts the run did not synthesize): modelled, not measured"]


def test_scaled_service_maps_stored_service_as_the_replay_does():
    # scale=0.1: the first request is ready at 0.25 (plays 0.25–1.05); at 1, q = 0.05 ≤ 1: "ee ff gg." goes
    # (service 0.3 stored × 0.1: ready 1.03, plays 1.05–2.05); at 2 "hh" (eos, ready 2.03, plays 2.05–2.45).
    m = run_manifest()
    decided = redecide(m, [S], Scale(0.1))
    assert backlog_rows(decided.manifest)[1:] == [("ee ff gg.", 1.0, "backlog"), ("hh", 2.0, "eos")]
    assert offset(replay(decided.manifest, service=decided.service)) == pytest.approx(-2.55, abs=1e-9)


def test_without_the_traces_the_recorded_groups_stay_labelled():
    m = run_manifest()
    settings = ReplaySettings(RequestRelease(), Zero(), "skip")
    kept = replay_deciding(m, settings, None)
    assert {s.get("loop") for s in kept.signatures} == {None, LOOP_OTHER_CLOCK}
    again = replay_deciding(m, settings, [S])
    assert {s.get("loop") for s in again.signatures} == {None, f"{LOOP_DECIDED_AGAIN}, 0 of 3 requests modelled"}
    other = stream([0, 1], ["x y z.", "w"], source_s=5.0)  # a trace that does not give the recorded requests
    assert redecide(m, [other], Zero()).kept == {("t1", "A", BACKLOG): "its recorded requests are not the groups "
                                                                       "its trace gives"}


def test_replaying_a_manifest_file_decides_again_on_the_traces_it_records(tmp_path):
    trace = tmp_path / "t.jsonl"
    write_trace(frame_from_streams([S]), trace, {})
    path = tmp_path / "m.parquet"
    write_table(run_manifest(), path, {"table": "manifest"}, kind="manifest",
                extra_meta={"traces": [{"path": str(trace), "sha256": sha256_of_file(trace)}]})
    out = simulplay.replay(path, service="zero")
    s = out.summary.set_index("condition")
    assert s.loc[BACKLOG, "offset_s"] == pytest.approx(-2.6, abs=1e-9)  # decided again (recorded groups: −1.0)
    assert [g.get("loop") for g in out.signatures] == [f"{LOOP_DECIDED_AGAIN}, 0 of 3 requests modelled", None]
    trace.write_text(trace.read_text() + "\n", encoding="utf-8")  # the recorded trace changed: groups kept, labelled
    out = simulplay.replay(path, service="zero")
    assert out.summary.set_index("condition").loc[BACKLOG, "offset_s"] == pytest.approx(-1.0, abs=1e-9)
    assert [g.get("loop") for g in out.signatures] == [LOOP_OTHER_CLOCK, None]


def test_the_explorer_leaves_decided_outputs_out_of_the_timeline():
    from simulplay.report.explore.variants import recorded_only

    m = run_manifest()
    decided = redecide(m, [S], Zero())
    rep = labelled(replay(decided.manifest, service=decided.service), decided)
    drawn, rows, kept, notes = recorded_only(rep, m, "service-zero")
    assert list(drawn.summary["condition"]) == ["immediate"] and len(drawn.parts) == 4 == len(rows)
    assert list(kept) == [False, False, True, True, True, True] and len(notes) == 1


def test_chunk_release_decides_again_from_the_recorded_chunks():
    # Updates at 0, 0, 1 and 4 s (source 5 s), 1000 Hz samples. The run (request release): the first
    # request (2.0 s of audio, service 2.5) plays 2.5–4.5; at 2.5 q = 2.0 > 1 with "ee ff gg." held, so the
    # policy wakes at 3.5 (q = 1.0) and sends it (service 0.5, 1.0 s: ready 4.0, plays 4.5–5.5); at 4 "hh"
    # ends the stream and goes (eos; 0.4 s, service 0.3: ready 4.3, plays 5.5–5.9).
    # Chunk release: the first request's chunks (1.5 s ready 0.5 after its start, 0.5 s ready 2.5 after)
    # play 0.5–2.0 and 2.5–3.0; at 2.5 q = 0.5 ≤ 1: "ee ff gg." goes at 2.5, not 3.5 (its chunk ready 0.5
    # after its start: plays 3.0–4.0); at 4 "hh" goes (eos, q = 0), its chunk ready 4.3: plays 4.3–4.7,
    # L = −0.3 s. The recorded groups under chunk release end at 5.4 (L = +0.4 s).
    s = stream([0, 0, 1, 4], ["aaa bbb ccc.", "dd", "ee ff gg.", "hh"], source_s=5.0)
    rows = [("aaa bbb ccc. dd", 2, 0.0, 2.5, 2000, "backlog", 0.0), ("ee ff gg.", 1, 3.5, 0.5, 1000, "backlog", 1.0),
            ("hh", 1, 4.0, 0.3, 400, "eos", 1.5)]
    df = pd.DataFrame([{"condition": BACKLOG, "seq": i, "text": t, "n_updates": u, "dispatch_s": d, "service_s": sv,
                        "n_samples": n, "audio_s": n / 1000, "sample_rate": 1000, "trigger": tr, "queued_s": q,
                        "in_flight": 0, "group": i} for i, (t, u, d, sv, n, tr, q) in enumerate(rows)])
    m = validate_manifest(df.assign(talk_id="t1", system="A", source_s=5.0, glue=False), "test")
    chunks = validate_chunks(pd.DataFrame(
        [(0, 0, 0.5, 1500), (0, 1, 2.5, 500), (1, 0, 0.5, 1000), (2, 0, 0.3, 400)],
        columns=["seq", "chunk", "ready_offset_s", "n_samples"]).assign(
        talk_id="t1", system="A", condition=BACKLOG, audio_s=lambda c: c["n_samples"] / 1000), "chunks")
    assert offset(replay(m)) == pytest.approx(0.9, abs=1e-9)
    assert offset(replay(m, release="chunk", chunks=chunks)) == pytest.approx(0.4, abs=1e-9)
    decided = redecide(m, [s], Measured(), chunks=chunks)
    assert backlog_rows(decided.manifest) == [("aaa bbb ccc. dd", 0.0, "backlog"), ("ee ff gg.", 2.5, "backlog"),
                                              ("hh", 4.0, "eos")]
    assert list(decided.chunks["ready_offset_s"]) == [0.5, 2.5, 0.5, 0.3]
    rep = replay_deciding(m, settings_of("chunk"), [s], chunks=chunks)
    assert offset(rep) == pytest.approx(-0.3, abs=1e-9)
    assert rep.signatures[0]["loop"] == f"{LOOP_DECIDED_AGAIN}, 0 of 3 requests modelled"
