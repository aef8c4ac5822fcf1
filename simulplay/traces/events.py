"""Non-speech event tags in translator output: ``(Applaus)``, ``(Gelächter)``,
``(Laughter)``, ``[Music]``, ``（笑声）``.

Real logs carry them as words (a subtitle convention the translators learned), and a voice
reads them aloud, so they set when the listener hears the end. A tag is a bracketed phrase
of one to three words:

* in round or full-width brackets, every word one of :data:`EVENT_WORDS` (in any case;
  ``und``/``and``/``y``/``et`` may join them): ``(Applaus)``, ``(Applaus und Jubel)``;
  a parenthetical remark such as ``(siehe oben)`` or ``(Deutschland)`` is not a tag;
* in square brackets, any capitalized words (captioning tools' ``[Music]``, ``[Inaudible]``)
  or words of :data:`EVENT_WORDS`.

Tags are found in a stream's joined text, so a tag whose pieces arrive in two updates
(``… (App`` then ``laus) Und``) is one tag. :func:`event_counts` counts them; under
``drop`` :func:`drop_events` removes them from the text before grouping, an update left
empty is skipped (as a part without audio is), and the word boundary a tag stood on is
kept (the next update gets no glue).
"""

from __future__ import annotations

import re
import warnings
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from simulplay.core.errors import InputError, SimulplayWarning
from simulplay.traces.model import Stream

#: What ``--events`` accepts: ``keep`` (speak them, the default) or ``drop``.
EVENT_MODES = ("keep", "drop")
#: Words that name a non-speech event (lower case), in the languages of public logs.
EVENT_WORDS = frozenset("""
applaus applause beifall jubel gelächter lachen laughter laughs laughing music musik video cheers cheering
silence stille noise lärm geräusch inaudible unverständlich crosstalk singing gesang
aplausos risas música musica rires applaudissements musique
笑声 掌声 音乐 鼓掌 笑
""".split())
_JOINERS = frozenset({"und", "and", "y", "et", "e", "und,"})
_PAIRS = {"(": ")", "[": "]", "（": "）", "【": "】"}
#: Punctuation that attaches to the word before it (kept attached when a tag between is removed).
ATTACH = ",.;:!?…)]”“»。，！？"
_ATTACHED = re.compile(r"\s+([,.;:!?…。，！？])")
_TAG = re.compile(r"([(\[（【])\s*([^\W\d_][^()\[\]（）【】\d\n]{0,40}?)\s*([)\]）】])")


def is_event(opening: str, inner: str, closing: str) -> bool:
    """Whether a bracketed phrase is a non-speech event tag (module docstring)."""
    if _PAIRS.get(opening) != closing:
        return False
    words = inner.split()
    if not 1 <= len(words) <= 3:
        return False
    named = [w for w in words if w.lower() not in _JOINERS]
    if named and all(w.lower() in EVENT_WORDS for w in named):
        return True
    return opening == "[" and all(w[:1].isupper() for w in named)


def find_events(text: str) -> list[tuple[int, int, str]]:
    """The event tags of ``text``: ``(start, end, tag)`` with the tag as written."""
    return [(m.start(), m.end(), m.group(0)) for m in _TAG.finditer(text) if is_event(*m.groups())]


def _offsets(stream: Stream) -> tuple[str, list[int]]:
    """The stream's joined text and where each update's text starts in it."""
    starts, pos = [], 0
    for i, (t, g) in enumerate(zip(stream.texts, stream.glue)):
        pos += 1 if i and not g else 0
        starts.append(pos)
        pos += len(t)
    return stream.joined, starts


@dataclass
class EventCounts:
    """Event tags found in some streams: per tag as written, the updates holding (part of)
    one, the updates in all, and the talks with one."""

    tags: Counter = field(default_factory=Counter)
    updates_with: int = 0
    updates: int = 0
    talks: set[str] = field(default_factory=set)
    all_talks: set[str] = field(default_factory=set)

    @property
    def n_tags(self) -> int:
        """Event tags counted in all updates (an update may hold several)."""
        return sum(self.tags.values())

    def line(self) -> str:
        """``275 of 13,461 updates in 24 of 27 talks hold a non-speech event tag: (Gelächter) 129, …``."""
        shown = ", ".join(f"{t} {n}" for t, n in self.tags.most_common(4))
        more = f", … {len(self.tags) - 4} more" if len(self.tags) > 4 else ""
        return (f"{self.updates_with:,} of {self.updates:,} updates in {len(self.talks)} of {len(self.all_talks)} "
                f"talk(s) hold a non-speech event tag ({self.n_tags:,}: {shown}{more})")


