"""Modelled closed-loop outputs: a policy run on the duration model and the fitted clock.

A closed-loop policy's groups depend on the durations and service times of its own
requests, so its modelled manifest cannot come from grouping first: for each panel's
models (:class:`~simulplay.durationmodel.modelled.PanelModel`) and each stream, the policy
runs in the discrete-event engine (:func:`simulplay.grouping.engine.run_policy`) with a
provider that predicts each request's audio (samples at the panel's rate, as
:func:`~simulplay.durationmodel.modelled.predicted_manifest` does) and its service time
from the fitted clock, times ``service_factor`` (0 for a zero-service sweep, F for
``scale=F``), so that the replay of the rows, under the same service model, is the
engine's own clock. Predictions are made once per span of updates and panel.

A condition after a commit policy (``POLICY+RULE``) runs the policy ``RULE`` on the streams
the commit policy committed, as synthesis does: ``blocks`` names each condition's streams
of the table (a sweep's table holds one block per commit policy,
:mod:`simulplay.analysis.sweep_commit`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from simulplay.durationmodel.features import UpdateCounts, anchor_spans, request_features
from simulplay.durationmodel.modelled import PanelModel
from simulplay.grouping.engine import Served, run_policy
from simulplay.grouping.registry import Committing, parse_rule
from simulplay.grouping.vectorized import Groups, UpdateTable


class SpanPredictor:
    """Each (stream, first, last, span) group's modelled audio seconds, samples and service
    seconds (``span``: its character span, or None for whole updates)."""

    def __init__(self, table: UpdateTable, counts: UpdateCounts, model: PanelModel):
        self.table, self.counts, self.model = table, counts, model
        self.cache: dict[tuple[int, int, int], tuple[float, int, float]] = {}

    def __call__(self, s: int, first: int, last: int, span: tuple[int, int] | None = None) -> tuple[float, int, float]:
        key = (s, first, last, span)
        if key not in self.cache:
            off = int(self.table.offsets[s])
            one = np.array([0])
            a, b = span if span is not None else (-1, -1)
            groups = Groups(one, np.array([s]), np.array([first + off]), np.array([last + off]), np.zeros(1), one,
                            np.array([a]), np.array([b]))
            feats = request_features(self.table, self.counts, groups, text=not self.model.durations.phonemes)
            stream = self.table.streams[s]
            audio = self.model.durations.predict(feats, np.array([f"{stream.talk_id}|{stream.system}"]),
                                                 anchor_spans(self.table, groups))
            rate = self.model.sample_rate
            n = int(np.rint(audio[0] * rate)) if rate > 0 else 0
            audio_s = n / rate if rate > 0 else float(audio[0])
            service = float(self.model.service.predict(np.array([audio_s]), feats["chars"])[0])
            self.cache[key] = (audio_s, n, service)
        return self.cache[key]


def loop_manifest(table: UpdateTable, counts: UpdateCounts, conditions: Sequence[str],
                  models: Sequence[PanelModel], *, service_factor: float = 1.0,
                  blocks: Sequence[Sequence[int]] | None = None) -> pd.DataFrame:
    """Modelled manifest rows of the closed-loop ``conditions`` (canonical RULE strings,
    ``POLICY+RULE`` included) once per panel, each on the streams of ``table`` its
    ``blocks`` entry names (all of them by default; a rule after a commit policy runs on
    the streams the policy committed): the columns of a predicted manifest."""
    every = range(len(table.streams))
    rows = []
    for m in models:
        predict = SpanPredictor(table, counts, m)
        for c, cond in enumerate(conditions):
            rule = parse_rule(cond)
            rule = rule.rule if isinstance(rule, Committing) else rule  # the streams are committed already
            for s in every if blocks is None else blocks[c]:
                stream = table.streams[s]

                def provider(req, s=s, predict=predict, rate=m.sample_rate):
                    audio_s, n, service = predict(s, req.first, req.last, req.span)
                    service *= service_factor
                    return Served(service, n_samples=n, sample_rate=rate) if rate > 0 else Served(service, audio_s)

                for r in run_policy(stream, rule, provider).requests:
                    audio_s, n, service = predict(s, r.first, r.last, r.span)
                    row = {"talk_id": stream.talk_id, "system": stream.system, "condition": cond, "seq": r.seq,
                           "dispatch_s": r.dispatch_s, "trigger": r.trigger, "n_updates": r.last - r.first + 1,
                           "source_s": stream.source_s, **dict(m.panel), "audio_s": audio_s,
                           "service_s": service, "ready_s": np.nan, "error": ""}
                    if m.sample_rate > 0:
                        row |= {"n_samples": n, "sample_rate": m.sample_rate}
                    rows.append(row)
    return pd.DataFrame(rows)
