"""Sentence ends and counting units across languages (docs/formats.md#grouping-rules).

Expected groups are worked out by hand in the comments; the closing-mark set is checked
against ``unicodedata.category`` (the defining tool) over all of Unicode, and the rules
against an independent regex oracle built in this file.
"""

import re
import sys
import unicodedata

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulplay.core.errors import InputError
from simulplay.grouping import parse_rule, unique_rules
from simulplay.traces.model import char_count, ends_terminal, frame_from_streams, join_texts, word_count
from simulplay.traces.validate import stream_stats
from tests.support.factories import groups, stream

NBSP, NNBSP = "\u00a0", "\u202f"
# The documented terminators, written as code points so that the test does not share a
# literal with the code: . ? ! … 。 ？ ！ ؟ ।
TERMINATORS = "\u002e\u003f\u0021\u2026\u3002\uff1f\uff01\u061f\u0964"



def glued(times, texts):
    """A stream written without spaces (Chinese, Japanese): every update after the first is glued."""
    return stream(times, texts, glue=[False] + [True] * (len(texts) - 1))


# ---- the oracle: a regex built here from unicodedata over all of Unicode ------------------

def _closing_chars() -> list[str]:
    cats = {"Pe", "Pf", "Pi"}
    return ["'", '"'] + [chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) in cats]


CLOSERS = _closing_chars()
ORACLE = re.compile("[" + re.escape(TERMINATORS) + "][" + "".join(map(re.escape, CLOSERS)) + r"\s]*\Z")


def oracle_ends(text: str) -> bool:
    return ORACLE.search(text) is not None


def test_the_closing_set_is_quotes_and_categories_pe_pf_pi():
    # Hand-checked members from the Unicode character names: German closes with “ (U+201C,
    # LEFT DOUBLE QUOTATION MARK, Pi) and ‘ (U+2018, Pi); » is Pf, « is Pi; 」 and ） are Pe.
    for ch in "“‘»«”’)]}」』）":
        assert ch in CLOSERS
    # Openers are Ps and never close: „ (U+201E) and ‚ (U+201A) are Ps, as are ( 「 ¿ is Po.
    for ch in "„‚(「[¿¡":
        assert ch not in CLOSERS
    assert len(CLOSERS) == len(set(CLOSERS))


def test_terminator_then_any_single_character_agrees_with_unicodedata_everywhere():
    """For every code point c: "x." + c ends a sentence iff c is a straight quote, a Pe/Pf/Pi
    character, whitespace or a terminator itself; "x" + c iff c is a terminator."""
    closing = set(CLOSERS)
    wrong_after, wrong_alone = [], []
    for code in range(sys.maxunicode + 1):
        c = chr(code)
        if ends_terminal("x." + c) != (c in closing or c.isspace() or c in TERMINATORS):
            wrong_after.append(f"U+{code:04X}")
        if ends_terminal("x" + c) != (c in TERMINATORS):
            wrong_alone.append(f"U+{code:04X}")
    assert not wrong_after, wrong_after[:20]
    assert not wrong_alone, wrong_alone[:20]


# ---- ends_terminal: hand cases ------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "Er sagte: „Nein.“",          # German: closes with “ (Pi)
    "Er sagte: ‚gut.‘",           # German single: closes with ‘ (Pi)
    "Sie rief »Ja.«",             # German guillemets: closes with « (Pi)
    "Il a dit «\u00a0Oui.\u00a0»",  # French with NBSP inside the guillemets
    "Il a dit «\u202fOui.\u202f»",  # … and with NNBSP
    "Il a dit « Oui. »",          # … and with plain spaces
    "C'est vrai\u202f?",          # French thin space before ?
    "¿Vienes mañana?",            # Spanish
    "¡Qué bien!",
    "我们今天讨论这个问题。",         # Chinese full stop
    "真的吗？", "太好了！",           # full-width ? and !
    "「そうです。」",                 # Japanese: 」 is Pe
    "هل أنت بخير؟",               # Arabic question mark
    "यह अच्छा है।",                # Devanagari danda
    "and so.»)",                  # nested closers
    "and so. » ) ",               # spaces between closers and at the end
    "Hmm…", "Wirklich?!", 'he said."', "it's 'done.'", "end. ",
    "Wir sehen z.B.",             # an abbreviation at the end fires (only the end counts)
])
def test_sentence_ends_that_fire(text):
    assert ends_terminal(text) and oracle_ends(text)