def _stream_spans(stream: Stream) -> tuple[list[tuple[int, int, str]], list[int]]:
    text, starts = _offsets(stream)
    return (find_events(text) if stream.retract is None else find_events(stream.joined)), starts


def event_counts(streams: Iterable[Stream]) -> EventCounts:
    """The event tags of ``streams`` (a revising stream: of its final hypothesis)."""
    out = EventCounts()
    for s in streams:
        spans, starts = _stream_spans(s)
        out.updates += len(s)
        out.all_talks.add(s.talk_id)
        if not spans:
            continue
        out.talks.add(s.talk_id)
        out.tags.update(tag for _, _, tag in spans)
        if s.retract is None:
            ends = [a + len(t) for a, t in zip(starts, s.texts)]
            out.updates_with += sum(any(a < e and b > lo for a, b, _ in spans) for lo, e in zip(starts, ends))
    return out


def stream_event_stats(stream: Stream) -> dict[str, int]:
    """``event_tags`` and ``event_updates`` of one stream (the statistics tables' columns)."""
    c = event_counts([stream])
    return {"event_tags": c.n_tags, "event_updates": c.updates_with}


def drop_events(stream: Stream) -> Stream:
    """``stream`` with its event tags removed; updates left empty are skipped and the word
    boundary a tag stood on is kept. A stream of nothing but tags is an InputError."""
    spans, starts = _stream_spans(stream)
    if not spans:
        return stream
    if stream.retract is not None:
        raise InputError.at("--events drop", f"stream (talk_id={stream.talk_id}, system={stream.system}) revises "
                            "its output, and tags are dropped from append-only text only",
                            accepted="--events keep with a revising trace, or import it with --retractions final")
    text = stream.joined
    removed = np.zeros(len(text), bool)
    for a, b, _ in spans:
        removed[a:b] = True
    texts, keep, glue, last = [], [], [], None
    for i, (start, own) in enumerate(zip(starts, stream.texts)):
        kept = [start + k for k, ch in enumerate(own) if not removed[start + k] and not ch.isspace()]
        if not kept:
            continue
        new = " ".join("".join(ch for k, ch in enumerate(own) if not removed[start + k]).split())
        if removed[start:start + len(own)].any():
            new = _ATTACHED.sub(r"\1", new)  # "so (Applaus)." → "so."
        texts.append(new)
        keep.append(i)
        # glued when adjacent in the text (nothing came between), or punctuation that attached to a removed tag
        glue.append(last is not None and (kept[0] == last + 1 or (bool(stream.glue[i]) and text[kept[0]] in ATTACH)))
        last = kept[-1]
    if not texts:
        raise InputError.at("trace", f"stream (talk_id={stream.talk_id}, system={stream.system}) holds only "
                            "non-speech event tags", accepted="--events keep, or a trace with words to speak")
    return replace(stream, times=stream.times[keep], texts=tuple(texts), glue=np.asarray(glue, bool))


def check_events_mode(mode: str, flag: str = "--events") -> str:
    """``mode`` when it is one of :data:`EVENT_MODES`, else an InputError naming ``flag``."""
    if mode not in EVENT_MODES:
        raise InputError.at(flag, f"unknown value '{mode}'", accepted=" or ".join(EVENT_MODES))
    return mode


def apply_events(streams: Sequence[Stream], mode: str, *, flag: str = "--events") -> tuple[list[Stream], dict]:
    """The streams under ``mode`` (``keep``: as they are, with one warning naming the counts
    when tags are present; ``drop``: tags removed) and the signature fields to record:
    ``{"events": mode}`` when the streams hold tags, nothing otherwise."""
    check_events_mode(mode, flag)
    counts = event_counts(streams)
    if not counts.n_tags:
        return list(streams), {}
    if mode == "keep":
        warnings.warn(f"{counts.line()}; the voice speaks them: pass {flag} drop to remove them before grouping",
                      SimulplayWarning, stacklevel=2)
        return list(streams), {"events": "keep"}
    return [drop_events(s) for s in streams], {"events": "drop"}
