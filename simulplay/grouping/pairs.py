"""Condition pairs ``FROM,TO``: the one parser behind ``eta --contrast``, ``edges --pair``,
``content --pairs`` and the pairs of an experiment file.

A RULE string may hold commas itself (``punct:cap=2,min_words=3``), so the pair is cut at
the comma where both sides parse as rule strings (the first such comma); a text with no
such cut but exactly one comma is two condition names (a manifest may label conditions
freely, e.g. ``logged``). Both sides come back canonical (:func:`canonical_condition`:
``punct`` → ``punct:cap=2,min_words=3``; a name that is no rule is kept as written).
"""

from __future__ import annotations

from simulplay.core.errors import InputError
from simulplay.grouping.registry import canonical_condition, parse_rule

PAIR_ACCEPTED = ("FROM,TO with rule strings (e.g. immediate,timer:w=4 or punct:cap=2,min_words=3,timer:w=2) "
                 "or two condition names without commas")


def is_rule(text: str) -> bool:
    """Whether ``text`` is a RULE string (a registered rule with valid parameters)."""
    try:
        parse_rule(text)
    except InputError:
        return False
    return True


def parse_pair(text: str, source: str = "--pairs") -> tuple[str, str]:
    """``immediate,timer:w=4`` → the two canonical conditions; errors name ``source`` (the
    flag or experiment key) and the text."""
    cuts = [i for i, ch in enumerate(text) if ch == ","]
    candidates = [(text[:i].strip(), text[i + 1:].strip()) for i in cuts]
    candidates = [(p, q) for p, q in candidates if p and q]
    for p, q in candidates:
        if is_rule(p) and is_rule(q):
            return canonical_condition(p), canonical_condition(q)
    if len(cuts) == 1 and len(candidates) == 1:
        p, q = candidates[0]
        return canonical_condition(p), canonical_condition(q)
    raise InputError.at(f"{source} '{text}'", "is not two conditions", accepted=PAIR_ACCEPTED)
