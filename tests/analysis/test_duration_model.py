"""The duration model (simulplay.sim.durationfit): least squares worked by hand, trimming,
stream rates, held-out errors, and request features equal to those of the joined text."""

import unicodedata

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulplay.grouping import parse_rule, stream_requests
from simulplay.grouping.vectorized import group_many, update_table
from simulplay.sim.durationfit import (
    FEATURES,
    cross_validate,
    fit_durations,
    request_features,
    update_counts,
)
from simulplay.traces.model import Stream, ends_terminal
from tests.support.factories import stream

# A 2 × 2 design, chars ∈ {10, 30} × punct ∈ {0, 2}, audio seconds chosen by hand.
CHARS = np.array([10.0, 30.0, 10.0, 30.0])
PUNCT = np.array([0.0, 0.0, 2.0, 2.0])
AUDIO = np.array([0.9, 2.1, 1.5, 2.9])
# Worked by hand. The centred columns are orthogonal, so each slope is a difference of means:
#   chars: (mean audio at 30 − mean at 10) / 20 = ((2.1 + 2.9)/2 − (0.9 + 1.5)/2) / 20 = 1.3 / 20 = 0.065 s
#   punct: (mean at 2 − mean at 0) / 2           = (2.2 − 1.5) / 2                     = 0.35 s
#   intercept: mean audio − 0.065·20 − 0.35·1    = 1.85 − 1.3 − 0.35                   = 0.2 s
# Fitted 0.85, 2.15, 1.55, 2.85; residuals +0.05, −0.05, −0.05, +0.05.
HAND = {"intercept": 0.2, "chars": 0.065, "punct": 0.35}


def features(chars, punct):
    n = len(chars)
    return {"intercept": np.ones(n), "chars": np.asarray(chars, float), "words": np.full(n, 3.0),
            "punct": np.asarray(punct, float), "final": np.ones(n)}


def test_least_squares_matches_the_hand_fit():
    fit = fit_durations(features(CHARS, PUNCT), AUDIO)
    assert fit.fitted == ("intercept", "chars", "punct")  # words and final are constant: left out
    assert fit.coefficients() == pytest.approx({**dict.fromkeys(FEATURES, 0.0), **HAND}, abs=1e-12)
    assert fit.trimmed == 0 and fit.n == 4
    assert fit.predict(features([20.0], [1.0])) == pytest.approx([1.85], abs=1e-12)


def test_a_wild_request_is_trimmed_and_the_fit_returns_to_the_hand_values():
    # the design three times, and one request at its centre that took 9 s (a stuck synthesis)
    chars = np.r_[np.tile(CHARS, 3), 20.0]
    punct = np.r_[np.tile(PUNCT, 3), 1.0]
    audio = np.r_[np.tile(AUDIO, 3), 9.0]
    fit = fit_durations(features(chars, punct), audio)
    # first fit: intercept (3·7.4 + 9)/13 − 1.65 = 0.75, residuals ±0.05 − 0.55 and 6.6; the
    # median |residual| 0.6 gives 4 × 1.4826 × 0.6 = 3.56 s < 6.6 s: the wild one is left out
    assert fit.trimmed == 1 and fit.n == 13
    assert fit.coefficients() == pytest.approx({**dict.fromkeys(FEATURES, 0.0), **HAND}, abs=1e-12)


def test_each_stream_gets_its_rate():
    # stream A holds the +0.05 residuals: Σa = 0.9 + 2.9 = 3.8 over Σâ = 0.85 + 2.85 = 3.7;
    # stream F the −0.05 ones: 3.6 / 3.7
    streams = np.array(["t1|A", "t1|F", "t1|F", "t1|A"])
    fit = fit_durations(features(CHARS, PUNCT), AUDIO, streams=streams)
    assert dict(zip(fit.streams, fit.rates)) == pytest.approx({"t1|A": 3.8 / 3.7, "t1|F": 3.6 / 3.7})
    middle = features([20.0, 20.0, 20.0], [1.0, 1.0, 1.0])  # 1.85 s before the rate
    got = fit.predict(middle, np.array(["t1|A", "t1|F", "t2|A"]))
    assert got == pytest.approx([1.9, 1.8, 1.85], abs=1e-12)  # 1.85·3.8/3.7, 1.85·3.6/3.7, unknown: 1


