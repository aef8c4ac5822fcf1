"""Driving SimulEval 1.1.4's own speech-to-speech instance and scorers on a timeline.

A source "sampled" at 1 GHz makes SimulEval's own step → delay conversion
(``step * 1000 / sample_rate``) turn a readiness in whole nanoseconds into milliseconds, and
its ``receive_prediction`` takes each part's duration from the samples it is given
(``1000 * len(content) / sample_rate``), exactly as during a live evaluation.
"""

from __future__ import annotations

import warnings
from argparse import Namespace
from fractions import Fraction

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # pydub: "Couldn't find ffmpeg"
    from simuleval.data.segments import SpeechSegment
    from simuleval.evaluator.instance import SpeechToSpeechInstance
    from simuleval.evaluator.scorers.latency_scorer import (
        ATDScorer,
        DiscontinuityAveScorer,
        DiscontinuityNumScorer,
        DiscontinuitySumScorer,
        EndOffsetScorer,
        NumChunksScorer,
        RTFScorer,
        StartOffsetScorer,
    )

NS_RATE = 10**9
#: Our column → SimulEval's scorer.
SCORERS = {"start_offset_ms": StartOffsetScorer, "end_offset_ms": EndOffsetScorer, "atd_ms": ATDScorer,
           "num_chunks": NumChunksScorer, "discontinuity_sum_ms": DiscontinuitySumScorer,
           "discontinuity_ave_ms": DiscontinuityAveScorer, "discontinuity_num": DiscontinuityNumScorer,
           "rtf": RTFScorer}


class _Loader:
    """Just enough of SimulEval's speech dataloader: the source is ``n`` samples at 1 GHz."""

    def __init__(self, n_source: int):
        self.n = n_source

    def __getitem__(self, i):
        return {"source": range(self.n), "target": "", "tgt_lang": None}

    def get_source_audio_info(self, i):
        return Namespace(samplerate=NS_RATE)

    def get_source_audio_path(self, i):
        return f"talk{i}.wav"


def ns(seconds: float) -> int:
    """Seconds to the nearest whole nanosecond, ties to even (exact rational arithmetic)."""
    return round(Fraction(seconds) * 10**9)


def serial_ready(dispatch_ns, service_ns):
    """start_j = max(dispatch_j, ready_{j-1}); ready_j = start_j + service_j (integers, ns): the serial
    synthesizer's recurrence, written out here independently of simulplay's replay."""
    ready, starts, prev = [], [], None
    for d, s in zip(dispatch_ns, service_ns):
        start = d if prev is None else max(d, prev)
        starts.append(start)
        prev = start + s
        ready.append(prev)
    return starts, ready


def simuleval_instance(out_dir, ready_ns, contents, rate: int, source_ns: int) -> SpeechToSpeechInstance:
    """Feed parts (readiness in ns, sample lists) to a real instance; parts without samples are
    offered too and SimulEval drops them itself."""
    ins = SpeechToSpeechInstance(0, _Loader(source_ns), Namespace(eval_latency_unit="word", output=str(out_dir)))
    ins.sample_rate  # noqa: B018 - reads the (fake) audio info, as send_source does
    for r, content in zip(ready_ns, contents):
        ins.step = r
        ins.receive_prediction(SpeechSegment(content=list(content), sample_rate=rate, finished=False))
    ins.summarize()  # as the evaluator does when it writes the instance's log line
    return ins


def simuleval_scores(ins) -> dict[str, float]:
    """SimulEval's scorers (not computation-aware) on the one instance."""
    return {col: cls(computation_aware=False)({0: ins}) for col, cls in SCORERS.items()}
