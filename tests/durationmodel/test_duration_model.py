"""The duration model (simulplay.durationmodel.fit): least squares worked by hand, trimming,
stream rates, the anchoring, held-out errors, and request features equal to those of the
joined text (text counts, and the phonemes of Piper's own phonemizer)."""

import unicodedata
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulplay.durationmodel.fit import (
    FEATURES,
    anchor_residuals,
    cross_validate,
    fit_durations,
    request_features,
    update_counts,
)
from simulplay.grouping import parse_rule, stream_requests
from simulplay.grouping.vectorized import group_many, update_table
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


def sentence_chars(text: str) -> list[list[str]]:
    """A stand-in phonemizer for the property test below: a text's '.'-separated sentences,
    each as its characters (what matters there is which text is phonemized, not how)."""
    return [list(x) for x in text.split(".") if x.strip()]


@settings(max_examples=100, deadline=None)
@given(streams(), st.sampled_from(["immediate", "timer:w=1", "punct:cap=2,min_words=1", "words:n=3,cap=5"]))
def test_request_features_are_those_of_the_joined_request_text(ss, spec):
    rule = parse_rule(spec)
    table = update_table(ss)
    groups = group_many(table, [rule])
    feats = request_features(table, update_counts(table), groups)
    texts = [r["text"] for s in ss for r in stream_requests(s, rule)]
    assert feats["chars"].tolist() == [len(t) for t in texts]
    assert feats["words"].tolist() == [len(t.split()) for t in texts]
    assert feats["punct"].tolist() == [sum(unicodedata.category(c)[0] == "P" for c in t) for t in texts]
    assert feats["final"].tolist() == [float(ends_terminal(t)) for t in texts]
    phon = request_features(table, update_counts(table, sentence_chars), groups)
    assert phon["chars"].tolist() == [len(t) for t in texts]  # kept for the service clock, not a term
    assert set(phon) == {"intercept", "sentences", *(f"ph:{c}" for t in texts for s in sentence_chars(t) for c in s)}
    assert phon["sentences"].tolist() == [len(sentence_chars(t)) for t in texts]
    for term in phon:
        if term.startswith("ph:"):
            want = [sum(x.count(term[3:]) for x in sentence_chars(t)) for t in texts]
            assert phon[term].tolist() == want


def test_phoneme_features_are_pipers_phonemes_of_the_joined_text():
    """A SentencePiece word cut over two updates ("Pro" + glued "gress") is phonemized as
    the joined request text, as Piper will read it: the counts equal piper-tts's own
    ``PiperVoice.phonemize`` of that text, run here."""
    from piper import PiperVoice
    from piper.config import PiperConfig

    from simulplay.backends import parse_backend

    backend = parse_backend("piper").create()
    s = stream([0, 1, 2, 3], ["Pro", "gress is slow.", "Next", "one."], glue=[False, True, False, False])
    table = update_table([s])
    feats = request_features(table, update_counts(table, backend.phonemizer()),
                             group_many(table, [parse_rule("timer:w=4")]))
    voice = PiperVoice(config=PiperConfig.from_dict(backend.config.voice_config()), session=None)
    want = voice.phonemize("Progress is slow. Next one.")
    assert len(want) == 2 and feats["sentences"].tolist() == [2.0]
    bag = Counter(p for sentence in want for p in sentence)
    assert {t[3:]: int(feats[t][0]) for t in feats if t.startswith("ph:")} == dict(bag)
    assert bag["ˈ"] >= 3  # stress marks are symbols the voice reads, counted like phonemes


def test_anchoring_by_hand():
    """Two conditions over four updates of weights (characters + 1) 1, 3, 2, 2.
    Condition x: requests 0..1 (residual +0.4) and 2..3 (−0.2); condition y: 0..0 (+0.1),
    1..3 (+0.7). Spread by weight: x gives 0.1, 0.3, −0.1, −0.1; y gives 0.1, 0.3, 0.2, 0.2.
    Averaged over the two conditions: 0.1, 0.3, 0.05, 0.05 seconds."""
    spans = (np.array([0, 2, 0, 1]), np.array([1, 3, 0, 3]))
    density = anchor_residuals(spans, np.array([0.4, -0.2, 0.1, 0.7]), np.array([1.0, 3.0, 2.0, 2.0]),
                               np.array([0, 0, 1, 1]))
    assert np.diff(density) == pytest.approx([0.1, 0.3, 0.05, 0.05], abs=1e-12)
    # a request of another grouping over updates 1..2 adds 0.3 + 0.05 = 0.35 s
    x = {"intercept": np.ones(4), "chars": np.array([10.0, 30.0, 10.0, 30.0])}
    fit = fit_durations(x, np.array([1.0, 3.0, 1.0, 3.0]), spans=spans, weights=np.array([1.0, 3.0, 2.0, 2.0]),
                        conditions=np.array(["x", "x", "y", "y"]))
    # the linear fit is exact (audio = 0.1·chars): every residual is 0, so is the correction
    assert fit.anchored_conditions == 2 and np.allclose(fit.anchor, 0.0)
    assert "anchored on 2 training condition(s)" in fit.describe()
    bumped = type(fit)(**{**fit.__dict__, "anchor": density})
    got = bumped.predict({"intercept": np.ones(1), "chars": np.array([20.0])}, spans=(np.array([1]), np.array([2])))
    assert got == pytest.approx([2.0 + 0.35], abs=1e-12)


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
    assert set(feats) == set(FEATURES)  # no phonemizer: the text terms only
