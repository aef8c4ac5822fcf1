"""Edge trimming decides closed-loop outputs again on the trimmed durations (hand-worked)."""

import numpy as np
import pandas as pd
import pytest

from simulplay.analysis.edge_replay import replay_trimmed
from simulplay.grouping.policy import LOOP_DECIDED_AGAIN, LOOP_OTHER_CLOCK
from simulplay.manifest import validate_manifest
from tests.support.factories import stream

BACKLOG = "backlog:below=1,max_chars=300,min_words=1"
S = stream([0, 1, 1.2, 2], ["aa", "bb", "cc", "dd"], source_s=4.0)
RATE, FRAME = 16000, 512  # one detector frame: 512 samples, 32 ms
FRAMES = {"aa": 64, "bb cc": 32, "bb": 16, "cc": 16, "dd": 16}  # each text's audio, in frames
# The run (service 0.5 s a request): "aa" at 0, ready 0.5, plays 0.5–2.548; at 1 "bb" arrives, q = 1.548 > 1:
# the policy wakes at 1.548 (q = 1) and sends "bb cc" ("cc" arrived at 1.2), ready 2.048, plays 2.548–3.572; "dd"
# (2.0, the last) goes at 2.048 (q = 1.524 > 1, the stream ended: eos), ready 2.548, plays 3.572–4.084.
RECORDED = [("aa", 1, 0.0, "backlog", 0.0), ("bb cc", 2, 1.548, "backlog", 1.0), ("dd", 1, 2.048, "eos", 1.524)]
IMMEDIATE = [("aa", 0.0), ("bb", 1.0), ("cc", 1.2), ("dd", 2.0)]


def trimmed_run(streams):
    rows = [{"condition": BACKLOG, "text": t, "n_updates": n, "dispatch_s": d, "trigger": tr, "queued_s": q,
             "in_flight": 0} for t, n, d, tr, q in RECORDED]
    rows += [{"condition": "immediate", "text": t, "n_updates": 1, "dispatch_s": d, "trigger": "immediate"}
             for t, d in IMMEDIATE]
    df = pd.DataFrame(rows)
    df["seq"] = df.groupby("condition").cumcount()
    df["n_samples"] = df["text"].map(FRAMES) * FRAME
    df = df.assign(talk_id="t1", system="A", source_s=4.0, glue=False, service_s=0.5, sample_rate=RATE,
                   audio_s=df["n_samples"] / RATE, group=df["seq"], audio_key=df["text"])
    m = validate_manifest(df, "test")
    audio = m[["audio_key", "sample_rate", "n_samples"]]
    # "aa": its first 48 frames non-speech, so trimming keeps 16 frames (0.512 s); every other text all speech
    probs = {t: np.r_[np.zeros(48), np.ones(16)] if t == "aa" else np.ones(n) for t, n in FRAMES.items()}
    summary, sigs, _, _ = replay_trimmed(m, audio, probs, [0.5], guard_ms=0.0, vad_label="test", excluded=[],
                                         streams=streams)
    return summary.set_index("condition"), dict(zip(summary["condition"], sigs))


def test_trimmed_durations_decide_the_closed_loop_output_again():
    # Trimmed, decided again: "aa" plays 0.5–1.012; at 1 q = 0.012 ≤ 1: "bb" goes alone (its trimmed 0.512 s stored
    # from immediate's request), ready 1.5, plays 1.5–2.012; "cc" waits for it and goes at 1.5 (q = 0.512), ready
    # 2.0, plays 2.012–2.524; at 2.0 "cc" is ready and "dd" arrives, q = 0.524 ≤ 1: it goes, ready 2.5, plays
    # 2.524–3.036: L = −0.964 s. The recorded groups trimmed: "bb cc" ready 2.048 plays 2.048–3.072, "dd" ready
    # 2.548 plays 3.072–3.584: L = −0.416 s.
    summary, sigs = trimmed_run([S])
    assert summary.loc[BACKLOG, "offset_s"] == pytest.approx(-0.964, abs=1e-9)
    assert sigs[BACKLOG]["loop"] == f"{LOOP_DECIDED_AGAIN}, 0 of 4 requests modelled"
    assert sigs[BACKLOG]["trim"] == "edges:guard=0ms" and sigs["immediate"].get("loop") is None
    summary, sigs = trimmed_run(None)
    assert summary.loc[BACKLOG, "offset_s"] == pytest.approx(-0.416, abs=1e-9)
    assert sigs[BACKLOG]["loop"] == LOOP_OTHER_CLOCK