@pytest.mark.parametrize("text", [
    "3.5", "Preis 3.5",           # a terminator followed by a digit
    "z.B. das",                   # an abbreviation inside the text
    "Er sagte: „Nein.„",          # „ is an opener (Ps), not a closer
    "Y dijo ¿",                   # Spanish opening ¿ is not a terminator
    "彼は「はい。」と",               # Japanese: the quotation continues with と
    "你好，", "好。、",               # ， and 、 are not terminators
    "done.-", "done.*", "done.:", "yes. a", "so.»x",
    "»", "  ", "", "hello",
])
def test_endings_that_do_not_fire(text):
    assert not ends_terminal(text) and not oracle_ends(text)


_alphabet = st.sampled_from(list(TERMINATORS) + list("„“‘‚»«”’()「」[]¿¡'\"ab3Zé好は ,:-")
                            + [NBSP, NNBSP, "\t", "\u200b"])


@settings(max_examples=2000, deadline=None)
@given(st.text(alphabet=_alphabet, max_size=12))
def test_ends_terminal_agrees_with_the_regex_oracle(text):
    assert ends_terminal(text) == oracle_ends(text)


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=20), st.sampled_from(TERMINATORS),
       st.lists(st.sampled_from(CLOSERS + [" ", NBSP, NNBSP, "\n"]), max_size=6),
       st.characters(blacklist_categories=("Pe", "Pf", "Pi", "Zs", "Zl", "Zp", "Cc", "Cs")))
def test_a_terminator_with_any_closing_run_fires_and_any_other_character_after_it_does_not(
        prefix, term, run, after):
    text = prefix + term + "".join(run)
    assert ends_terminal(text)
    if after not in "'\"" and after not in TERMINATORS and not after.isspace():
        assert not ends_terminal(text + after)


# ---- counting units -----------------------------------------------------------------------

@pytest.mark.parametrize("text,n", [
    ("你好，世界。", 4),              # 你 好 世 界; ， and 。 are punctuation
    ("東京は3時です。", 7),          # 東 京 は 3 時 で す
    ("สวัสดีครับ", 7),               # ส ว ส ด ค ร บ; the vowel signs ั ี ั are Mn (combining)
    ("e\u0301té", 3),                # e + combining acute (Mn) + t + é
    ("１２ Ⅻ ½", 4),                 # full-width digits (Nd), Roman twelve (Nl), one half (No)
    ("« Oui. »", 3),
    ("", 0), ("!?…", 0),
])
def test_char_count_counts_letters_and_digits(text, n):
    assert char_count(text) == n


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=30), st.text(max_size=30))
def test_char_count_is_additive_and_agrees_with_unicodedata(a, b):
    assert char_count(a + b) == char_count(a) + char_count(b)
    assert char_count(a) == len([c for c in a if unicodedata.category(c) in
                                 {"Lu", "Ll", "Lt", "Lm", "Lo", "Nd", "Nl", "No"}])


def test_whitespace_words_split_on_nbsp_and_nnbsp():
    assert word_count("Il a dit «\u00a0Oui.\u202f»") == 6  # Il a dit « Oui. »


# ---- the rules, by hand -------------------------------------------------------------------

def test_german_closing_quote_fires_punct():
    s = stream([0, 0.5, 1.0, 1.5, 9], ["Er sagte:", "„Nein.“", "Dann ging", "er.", "Später"])
    # 0.5: "Er sagte: „Nein.“" has 3 words and ends in .“ → punct at 0.5
    # 1.5: "Dann ging er." → punct; 9: "Später" is the last update → eos
    assert groups("punct", s) == [(0, 1, 0.5, "punct"), (2, 3, 1.5, "punct"), (4, 4, 9.0, "eos")]


def test_german_guillemets_and_single_quotes_fire_punct():
    s = stream([0, 0.4, 1.0, 1.2, 9], ["Sie rief", "»Ja.«", "Er meinte", "‚gut.‘", "weiter"])
    assert groups("punct", s) == [(0, 1, 0.4, "punct"), (2, 3, 1.2, "punct"), (4, 4, 9.0, "eos")]