def test_predictions_are_clipped_at_zero():
    fit = fit_durations(features(CHARS, PUNCT), AUDIO)
    assert fit.predict(features([-100.0], [0.0]))[0] == 0.0


def test_held_out_errors_over_talks_and_conditions():
    rng = np.random.default_rng(5)
    n = 120
    chars = rng.integers(5, 80, n).astype(float)
    punct = rng.integers(0, 4, n).astype(float)
    audio = 0.25 + 0.06 * chars + 0.2 * punct + rng.normal(0, 0.05, n)
    talks = np.repeat(["a", "b", "c", "d"], n // 4)
    streams = np.char.add(talks, "|A")
    conds = np.tile(["immediate", "timer:w=2"], n // 2)
    x = features(chars, punct)
    fit = cross_validate(fit_durations(x, audio, streams=streams), x, audio, talks=talks, streams=streams,
                         conditions=conds, outputs=np.char.add(streams, conds), folds=3)
    over = {h.over: h for h in fit.held_out}
    assert over["talks"].folds == 3 and over["conditions"].folds == 2
    for h in over.values():  # the noise is 0.05 s: the median absolute error of N(0, 0.05) is 0.034 s
        assert 0.01 < h.abs_error_s < 0.08
        assert h.sum_error < 0.02
    assert "3-fold over talks" in fit.describe() and "2-fold over conditions" in fit.describe()


TEXTS = ["Hello,", "wor", "ld.", "Next", "one", " two ", "«Oui.»", "3.5", "so", "x, y; z!", "\"", ""]


@st.composite
def streams(draw):
    out = []
    for k in range(draw(st.integers(1, 3))):
        n = draw(st.integers(1, 10))
        texts = draw(st.lists(st.sampled_from(TEXTS[:-1]), min_size=n, max_size=n))
        glue = draw(st.lists(st.booleans(), min_size=n, max_size=n))
        steps = draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0]), min_size=n, max_size=n))
        out.append(Stream(f"t{k}", "A", 50.0, np.cumsum(steps), tuple(texts), np.array(glue, bool)))
    return out


@settings(max_examples=100, deadline=None)
@given(streams(), st.sampled_from(["immediate", "timer:w=1", "punct:cap=2,min_words=1", "words:n=3,cap=5"]))
def test_request_features_are_those_of_the_joined_request_text(ss, spec):
    rule = parse_rule(spec)
    table = update_table(ss)
    phonemes = [len(t) + 1 for s in ss for t in s.texts]  # any count per update: it is summed
    feats = request_features(table, update_counts(table, phonemes), group_many(table, [rule]))
    texts = [r["text"] for s in ss for r in stream_requests(s, rule)]
    ph = [sum(len(t) + 1 for t in s.texts[g.first:g.last + 1]) for s in ss for g in rule.group(s)]
    assert feats["chars"].tolist() == [len(t) for t in texts]
    assert feats["words"].tolist() == [len(t.split()) for t in texts]
    assert feats["punct"].tolist() == [sum(unicodedata.category(c)[0] == "P" for c in t) for t in texts]
    assert feats["final"].tolist() == [float(ends_terminal(t)) for t in texts]
    assert feats["phonemes"].tolist() == ph


def test_features_of_a_glued_word_by_hand():
    s = stream([0, 1, 2, 3], ["Hello,", "wor", "ld.", "Next"], glue=[False, False, True, False])
    table = update_table([s])
    feats = request_features(table, update_counts(table), group_many(table, [parse_rule("timer:w=2")]))
    # one group 0..2 at the deadline 2 s: "Hello, world." (13 characters, 2 words, ',' and '.',
    # a sentence end), then "Next" at the end of the stream
    assert feats["chars"].tolist() == [13, 4]
    assert feats["words"].tolist() == [2, 1]
    assert feats["punct"].tolist() == [2, 0]
    assert feats["final"].tolist() == [1, 0]
    assert "phonemes" not in feats