@pytest.mark.parametrize("space", [" ", NBSP, NNBSP])
def test_french_guillemets_with_any_space_fire_punct(space):
    s = stream([0, 0.5, 0.7, 9], ["Il a dit", f"«{space}Oui.", "»", "Puis"])
    # 0.5: "… «␣Oui." ends in . → punct at 0.5 with updates 0–1; the lone » follows alone
    # and "» Puis" never ends: 0.7 starts a cap deadline 2.7 < 9 → timer at 2.7; "Puis" → eos
    assert groups("punct", s) == [(0, 1, 0.5, "punct"), (2, 2, 2.7, "timer"), (3, 3, 9.0, "eos")]
    s = stream([0, 0.5, 9], ["Il a dit", f"«{space}Oui.{space}»", "Puis"])
    assert groups("punct", s) == [(0, 1, 0.5, "punct"), (2, 2, 9.0, "eos")]


def test_spanish_inverted_marks():
    s = stream([0, 0.5, 1.0, 1.3, 9], ["Y dijo ¿", "vienes mañana?", "¡Qué", "bien!", "Sí"])
    # 0: "Y dijo ¿" does not end; 0.5: "Y dijo ¿ vienes mañana?" (5 words) → punct
    # 1.3: "¡Qué bien!" has 2 words < 3; the cap deadline 1.0 + 2 = 3.0 fires before 9
    assert groups("punct", s) == [(0, 1, 0.5, "punct"), (2, 3, 3.0, "timer"), (4, 4, 9.0, "eos")]


def test_a_terminator_inside_a_number_or_before_a_word_does_not_fire():
    s = stream([0, 0.5, 1.0, 9], ["Der Preis", "ist 3.5", "z.B. das", "Ende."])
    # no pending text ends in a terminator before the cap at 0 + 2 = 2.0 → timer;
    # "Ende." at 9 is the last update and has one word → eos
    assert groups("punct", s) == [(0, 2, 2.0, "timer"), (3, 3, 9.0, "eos")]


def test_an_abbreviation_at_the_end_of_the_pending_text_fires():
    s = stream([0, 0.5, 9], ["Wir sehen", "z.B.", "das"])
    assert groups("punct", s) == [(0, 1, 0.5, "punct"), (2, 2, 9.0, "eos")]


def test_chinese_sentence_ends_with_char_units():
    s = glued([0, 0.5, 1.0, 1.2, 9], ["我们今天", "讨论这个问题。", "好", "。", "然后"])
    # unit=char: 0.5: "我们今天讨论这个问题。" has 10 characters ≥ 3 and ends in 。 → punct;
    # 1.2: "好。" has 1 character < 3, cap 1.0 + 2 = 3.0 fires before 9 → timer; "然后" → eos
    assert groups("punct:unit=char", s) == [(0, 1, 0.5, "punct"), (2, 3, 3.0, "timer"), (4, 4, 9.0, "eos")]
    # unit=word: the glued text is one whitespace word < 3, so only the cap 0 + 2 fires
    assert groups("punct", s) == [(0, 3, 2.0, "timer"), (4, 4, 9.0, "eos")]


def test_full_width_question_and_exclamation_marks():
    s = glued([0, 0.3, 0.6, 9], ["真的", "吗？", "太好了！", "嗯"])
    # 0.3: "真的吗？" 3 characters → punct; 0.6: "太好了！" 3 characters → punct
    assert groups("punct:unit=char", s) == [(0, 1, 0.3, "punct"), (2, 2, 0.6, "punct"), (3, 3, 9.0, "eos")]


def test_japanese_closing_bracket_fires_and_a_continued_quotation_does_not():
    s = glued([0, 0.3, 9], ["「そうです", "。」", "次"])
    # 0.3: "「そうです。」" ends in 。」 (」 is Pe) with 4 characters → punct
    assert groups("punct:unit=char", s) == [(0, 1, 0.3, "punct"), (2, 2, 9.0, "eos")]
    s = glued([0, 1.0, 9], ["彼は「はい。」と", "言いました。", "次"])
    # 0: ends in と → waits; 1.0: "彼は「はい。」と言いました。" → punct
    assert groups("punct:unit=char", s) == [(0, 1, 1.0, "punct"), (2, 2, 9.0, "eos")]


def test_char_units_change_what_min_words_counts():
    s = glued([0, 0.5, 9], ["はい", "。", "次"])
    # "はい。" has 2 characters: min_words=3 waits for the cap (0 + 2), min_words=2 fires at 0.5
    assert groups("punct:unit=char", s)[0] == (0, 1, 2.0, "timer")
    assert groups("punct:unit=char,min_words=2", s)[0] == (0, 1, 0.5, "punct")


def test_words_rule_with_char_units():
    s = glued([0, 0.5, 1.0, 1.5, 9], ["你好", "，世界", "和平", "万岁！", "啊"])
    # n=5 characters: 0: 2; 0.5: 4 (， does not count); 1.0: 6 ≥ 5 → words at 1.0
    # 1.5: "万岁！" 2 < 5; the cap 1.5 + 2 = 3.5 fires before 9; "啊" → eos
    assert groups("words:n=5,unit=char", s) == [(0, 2, 1.0, "words"), (3, 3, 3.5, "timer"), (4, 4, 9.0, "eos")]
    # whitespace words: the glued stream is one word, so only the cap fires
    assert groups("words:n=5", s) == [(0, 3, 2.0, "timer"), (4, 4, 9.0, "eos")]


def test_thai_counts_letters_not_vowel_signs():
    s = glued([0, 0.5, 9], ["สวัส", "ดีครับ", "ค่ะ"])
    # "สวัส" has 3 letters (ส ว ส; ั is a combining sign); with "ดีครับ" (ด ค ร บ) 7 ≥ 7 → words
    assert groups("words:n=7,unit=char", s)[0] == (0, 1, 0.5, "words")
    assert groups("words:n=8,unit=char", s)[0] == (0, 1, 2.0, "timer")


# ---- rule strings -------------------------------------------------------------------------

def test_default_rule_strings_are_unchanged_and_char_units_are_named():
    assert parse_rule("punct").canonical() == "punct:cap=2,min_words=3"
    assert parse_rule("words").canonical() == "words:n=8,cap=2"
    assert parse_rule("punct:unit=word").canonical() == "punct:cap=2,min_words=3"
    assert parse_rule("punct:unit=char").canonical() == "punct:cap=2,min_words=3,unit=char"
    assert parse_rule("words:n=20,unit=char").canonical() == "words:n=20,cap=2,unit=char"
    assert parse_rule(parse_rule("words:unit=char,n=20").canonical()) == parse_rule("words:n=20,unit=char")


def test_to_dict_always_carries_the_unit():
    assert parse_rule("punct").to_dict() == {"rule": "punct", "cap": 2.0, "min_words": 3, "unit": "word"}
    assert parse_rule("words:n=20,unit=char").to_dict() == {"rule": "words", "n": 20, "cap": 2.0, "unit": "char"}


def test_the_default_unit_spelled_out_is_the_same_rule():
    with pytest.raises(InputError, match="is given twice"):
        unique_rules([parse_rule("punct"), parse_rule("punct:unit=word")])
    assert len(unique_rules([parse_rule("punct"), parse_rule("punct:unit=char")])) == 2


@pytest.mark.parametrize("bad", ["punct:unit=foo", "words:n=20,unit=chars", "punct:unit=CHAR"])
def test_an_unknown_unit_is_refused_naming_the_accepted_values(bad):
    with pytest.raises(InputError) as e:
        parse_rule(bad)
    msg = str(e.value)
    assert "\n" not in msg and f"--rule '{bad}'" in msg and "unit=word or unit=char" in msg


def test_a_unit_given_in_code_is_checked_too():
    from simulplay.grouping.rules import Punct, Words

    with pytest.raises(ValueError, match="unit must be one of word, char"):
        Punct(unit="letters")
    with pytest.raises(ValueError, match="unit must be one of word, char"):
        Words(unit="")


# ---- validate uses the same definition ----------------------------------------------------

def test_validate_share_of_terminal_updates_uses_the_punct_definition():
    texts = ["Er sagte", "„Nein.“", "»Ja.«", "3.5", "«\u00a0Oui.\u00a0»", "好。", "「はい。」と", "¿Qué?"]
    df = frame_from_streams([stream(np.arange(len(texts)), texts)])
    stats = stream_stats(df)
    # ends: „Nein.“ »Ja.« « Oui. » 好。 ¿Qué? → 5 of 8 updates
    assert stats["pct_terminal_punct"].iloc[0] == pytest.approx(100 * 5 / 8)


# ---- properties over streams --------------------------------------------------------------

def _content(rule):
    def count(text):
        return char_count(text) if rule.unit == "char" else word_count(text)

    if rule.name == "punct":
        return lambda text: oracle_ends(text) and count(text) >= rule.min_words
    return lambda text: count(text) >= rule.n


_pieces = st.text(alphabet=st.sampled_from(list("我好。！？」「ab. ?»“„") + [NBSP]), min_size=1, max_size=5)


@st.composite
def cjk_streams(draw):
    n = draw(st.integers(1, 20))
    gaps = draw(st.lists(st.sampled_from([0.0, 0.3, 1.0, 2.0, 2.5]), min_size=n, max_size=n))
    texts = draw(st.lists(_pieces.filter(lambda t: t.strip()), min_size=n, max_size=n))
    glue = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    return stream(np.cumsum(gaps), texts, glue)


@settings(max_examples=400, deadline=None)
@given(cjk_streams(), st.sampled_from(["punct", "punct:unit=char", "punct:unit=char,min_words=1",
                                       "words:n=3,unit=char", "words:n=2", "punct:unit=char,min_words=0"]))
@pytest.mark.slow
def test_content_triggers_fire_at_the_first_instant_their_condition_holds(s, spec):
    """A content-triggered group's text meets the condition (checked with the oracle);
    no earlier instant inside any group met it; timer and eos groups never meet it."""
    rule = parse_rule(spec)
    content = _content(rule)
    for g in rule.group(s):
        full = join_texts(s.texts[g.first:g.last + 1], s.glue[g.first:g.last + 1])
        assert content(full) == (g.trigger in ("punct", "words")), (g, full)
        for j in range(g.first, g.last):
            if s.times[j] != s.times[j + 1]:  # the end of an earlier instant
                assert not content(join_texts(s.texts[g.first:j + 1], s.glue[g.first:j + 1]))


def test_trace_frames_keep_language_text_exactly():
    texts = ["„Nein.“", "«\u202fOui.\u202f»", "好。"]
    df = frame_from_streams([stream([0, 1, 2], texts)])
    assert list(df["text"]) == texts and isinstance(df, pd.DataFrame)


# ---- the command line -----------------------------------------------------------------------

def test_group_command_takes_char_units_and_names_them_in_conditions(cli, tmp_path):
    zh = glued([0, 0.5, 1.0], ["我们今天", "讨论这个问题。", "然后"])
    de = stream([0, 0.5, 9], ["Er sagte:", "„Nein.“", "Später"], talk_id="t2")
    trace = tmp_path / "trace.csv"
    frame_from_streams([zh, de]).to_csv(trace, index=False)
    out = tmp_path / "requests.csv"
    cli("group", trace, "--rule", "punct", "--rule", "punct:unit=char", "--out", out, check=True)
    req = pd.read_csv(out)
    got = {(c, t): list(g["trigger"]) for (c, t), g in req.groupby(["condition", "talk_id"], sort=False)}
    # by hand: German „Nein.“ fires punct under both units (3 words; 11 letters); the Chinese
    # sentence is one whitespace word (the cap at 2 never comes: eos at 1.0) but 10 characters
    assert got == {("punct:cap=2,min_words=3", "t1"): ["eos"],
                   ("punct:cap=2,min_words=3", "t2"): ["punct", "eos"],
                   ("punct:cap=2,min_words=3,unit=char", "t1"): ["punct", "eos"],
                   ("punct:cap=2,min_words=3,unit=char", "t2"): ["punct", "eos"]}


def test_group_command_refuses_an_unknown_unit_in_one_line(cli, tmp_path):
    trace = tmp_path / "trace.csv"
    frame_from_streams([stream([0, 1], ["a.", "b"])]).to_csv(trace, index=False)
    proc = cli("group", trace, "--rule", "words:n=20,unit=foo", "--out", tmp_path / "r.csv")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "--rule 'words:n=20,unit=foo'" in lines[0] and "unit=word or unit=char" in lines[0]
    assert not (tmp_path / "r.csv").exists()
    assert "unit=char" in " ".join(cli("group", "--help").stdout.split())
